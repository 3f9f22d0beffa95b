"""Input and numpy reference output of col2im.onnxtxt's Col2Im.

Usage: col2im_reference.py PREFIX  (writes PREFIX.x.npy and PREFIX.y.npy)
"""
import itertools
import sys

import numpy as np

image, block = (6, 6), (2, 3)
strides, dilations, pads = (2, 1), (1, 2), (1, 0, 0, 1)
channels = 2
grid = [(image[i] + pads[i] + pads[i + 2] - (dilations[i] * (block[i] - 1) + 1))
        // strides[i] + 1 for i in range(2)]
x = np.random.default_rng(0).standard_normal(
    (1, channels * block[0] * block[1], grid[0] * grid[1])).astype(np.float32)

y = np.zeros((1, channels) + image, np.float32)
for c, k0, k1, g0, g1 in itertools.product(range(channels), range(block[0]),
                                           range(block[1]), range(grid[0]),
                                           range(grid[1])):
    row = g0 * strides[0] + k0 * dilations[0] - pads[0]
    col = g1 * strides[1] + k1 * dilations[1] - pads[1]
    if 0 <= row < image[0] and 0 <= col < image[1]:
        y[0, c, row, col] += x[0, (c * block[0] + k0) * block[1] + k1,
                               g0 * grid[1] + g1]
np.save(f"{sys.argv[1]}.x.npy", x)
np.save(f"{sys.argv[1]}.y.npy", y)
