#!/usr/bin/env python3
"""mp-run on the CPU backend against ONNX Runtime's CPU execution provider.

Compiles a model (default: the exported ResNet-50) for batch 1 with
`mp-opt --emit=plan`, then times, in the same run and on the same input,
`mp-run --repeat` and an onnxruntime InferenceSession (same number of
threads), checks that both give the same output, and prints both times and
their ratio. docs/benchmarks.md records results with this command.

  python3 scripts/bench_run.py [--model build/models/resnet50.onnx]
                               [--repeat 20] [--warmup 3] [--threads N]
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


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(root, "build"))
    parser.add_argument("--model", default=None,
                        help="ONNX model (default: <build>/models/resnet50.onnx)")
    parser.add_argument("--dim-param", default="batch=1",
                        help="symbolic dim sizes for mp-opt (default batch=1)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="threads for both (OpenBLAS and ORT intra-op)")
    args = parser.parse_args()
    model = args.model or os.path.join(args.build, "models", "resnet50.onnx")
    bindir = os.path.join(args.build, "bin")

    try:
        import onnxruntime as ort
    except ImportError:
        sys.exit("bench_run.py: onnxruntime is missing: run it with the "
                 "project's .venv (scripts/install-deps.sh creates it)")

    with tempfile.TemporaryDirectory() as tmp:
        plan = os.path.join(tmp, "model.mpplan")
        start = time.perf_counter()
        subprocess.run([os.path.join(bindir, "mp-opt"), model,
                        f"--dim-param={args.dim_param}", "--emit=plan",
                        "-o", plan], check=True)
        compile_s = time.perf_counter() - start

        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(model, options,
                                       providers=["CPUExecutionProvider"])
        inp = session.get_inputs()[0]
        param, size = args.dim_param.split("=")
        shape = [int(size) if d == param or not isinstance(d, int) else d
                 for d in inp.shape]
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape).astype(np.float32)
        in_file = os.path.join(tmp, "input.npy")
        np.save(in_file, x)

        # ONNX Runtime.
        for _ in range(args.warmup):
            expected = session.run(None, {inp.name: x})[0]
        ort_ms = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            expected = session.run(None, {inp.name: x})[0]
            ort_ms.append((time.perf_counter() - start) * 1e3)
        out_file = os.path.join(tmp, "expected.npy")
        np.save(out_file, expected)

        # mp-run: its own timer around each run (inputs copied in included).
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))
        result = subprocess.run(
            [os.path.join(bindir, "mp-run"), plan, in_file,
             f"--repeat={args.repeat}", f"--warmup={args.warmup}",
             "--compare", out_file, "--scale-tol=1e-4"],
            capture_output=True, text=True, env=env)
        if result.returncode not in (0, 1):
            sys.exit(result.stdout + result.stderr)
        match = re.search(r"median ([0-9.]+) ms, min ([0-9.]+) ms",
                          result.stdout)
        if not match:
            sys.exit("bench_run.py: unexpected mp-run output:\n" + result.stdout)
        mp_median, mp_min = float(match.group(1)), float(match.group(2))
        agree = "ok" if result.returncode == 0 else "MISMATCH"

    ort_median = statistics.median(ort_ms)
    name = os.path.basename(model)
    print(f"model: {name}, input {list(x.shape)}, threads {args.threads}, "
          f"{args.repeat} runs after {args.warmup} warmup")
    print(f"mp-opt compile: {compile_s:.2f} s")
    print(f"onnxruntime {ort.__version__} CPU: median {ort_median:.2f} ms, "
          f"min {min(ort_ms):.2f} ms")
    print(f"mp-run CPU backend:       median {mp_median:.2f} ms, "
          f"min {mp_min:.2f} ms")
    print(f"ratio mp-run / onnxruntime (median): {mp_median / ort_median:.2f}x "
          f"(target: within 3x)")
    print(f"outputs agree (1e-4 of the output's scale): {agree}")
    return 0 if agree == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
