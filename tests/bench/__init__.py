"""Benchmarks run by `make bench`, never by `make test`.

Each module here has ``run() -> dict``. ``python -m tests.bench [name ...]`` runs them
(all by default), prints each result and writes it to
``src/mha/data/bench/<name>.json``, a committed data file that pages render. A build
never times anything: it only reads these files.
"""
