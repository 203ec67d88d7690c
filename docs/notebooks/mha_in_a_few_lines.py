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
# # Multi-head attention in a few lines
#
# A multi-head attention layer is five steps: **project** the tokens into queries,
# keys and values, **split** the width into heads, let each head **attend** with its
# own softmax, **concatenate** the heads, and **project** back with $W_O$. This
# notebook writes each step in plain NumPy, prints the shapes, and checks the result
# against `mha.MultiHeadAttention`, the layer every page of this site uses.
#
# The layer below is seeded, so every run prints the same numbers. Change `d_model`,
# `n_heads` or `seq` and run it again: the check at the end must still pass.

# %%
import numpy as np

import mha

rng = np.random.default_rng(0)
d_model, n_heads, seq = 8, 2, 5
layer = mha.MultiHeadAttention(d_model=d_model, n_heads=n_heads, rng=rng)
x = rng.normal(size=(1, seq, d_model))  # (batch, seq, d_model)
d_k = d_model // n_heads
print("x:", x.shape, " d_k =", d_k)

# %% [markdown]
# ## Project
#
# Three learned matrices turn each token into what it looks for (query), what it
# advertises (key) and what it hands over (value). Each is `d_model × d_model`.

# %%
q = x @ layer.w_q  # (batch, seq, d_model)
k = x @ layer.w_k
v = x @ layer.w_v
print("q, k, v:", q.shape)

# %% [markdown]
# ## Split
#
# Splitting is a reshape: cut each token's row into `n_heads` pieces of `d_k`, then
# move the head axis in front of the sequence axis. No new parameters.


# %%
def split(t):
    batch, seq, _ = t.shape
    return t.reshape(batch, seq, n_heads, d_k).transpose(0, 2, 1, 3)


qh, kh, vh = split(q), split(k), split(v)  # (batch, heads, seq, d_k)
print("one head's queries:", qh[:, 0].shape, " all heads:", qh.shape)

# %% [markdown]
# ## Attend
#
# Each head scores every key against every query, scales by $1/\sqrt{d_k}$, and
# turns each row of scores into a distribution with its **own** softmax.

# %%
scores = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(d_k)  # (batch, heads, seq, seq)
weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
weights /= weights.sum(axis=-1, keepdims=True)
heads = weights @ vh  # (batch, heads, seq, d_k)
print("weights:", weights.shape, " rows sum to one:", np.allclose(weights.sum(-1), 1))
print("first query's weights in each head:")
print(weights[0, :, 0].round(3))

# %% [markdown]
# ## Concatenate and project
#
# Put the heads side by side again (the inverse of the split), then mix them with
# $W_O$, the only place where the heads meet.

# %%
concat = heads.transpose(0, 2, 1, 3).reshape(1, seq, d_model)  # (batch, seq, d_model)
out = concat @ layer.w_o
print("out:", out.shape)

# %% [markdown]
# ## Checked against the core
#
# The same layer, called as a whole, must give the same output and the same weights.

# %%
out_core, weights_core = layer(x)
print("largest difference in the output: ", np.abs(out - out_core).max())
print("largest difference in the weights:", np.abs(weights - weights_core).max())
assert np.allclose(out, out_core) and np.allclose(weights, weights_core)
