"""Inputs and numpy reference output of attention.onnxtxt's Attention.

The steps of ONNX's reference (onnx/reference/ops/op_attention.py) for 3-D
inputs, grouped-query heads, a boolean mask and is_causal.
Usage: attention_reference.py PREFIX  (writes PREFIX.<name>.npy)
"""
import sys

import numpy as np

prefix = sys.argv[1]
rng = np.random.default_rng(0)
batch, queries, keys, heads, kv_heads, size, value_size = 2, 3, 5, 4, 2, 4, 6
q = rng.standard_normal((batch, queries, heads * size)).astype(np.float32)
k = rng.standard_normal((batch, keys, kv_heads * size)).astype(np.float32)
v = rng.standard_normal((batch, keys, kv_heads * value_size)).astype(np.float32)
mask = rng.random((queries, keys)) > 0.3
mask[:, 0] = True  # every row keeps a key the causal triangle leaves


def split(x, h):
    b, s, hidden = x.shape
    return x.reshape(b, s, h, hidden // h).transpose(0, 2, 1, 3)


qh = split(q, heads)
kh = np.repeat(split(k, kv_heads), heads // kv_heads, axis=1)
vh = np.repeat(split(v, kv_heads), heads // kv_heads, axis=1)
bias = np.where(mask, 0.0, -np.inf) + np.triu(
    np.full((queries, keys), -np.inf), k=1)
scores = qh.astype(np.float64) @ kh.transpose(0, 1, 3, 2) / np.sqrt(size) + bias
scores = np.exp(scores - scores.max(-1, keepdims=True))
p = scores / scores.sum(-1, keepdims=True)
y = (p @ vh).transpose(0, 2, 1, 3).reshape(batch, queries, heads * value_size)
for name, value in dict(q=q, k=k, v=v, mask=mask, y=y.astype(np.float32)).items():
    np.save(f"{prefix}.{name}.npy", value)
