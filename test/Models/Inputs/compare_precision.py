#!/usr/bin/env python3
"""Compares a mixed-precision run with the fp32 run of the same plan inputs.

Reads every <name>.npy in the fp32 and the low-precision output directories
(mp-run --output-dir) and prints, per output: the max absolute error, the max
error relative to the fp32 output's scale (max |fp32|), the number of NaN/Inf
values in the low-precision output, and with --top1 whether the arg-max over
the last axis agrees for every row. With --no-worse-than OTHER, the max
absolute error of the outputs in OTHER (another variant of the same plan,
e.g. compiled without fusion) is printed too, and ours may not exceed it by
more than --slack of it plus 1e-6 of the output's scale (f32's rounding
noise: a fused layer norm forms its statistics in another order). Exits 1 when a
limit is passed.
"""
import argparse
import pathlib
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("fp32_dir")
    parser.add_argument("low_dir")
    parser.add_argument("--top1", action="store_true",
                        help="require the same arg-max over the last axis")
    parser.add_argument("--max-scaled-error", type=float, default=None,
                        help="limit on max|err| / max|fp32|")
    parser.add_argument("--max-abs-error", type=float, default=None,
                        help="limit on max|err|")
    parser.add_argument("--no-worse-than", default=None, metavar="OTHER_DIR",
                        help="outputs whose error ours may not exceed")
    parser.add_argument("--slack", type=float, default=0.0,
                        help="with --no-worse-than: the fraction of the "
                             "other's error ours may exceed it by")
    args = parser.parse_args()
    ok = True
    files = sorted(pathlib.Path(args.fp32_dir).glob("*.npy"))
    if not files:
        print(f"error: no outputs in {args.fp32_dir}")
        return 1
    for ref_path in files:
        low_path = pathlib.Path(args.low_dir) / ref_path.name
        ref = np.load(ref_path).astype(np.float64)
        low = np.load(low_path).astype(np.float64)
        if ref.shape != low.shape:
            print(f"{ref_path.stem}: shape {low.shape} != {ref.shape}")
            ok = False
            continue
        non_finite = int(np.count_nonzero(~np.isfinite(low)))
        err = np.abs(ref - low)
        max_abs = float(np.nanmax(err)) if err.size else 0.0
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        scaled = max_abs / scale if scale > 0 else max_abs
        line = (f"{ref_path.stem}: max abs error {max_abs:.3g}, "
                f"scaled error {scaled:.3g}, non-finite {non_finite}")
        good = non_finite == 0
        if args.max_scaled_error is not None and not scaled <= args.max_scaled_error:
            good = False
        if args.max_abs_error is not None and not max_abs <= args.max_abs_error:
            good = False
        if args.no_worse_than is not None:
            other = np.load(pathlib.Path(args.no_worse_than) / ref_path.name)
            other_abs = float(np.nanmax(np.abs(ref - other.astype(np.float64))))
            line += f", other's max abs error {other_abs:.3g}"
            if not max_abs <= other_abs * (1 + args.slack) + 1e-6 * scale:
                good = False
        if args.top1:
            rows_ref = ref.reshape(-1, ref.shape[-1]).argmax(axis=1)
            rows_low = low.reshape(-1, low.shape[-1]).argmax(axis=1)
            agree = int(np.count_nonzero(rows_ref == rows_low))
            line += f", top-1 agrees {agree}/{rows_ref.size}"
            good = good and agree == rows_ref.size
        print(line + (": ok" if good else ": FAIL"))
        ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
