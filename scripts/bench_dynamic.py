#!/usr/bin/env python3
"""What a dynamic-shape plan costs: one plan for a range against a static
plan per size, and against ONNX Runtime, measured in the same run.

For each model and size: the median ms of `mp-run --repeat` on the static
plan compiled for that size and on the one dynamic-shape plan compiled for
the whole range (its first run at a size prepares the specialisation; the
warmup runs absorb it), and ONNX Runtime's median on the same input. Also
the compile times (mp-opt wall seconds) of the dynamic plan and of all the
static ones, and the plan files' sizes.

Usage:
    .venv/bin/python scripts/bench_dynamic.py [--models DIR] [--repeat 30]
        [--warmup 3] [--threads 2]

Needs the exported test models (build/models, `ninja mp-models`) with their
reference inputs at other sizes (scripts/export_models.py, SAMPLES).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# model -> (dim-param ranges, [(tag, {dim: size})])
CASES = {
    "bert_encoder": (["batch=1:8"],
                     [("b1", {"batch": 1}), ("b3", {"batch": 3}),
                      ("b8", {"batch": 8})]),
    "gpt_decoder_seq": (["batch=1:4", "seq=16:128"],
                        [("b2s16", {"batch": 2, "seq": 16}),
                         ("b1s37", {"batch": 1, "seq": 37}),
                         ("b2s128", {"batch": 2, "seq": 128})]),
}


def run(cmd):
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), out.stdout, out.stderr))
    return out.stdout + out.stderr, time.perf_counter() - start


def median_ms(output):
    m = re.search(r"median ([0-9.]+) ms", output)
    if not m:
        sys.exit("no median in mp-run's output:\n" + output)
    return float(m.group(1))


def ort_median_ms(model, x, repeat, warmup, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(model, options,
                                   providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: x}
    for _ in range(warmup):
        session.run(None, feed)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "models"))
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    mp_opt = os.path.join(args.bin_dir, "mp-opt")
    mp_run = os.path.join(args.bin_dir, "mp-run")
    work = tempfile.mkdtemp(prefix="mp-bench-dynamic-")

    print("| model | size | static ms | dynamic ms | dynamic / static | "
          "ORT ms | dynamic / ORT |")
    print("|---|---|---|---|---|---|---|")
    compile_rows = []
    for name, (ranges, sizes) in CASES.items():
        model = os.path.join(args.models, name + ".onnx")
        dynamic = os.path.join(work, name + ".dynamic.mpplan")
        _, dynamic_s = run([mp_opt, model, "--emit=plan", "-o", dynamic] +
                           ["--dim-param=" + r for r in ranges])
        static_s = 0.0
        static_bytes = 0
        for tag, dims in sizes:
            x_path = os.path.join(args.models, "%s.%s.input.npy" % (name, tag))
            static = os.path.join(work, "%s.%s.mpplan" % (name, tag))
            _, seconds = run([mp_opt, model, "--emit=plan", "-o", static] +
                             ["--dim-param=%s=%d" % kv for kv in dims.items()])
            static_s += seconds
            static_bytes += os.path.getsize(static)
            bench = ["--repeat=%d" % args.repeat, "--warmup=%d" % args.warmup,
                     "--threads=%d" % args.threads]
            static_ms = median_ms(run([mp_run, static, x_path] + bench)[0])
            dynamic_ms = median_ms(run([mp_run, dynamic, x_path] + bench)[0])
            ort_ms = ort_median_ms(model, np.load(x_path), args.repeat,
                                   args.warmup, args.threads)
            print("| %s | %s | %.3f | %.3f | %.2f | %.3f | %.2f |" % (
                name, tag, static_ms, dynamic_ms, dynamic_ms / static_ms,
                ort_ms, dynamic_ms / ort_ms))
        compile_rows.append((name, " ".join(ranges), dynamic_s, len(sizes),
                             static_s, os.path.getsize(dynamic), static_bytes))
    print()
    print("| model | ranges | dynamic compile s | static compiles | their s "
          "| dynamic plan bytes | static plans' bytes |")
    print("|---|---|---|---|---|---|---|")
    for row in compile_rows:
        print("| %s | %s | %.2f | %d | %.2f | %d | %d |" % row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
