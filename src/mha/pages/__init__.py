"""One module per page: ``mha.pages.<page>`` computes what ``docs/<page>.md`` prints.

A page's name maps to its module with ``-`` written ``_`` (``docs/kv-cache.md`` is
``mha.pages.kv_cache``); its figures are drawn by ``mha.figures.<page>``. Code that
several pages share lives in ``mha.worked``, ``mha.experiments`` and ``mha.pretrained``.
"""
