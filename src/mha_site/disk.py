"""The build's own caches on a read-only or full disk: the cache is lost, not the build.

The results cache (``mha.support.cache``) computes and says once that it cannot
store; the caches of the build's glue do the same here: the theme's compiled templates
(``.cache/jinja``, ``docs/_glue/templates.py``), the API reference's formatted
signatures (``.cache/signatures``, ``docs/_glue/signatures.py``) and the executed
notebooks (``docs/_glue/hooks.py``). A write that fails (``OSError``: a read-only
folder, a full disk, a path under a file) leaves no part of a file, prints one line per
folder on stderr (not the build's log, which ``--strict`` would turn into a failure)
and the build goes on; the next build computes again what was not kept.

```python
import tempfile
from pathlib import Path
from mha_site.disk import keep

with tempfile.TemporaryDirectory() as folder:
    under_a_file = Path(folder) / "file"
    under_a_file.write_text("not a folder")
    assert keep(Path(folder) / "cache" / "a", "text", "signatures")
    assert not keep(under_a_file / "a", "text", "signatures")  # said once, on stderr
```
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

from jinja2 import FileSystemBytecodeCache
from jinja2.bccache import Bucket

_SAID: set[str] = set()


def cannot_keep(folder: Path, what: str, error: OSError) -> None:
    """Say once per folder that ``what`` is not kept there, why, and what to do.

    ```python
    from pathlib import Path
    from mha_site.disk import cannot_keep

    cannot_keep(Path("/nowhere"), "compiled templates", OSError(28, "No space left"))
    ```
    """
    if str(folder) in _SAID:
        return
    _SAID.add(str(folder))
    print(
        f"[mha] cannot keep {what} in {folder} ({error.strerror or error}): the build "
        "goes on without them and the next build makes them again; free space there "
        "or make the folder writable",
        file=sys.stderr,
        flush=True,
    )


def keep(path: Path, data: str | bytes, what: str) -> bool:
    """Write ``data`` to ``path`` whole or not at all; False (and one line on stderr,
    ``cannot_keep``) if the disk refuses.

    ```python
    import tempfile
    from pathlib import Path
    from mha_site.disk import keep

    with tempfile.TemporaryDirectory() as folder:
        assert keep(Path(folder) / "x" / "a.txt", b"bytes", "notebooks")
        assert (Path(folder) / "x" / "a.txt").read_bytes() == b"bytes"
    ```
    """
    written = path.with_name(f"{path.name}.{os.getpid()}")  # two builds at once
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            written.write_bytes(data)
        else:
            written.write_text(data, encoding="utf-8")
        written.replace(path)
        return True
    except OSError as error:
        with contextlib.suppress(OSError):
            written.unlink(missing_ok=True)
        cannot_keep(path.parent, what, error)
        return False


def temporary(name: str, text: str) -> Path:
    """``text`` written as ``name`` in a temporary folder of this process, for a file
    the build must read back that its cache could not keep; if even that fails, an
    ``OSError`` whose one line says where the disk is full.

    ```python
    from mha_site.disk import temporary

    assert temporary("a.ipynb", "{}").read_text() == "{}"
    ```
    """
    if "folder" not in _TEMPORARY:
        _TEMPORARY["folder"] = Path(tempfile.mkdtemp(prefix="mha-build-"))
    path = _TEMPORARY["folder"] / name
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise OSError(
            error.errno,
            f"cannot write {name} in its cache nor in {path.parent} "
            f"({error.strerror}): free space on either disk",
        ) from None
    return path


_TEMPORARY: dict[str, Path] = {}


class BytecodeCache(FileSystemBytecodeCache):
    """Jinja's bytecode cache in a folder, where a folder that cannot be read or
    written costs the cache, not the build: a template is then compiled as if the
    cache were empty.

    ```python
    import tempfile
    from pathlib import Path
    from jinja2 import DictLoader, Environment
    from mha_site.disk import BytecodeCache

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "file").write_text("")
        env = Environment(loader=DictLoader({"t": "{{ 1 + 1 }}"}))
        env.bytecode_cache = BytecodeCache(Path(folder) / "file" / "jinja")
        assert env.get_template("t").render() == "2"
    ```
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            cannot_keep(self.folder, "compiled templates", error)
        super().__init__(str(self.folder))

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except OSError as error:
            cannot_keep(self.folder, "compiled templates", error)

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError as error:  # Jinja removes its temporary file first
            cannot_keep(self.folder, "compiled templates", error)
