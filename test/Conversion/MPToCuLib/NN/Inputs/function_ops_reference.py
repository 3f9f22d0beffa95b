"""Inputs and numpy reference outputs of function-ops.onnxtxt.

Usage: function_ops_reference.py PREFIX  (writes PREFIX.<name>.npy)
"""
import math
import sys

import numpy as np

prefix = sys.argv[1]
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 5, 6)).astype(np.float32)
s2 = rng.standard_normal((5, 6)).astype(np.float32)
img = rng.standard_normal((2, 4, 3, 3)).astype(np.float32)
c = rng.standard_normal(4).astype(np.float32)
w = rng.standard_normal((6, 8)).astype(np.float32)

rms = x / np.sqrt((x * x).mean(axis=(1, 2), keepdims=True) + 0.001) * s2
groups = img.reshape(2, 2, -1)
normalized = (groups - groups.mean(-1, keepdims=True)) / np.sqrt(
    groups.var(-1, keepdims=True) + 1e-5)
gn = normalized.reshape(img.shape) * c[None, :, None, None] + c[None, :, None, None]
erf = np.vectorize(math.erf)
xw = x @ w
gelu = 0.5 * xw * (1.0 + erf(xw / math.sqrt(2.0)))
xw2 = rms @ w
gelu_tanh = 0.5 * xw2 * (1.0 + np.tanh(
    math.sqrt(2.0 / math.pi) * (xw2 + 0.044715 * xw2 ** 3)))

for name, value in dict(x=x, s2=s2, img=img, c=c, w=w, rms=rms, gn=gn,
                        gelu=gelu, gelu_tanh=gelu_tanh).items():
    np.save(f"{prefix}.{name}.npy", value.astype(np.float32))
