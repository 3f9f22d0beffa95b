"""Inputs and checks of test/Training/data-parallel.test.

  make DIR        the digits training set (x.npy for the MLP, xc.npy for the
                  CNN, y.npy) and the MLP and CNN of scripts/train_digits.py
                  for per-rank batches of 32, 16 and 8 (mlp_b32.onnx, ...),
                  with the same initial weights; overflow.npy: x.npy with
                  the samples of rank 1 of 2 (batch 16) in the third global
                  batch of 32 scaled to 1e4 (their f16 logits overflow)
  compare A B --atol T
                  the master weights (every state but optimizer and
                  loss-scale state, the saved .npy files of mp-run
                  --state-dir) of two runs: prints the largest difference
                  and fails when it exceeds T
  compare A B --updates-from MODEL --rtol R
                  the same for the updates A and B made to MODEL's
                  initializers: fails when the largest difference exceeds R
                  times the largest update of A
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "scripts"))
import train_digits  # noqa: E402  (the models and the data split)


def make(out):
    import onnx
    x_train, y_train, _, _ = train_digits.load_digits_split()
    np.save(os.path.join(out, "x.npy"), x_train.reshape(len(x_train), 64))
    np.save(os.path.join(out, "xc.npy"), x_train.reshape(len(x_train), 1, 8, 8))
    np.save(os.path.join(out, "y.npy"), y_train)
    # Four global batches of 32, in order: few enough steps that the runs
    # stay close to linear in their roundings (mixed precision).
    np.save(os.path.join(out, "x128.npy"), x_train[:128].reshape(128, 64))
    np.save(os.path.join(out, "xc128.npy"), x_train[:128].reshape(128, 1, 8, 8))
    np.save(os.path.join(out, "y128.npy"), y_train[:128])
    flat = x_train.reshape(len(x_train), 64).copy()
    flat[2 * 32 + 16: 3 * 32] *= 1e4
    np.save(os.path.join(out, "overflow.npy"), flat)
    for batch in (32, 16, 8):
        for kind, build in (("mlp", train_digits.mlp_model),
                            ("cnn", train_digits.cnn_model)):
            # The same seed: the same initial weights at every batch size.
            model = build(batch, np.random.default_rng(0))
            onnx.save(model, os.path.join(out, f"{kind}_b{batch}.onnx"))


def master_weights(directory):
    skip = (".momentum", ".step", ".exp_avg", ".exp_avg_sq")
    weights = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".npy"):
            continue
        stem = name[:-4]
        if stem.endswith(skip) or stem.startswith("loss_scale"):
            continue
        weights[stem] = np.load(os.path.join(directory, name)).astype(np.float64)
    return weights


def initializers(model_path):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(model_path)
    return {t.name: numpy_helper.to_array(t).astype(np.float64)
            for t in model.graph.initializer}


def compare(a, b, atol, updates_from=None, rtol=None):
    wa, wb = master_weights(a), master_weights(b)
    if sorted(wa) != sorted(wb) or not wa:
        sys.exit(f"different or no weights: {sorted(wa)} against {sorted(wb)}")
    worst, where = 0.0, ""
    for name in wa:
        diff = float(np.max(np.abs(wa[name] - wb[name])))
        if diff > worst or not where:
            worst, where = diff, name
    print(f"{len(wa)} weights, largest difference {worst:.3g} ({where})")
    if updates_from:
        initial = initializers(updates_from)
        update = max(float(np.max(np.abs(wa[n] - initial[n]))) for n in wa)
        print(f"largest update {update:.3g}: the difference is "
              f"{worst / update:.3g} of it")
        atol = rtol * update
    if not worst <= atol:
        sys.exit(f"the largest difference {worst:.3g} exceeds {atol:.3g}")
    print("same weights")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("make")
    p.add_argument("out")
    p = sub.add_parser("compare")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--atol", type=float, default=0.0)
    p.add_argument("--updates-from")
    p.add_argument("--rtol", type=float)
    args = parser.parse_args()
    if args.command == "make":
        make(args.out)
    else:
        if args.updates_from and args.rtol is None:
            sys.exit("--updates-from needs --rtol")
        compare(args.a, args.b, args.atol, args.updates_from, args.rtol)


if __name__ == "__main__":
    main()
