"""Data the pages render but nothing computes: cited results from papers (one module
per source, each carrying its citation) and the committed benchmark results
(``bench/*.json``, written by ``make bench``)."""
