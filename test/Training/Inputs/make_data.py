"""Writes x.npy (8 samples of 16 features, uniform in [scale/2, scale]) and
y.npy (targets, all equal to `target`) into DIR.
Usage: make_data.py DIR SCALE TARGET"""
import sys

import numpy as np

out, scale, target = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rng = np.random.default_rng(0)
np.save(f"{out}/x.npy", rng.uniform(scale / 2, scale, (8, 16)).astype(np.float32))
np.save(f"{out}/y.npy", np.full((8, 4), target, np.float32))
