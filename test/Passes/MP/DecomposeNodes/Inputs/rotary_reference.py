"""Inputs and numpy reference output of rotary-embedding.onnxtxt.

ONNX's reference steps (onnx/reference/ops/op_rotary_embedding.py) for 3-D
X with num_heads, position_ids, interleaved pairs and a partial rotary dim.
Usage: rotary_reference.py PREFIX  (writes PREFIX.<name>.npy)
"""
import sys

import numpy as np

prefix = sys.argv[1]
rng = np.random.default_rng(0)
batch, seq, heads, size, rotated, positions = 2, 3, 2, 8, 6, 10
x = rng.standard_normal((batch, seq, heads * size)).astype(np.float32)
angles = rng.standard_normal((positions, rotated // 2))
cos = np.cos(angles).astype(np.float32)
sin = np.sin(angles).astype(np.float32)
pos = rng.integers(0, positions, (batch, seq)).astype(np.int64)

xh = x.reshape(batch, seq, heads, size)
c = cos[pos][:, :, None, :]
s = sin[pos][:, :, None, :]
x1, x2 = xh[..., 0:rotated:2], xh[..., 1:rotated:2]
real, imag = c * x1 - s * x2, s * x1 + c * x2
turned = np.stack([real, imag], axis=-1).reshape(batch, seq, heads, rotated)
y = np.concatenate([turned, xh[..., rotated:]], axis=-1).reshape(x.shape)
for name, value in dict(x=x, cos=cos, sin=sin, pos=pos,
                        y=y.astype(np.float32)).items():
    np.save(f"{prefix}.{name}.npy", value)
