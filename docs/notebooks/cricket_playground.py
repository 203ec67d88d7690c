# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Play with the cricket example
#
# The [cricket page](../../cricket/) follows the query of "his" over the keys of
# "Kohli", "his" and "century", once with one full-width head and once with two
# heads of half the width. Here you change the vectors and watch the heads respond.
# Every run goes through `mha.worked.cricket.solve`, the function the page uses.

# %%
import numpy as np
from IPython.display import HTML, display

from mha.figures import to_svg
from mha.figures.cricket import three_distributions
from mha.worked.cricket import Q_HIS, TOKENS, K, V, solve


def show(example, title):
    """Print each head's weights and outputs, and draw the three distributions."""
    print(title)
    for run in (example.full, example.head_a, example.head_b):
        weights = ", ".join(
            f"{t} {w:.3f}" for t, w in zip(TOKENS, run.weights, strict=True)
        )
        print(f"  {run.name:20} weights: {weights}   output: {run.output.round(3)}")
    svg = to_svg(
        three_distributions(example, TOKENS, "his"),
        f"Attention weights of his: {title}",
    )
    display(HTML(svg))


show(solve(), "the example as given")

# %% [markdown]
# ## Make "century" look like Kohli
#
# Head A only sees the first two columns (name and pronoun features). Give the key of
# "century" the same two coordinates as the key of "Kohli": head A now has two
# candidates, with equal weights, while head B, which cannot see those columns, does
# not move at all.

# %%
keys = K.copy()
keys[2, :2] = K[0, :2]  # "century" gets Kohli's name and pronoun features
changed = solve(k=keys)
show(changed, "century with Kohli's features")
kohli, century = changed.head_a.weights[0], changed.head_a.weights[2]
assert np.isclose(kohli, century)  # head A: two candidates, a tie
assert np.allclose(changed.head_b.weights, solve().head_b.weights)  # B is blind to it

# %% [markdown]
# ## Ask a different question
#
# Change the query instead: a "his" that asks only for topic features (its first two
# coordinates set to zero). Head A then has nothing to compare and spreads its weight
# evenly (the assertion below checks it); head B is unchanged.

# %%
query = Q_HIS.copy()
query[:2] = 0.0
topical = solve(q=query)
show(topical, "a query without coreference features")
assert np.allclose(topical.head_a.weights, 1 / len(TOKENS))

# %% [markdown]
# ## Your turn
#
# Edit the vectors below and run the cell: which head moves, and why? Values never
# change a weight, only the outputs.

# %%
q, k, v = Q_HIS.copy(), K.copy(), V.copy()
v[2] = [0.0, 0.0, 3.0, 0.0]  # try other values, keys or queries here
show(solve(q=q, k=k, v=v), "your vectors")
