"""Reports, for each run directory (mp-run --output-dir of a gradient plan),
the fraction of gradient elements that are exactly zero and the largest
relative error against the first (fp32) run.
Usage: zeroed_gradients.py FP32_DIR RUN_DIR..."""
import glob
import os
import sys

import numpy as np


def grads(d):
    return {os.path.basename(p)[len("grad_"):-4]: np.load(p)
            for p in sorted(glob.glob(os.path.join(d, "grad_*.npy")))}


reference = grads(sys.argv[1])
assert reference, "no grad_* outputs (grad:<name> outputs) in " + sys.argv[1]
for d in sys.argv[1:]:
    g = grads(d)
    assert g.keys() == reference.keys(), (d, g.keys())
    total = sum(v.size for v in g.values())
    zero = sum(int((v == 0).sum()) for v in g.values())
    err = max(float(np.max(np.abs(g[k] - reference[k])) /
                    max(float(np.max(np.abs(reference[k]))), 1e-30)) for k in g)
    smallest = min(float(np.min(np.abs(v[v != 0]))) if (v != 0).any() else 0.0
                   for v in reference.values())
    print(f"{os.path.basename(d)}: {zero}/{total} gradient elements zero "
          f"({100.0 * zero / total:.1f}%), max relative error vs fp32 {err:.2e}"
          + (f", smallest fp32 |gradient| {smallest:.1e}" if d == sys.argv[1] else ""))
