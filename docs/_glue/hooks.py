"""mkdocs hooks: build-time files that belong in the site output, never in docs/.

Writing into docs/ would make `mkdocs serve` rebuild in a loop, so data for the
page widgets is written into the built site after each build. Thin: call the core.
"""

import importlib
from pathlib import Path


def on_post_build(config, **kwargs):
    """Write the widgets' JSON payloads into the site output."""
    explorer = importlib.import_module("mha.explorer")  # the heads explorer
    explorer.write(Path(config["site_dir"]) / explorer.SITE_PATH)
    kv_memory = importlib.import_module("mha.kv_memory")  # the KV-cache calculator
    kv_memory.write(Path(config["site_dir"]) / kv_memory.SITE_PATH)
