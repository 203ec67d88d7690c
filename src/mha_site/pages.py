"""Which module computes a page: ``docs/kv-cache.md`` is ``mha.pages.kv_cache``.

```python
from mha_site.pages import page_module

assert page_module("kv-cache.md") == "mha.pages.kv_cache"
assert page_module("reference/core.md") is None  # the API reference prints no page
assert page_module("notebooks/cricket_playground.py") is None
```
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def page_module(src_uri: str) -> str | None:
    """The module of ``docs/<src_uri>``'s page object, or None for a page without one."""
    if "/" in src_uri or not src_uri.endswith(".md"):
        return None  # the API reference and notebooks print no page object
    name = "mha.pages." + Path(src_uri).stem.replace("-", "_")
    return name if importlib.util.find_spec(name) is not None else None
