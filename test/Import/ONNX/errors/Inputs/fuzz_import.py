"""Fuzz-style smoke check of the ONNX importer: mutates a few valid models in a
fixed, deterministic way and runs mp-opt on every mutant.

    fuzz_import.py MP_OPT WORKDIR [--count N]

Every run must exit with 0 or 1 (never a signal, an abort or another code),
print no crash report, and leave an output file exactly when it succeeds.
Prints a summary line and one line per violation; exits 1 on any violation.
"""
import argparse
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_bad  # noqa: E402

SEED = 0x5EED
CRASH_MARKERS = ("Stack dump", "PLEASE submit a bug report", "LLVM ERROR",
                 "Assertion", "terminate called",
                 "AddressSanitizer")

TEXT_MODEL = """\
<
  ir_version: 8,
  opset_import: ["" : 13, "com.example" : 1]
>
textnet (float[N, 4] X, float[4, 3] W) => (float[N, 3] Y, float[N, 3] Z)
<float[3] B = {1.0, 2.0, 3.0}>
{
  T = MatMul(X, W)
  U = Add(T, B)
  Y = Relu(U)
  Z = com.example.Custom <alpha = 0.5, dims = [1, 2]> (U)
}
"""


def base_models():
    """(name, bytes, suffix) of the valid models that get mutated."""
    models = [
        ("conv", make_bad.conv_model().SerializeToString(), ".onnx"),
        ("add", make_bad.add_model().SerializeToString(), ".onnx"),
        ("if", make_bad.if_model("X").SerializeToString(), ".onnx"),
        ("text", TEXT_MODEL.encode(), ".onnxtxt"),
    ]
    return models


def mutants(name, data, rng, count):
    """Deterministic mutants of `data`: truncations and byte changes."""
    out = []
    n = len(data)
    # Truncations at evenly spread offsets (and the very first bytes).
    cuts = sorted(set([1, 2, 3, 5, 8] +
                      [n * i // count for i in range(1, count)]))
    for cut in cuts:
        if 0 < cut < n:
            out.append(("%s-cut%d" % (name, cut), data[:cut]))
    # Single-byte flips at random positions, with interesting values.
    special = [0x00, 0x01, 0x7F, 0x80, 0xFF]
    for i in range(count):
        pos = rng.randrange(n)
        b = bytearray(data)
        if i % 2:
            b[pos] = special[rng.randrange(len(special))]
        else:
            b[pos] ^= 1 << rng.randrange(8)
        out.append(("%s-flip%d-%d" % (name, i, pos), bytes(b)))
    # A few multi-byte corruptions.
    for i in range(count // 4):
        b = bytearray(data)
        for _ in range(4):
            b[rng.randrange(n)] = rng.randrange(256)
        out.append(("%s-multi%d" % (name, i), bytes(b)))
    return out


def run_one(mp_opt, workdir, name, suffix, data):
    model = os.path.join(workdir, name + suffix)
    output = os.path.join(workdir, name + ".out.mlir")
    with open(model, "wb") as f:
        f.write(data)
    if os.path.exists(output):
        os.remove(output)
    try:
        proc = subprocess.run([mp_opt, model, "-o", output],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=60)
    except subprocess.TimeoutExpired:
        return None, "%s: timed out" % name
    err = proc.stderr.decode("utf-8", "replace")
    problems = []
    if proc.returncode not in (0, 1):
        problems.append("exit code %d" % proc.returncode)
    for marker in CRASH_MARKERS:
        if marker in err:
            problems.append("stderr has %r" % marker)
    exists = os.path.exists(output)
    if proc.returncode != 0 and exists:
        problems.append("failed but wrote %s" % output)
    if proc.returncode == 0 and not exists:
        problems.append("succeeded without writing the output")
    if proc.returncode == 1 and "error:" not in err:
        problems.append("failed without an error message")
    if problems:
        return proc.returncode, "%s: %s\n%s" % (name, "; ".join(problems),
                                                err[-2000:])
    os.remove(model)
    if exists:
        os.remove(output)
    return proc.returncode, None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mp_opt")
    parser.add_argument("workdir")
    parser.add_argument("--count", type=int, default=20,
                        help="mutations of each kind per model")
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args()

    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    rng = random.Random(SEED)
    cases = []
    for name, data, suffix in base_models():
        for mname, mdata in mutants(name, data, rng, args.count):
            cases.append((mname, suffix, mdata))

    failures = []
    imported = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_one, args.mp_opt, args.workdir, *c)
                   for c in cases]
        for f in futures:
            rc, problem = f.result()
            imported += rc == 0
            if problem:
                failures.append(problem)
    print("fuzz: %d mutants (%d imported, %d rejected), %d failures" %
          (len(cases), imported, len(cases) - imported, len(failures)))
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
