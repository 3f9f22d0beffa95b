#!/usr/bin/env python3
"""Times mp-autocast (+ mp-cast-cleanup) on synthetic graphs of growing size.

Runs build/bin/mp-autocast-bench once per size (a fresh process each, so the
peak RSS is per size) and prints, per size: the pass time, the time per op,
and the memory the pass added (peak RSS after the pass minus peak RSS after
building the graph) per op. Linear growth shows as constant per-op figures.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "bin",
                                                     "mp-autocast-bench"))
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per size; the fastest is reported")
    args = ap.parse_args()
    if not os.path.exists(args.bench):
        sys.exit("bench_autocast.py: %s not found (ninja -C build "
                 "mp-autocast-bench)" % args.bench)
    print("| ops | casts | pass time (s) | us/op | memory added (MB) | bytes/op |")
    print("|---|---|---|---|---|---|")
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        best = None
        for _ in range(args.repeat):
            out = subprocess.run([args.bench, "--ops=%d" % size], check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out)
            if best is None or r["pass_seconds"] < best["pass_seconds"]:
                best = r
        added = best["peak_rss_bytes"] - best["peak_rss_after_build_bytes"]
        rows.append(best)
        print("| %d | %d | %.3f | %.2f | %.1f | %.0f |" % (
            best["ops"], best["casts"], best["pass_seconds"],
            1e6 * best["pass_seconds"] / best["ops"], added / 2**20,
            added / best["ops"]))
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        print("\ntime growth %.1fx for %.0fx the ops (linear: equal)" % (
            last["pass_seconds"] / first["pass_seconds"],
            last["ops"] / first["ops"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
