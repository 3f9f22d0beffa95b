"""Writes the data sets that train.test and train-errors.test feed to
mp-run --train with the training plans of mp-make-test-plans.

  make_train_data.py DIR

  linreg.{x,y}.npy        100 samples: x f32 [100, 3], y = x @ [0.5, -1.25,
                          2] + noise, f32 [100] (the plan's labels are
                          [8, 1]: one value per sample)
  linreg.eval.{x,y}.npy   12 samples (the eval plan takes batches of 5)
  softmax.{x,y}.npy       120 samples of 3 noisy clusters in 4-d: x f32
                          [120, 4], y int64 class ids [120]
  softmax.eval.{x,y}.npy  30 samples, y int32
  linreg.huge.npy         x * 1e30: every step's loss is inf (skipped)
  and wrong ones for the error tests: *.bad-*.npy
"""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(0)


def save(name, array):
    np.save(os.path.join(out, name), array)


true_w = np.array([0.5, -1.25, 2.0], np.float32)
x = rng.normal(size=(100, 3)).astype(np.float32)
save("linreg.x.npy", x)
save("linreg.y.npy", (x @ true_w + 0.01 * rng.normal(size=100)).astype(np.float32))
ex = rng.normal(size=(12, 3)).astype(np.float32)
save("linreg.eval.x.npy", ex)
save("linreg.eval.y.npy", (ex @ true_w).astype(np.float32))

centers = np.array([[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0]], np.float32)
labels = rng.integers(0, 3, size=120)
save("softmax.x.npy", (centers[labels] + 0.8 * rng.normal(size=(120, 4))).astype(np.float32))
save("softmax.y.npy", labels.astype(np.int64))
eval_labels = rng.integers(0, 3, size=30)
save("softmax.eval.x.npy",
     (centers[eval_labels] + 0.8 * rng.normal(size=(30, 4))).astype(np.float32))
save("softmax.eval.y.npy", eval_labels.astype(np.int32))

# Wrong data for train-errors.test.
save("linreg.bad-sample.npy", np.zeros((100, 4), np.float32))
save("linreg.bad-count.npy", np.zeros((90,), np.float32))
save("linreg.bad-few.npy", np.zeros((5, 3), np.float32))
save("linreg.bad-f64.npy", x.astype(np.float64))  # converted to f32
save("linreg.huge.npy", (x * 1e30).astype(np.float32))  # an infinite loss
save("linreg.bad-y2.npy", np.zeros((100, 2), np.float32))
save("softmax.bad-float.npy", labels.astype(np.float32))
bad = labels.copy()
bad[17] = 3
save("softmax.bad-class.npy", bad.astype(np.int64))
