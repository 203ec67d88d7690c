"""mkdocs hook: no build while published data contradicts its source.

Every model of ``mha.data.published`` must add up, part by part, to the total its
source states (``mha.data.totals.contradictions``); a contradiction stops the build
before any page is rendered, naming the model's row.
"""

import importlib

from mkdocs.exceptions import PluginError


def on_pre_build(config, **kwargs):
    """Refuse to build while a published model's parts contradict its stated total."""
    found = importlib.import_module("mha.data.totals").contradictions()
    if found:
        raise PluginError(
            "published data contradicts its source (src/mha/data/published.py, "
            "counted by mha.data.totals):\n" + "\n".join(f"  {f}" for f in found)
        )
