"""One head or two? The cricket sentence: what the page says of the worked example.

Page: ``docs/cricket.md``. The numbers come from ``mha.worked.cricket``; this module
holds the page's claims, the sentences that compare those numbers.
"""

from __future__ import annotations

import numpy as np

from mha.support.claims import Claim
from mha.worked import cricket


def claims(example: cricket.Cricket | None = None) -> dict[str, Claim]:
    """The page's sentences about ``example`` (default: the page's own), checked.

    ```python
    import numpy as np
    from mha.pages.cricket import claims
    from mha.worked.cricket import solve

    assert all(c.holds for c in claims().values())
    other = solve(q=np.array([2.0, 1.0, 0.0, 1.0]))  # another query for "his"
    assert not claims(other)["tie"].holds
    ```
    """
    example = cricket.solve() if example is None else example
    full = example.full.weights  # "Kohli", "his", "century"
    tie = bool(np.isclose(full[0], full[1])) and full[2] < full[0]
    because = f"one head's weights on Kohli, his, century: {np.round(full, 3).tolist()}"
    return {
        "tie": Claim("but exactly as much to itself", tie, because),
        "tie_verdict": Claim("the distribution is a tie, not a decision", tie, because),
    }
