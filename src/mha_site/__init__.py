"""The site's own build tooling, apart from the ``mha`` library a reader installs.

- ``mha_site.facts``: the sentences of a page guarded by the facts they state;
- ``mha_site.drift``: the drift guard (no number typed by hand), with its allowlist;
- ``mha_site.bench``: sealing the results ``make bench`` writes.

The mkdocs glue (``docs/_glue/``) and the tests import it from ``src/``; it is not
part of the installed package (``pyproject.toml`` installs ``mha`` only).
"""
