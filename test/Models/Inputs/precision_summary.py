#!/usr/bin/env python3
"""Summarises an mp-autocast run for FileCheck.

From the report (JSON) prints, sorted: one line per (op type, precision)
with its count, the casts inserted and the precision boundaries, and with
--group=SUBSTRING the precisions of the nodes whose names contain it. From
the rewritten MLIR (--mlir) prints the element types of BatchNormalization's
scale/bias/mean/var operands.
"""
import argparse
import collections
import json
import re
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("report")
    parser.add_argument("--group", action="append", default=[])
    parser.add_argument("--mlir")
    args = parser.parse_args()
    with open(args.report) as f:
        report = json.load(f)
    for function in report["functions"]:
        counts = collections.Counter(
            (n["op_type"], n["precision"]) for n in function["nodes"])
        for (op_type, precision), count in sorted(counts.items()):
            print(f"op {op_type} {precision} {count}")
        casts = function["casts"]["inserted"]
        boundaries = function["precision_boundaries"]
        print(f"casts {casts} boundaries {boundaries} "
              f"{'equal' if casts + function['casts']['reused'] == boundaries else 'DIFFERENT'}")
        for group in args.group:
            precisions = collections.Counter(
                n["precision"] for n in function["nodes"] if group in n["name"])
            print(f"group {group}: " + ", ".join(
                f"{p} {c}" for p, c in sorted(precisions.items())))
    if args.mlir:
        stats = collections.Counter()
        with open(args.mlir) as f:
            for line in f:
                if "mp.batch_normalization" not in line:
                    continue
                types = re.search(r": \(([^)]*)\) ->", line).group(1)
                elements = [t.rsplit("x", 1)[-1].rstrip(">") for t in types.split(", ")]
                stats[f"data {elements[0]} statistics {'/'.join(sorted(set(elements[1:])))}"] += 1
        for key, count in sorted(stats.items()):
            print(f"batch_normalization {key}: {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
