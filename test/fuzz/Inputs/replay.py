"""Replays the inputs the fuzzers (scripts/fuzz.sh) found faults with through
the tools that users run, the way the fuzz targets use the libraries:

  regressions/import-onnx/*     mp-opt --input-format=onnx --mp-infer-shapes
                                (with and without ONNX shape inference)
  regressions/import-onnxtxt/*  the same with --input-format=onnx-text
  regressions/plan/*            mp-run --zero-inputs (load, validate, prepare,
                                run on zeros)

    replay.py BIN_DIR REGRESSIONS_DIR WORKDIR

Every run must end with exit code 0 or 1 (mp-opt) or 0 or 2 (mp-run: an
error), print no crash or sanitizer report
and leave an output file only when it succeeds. In the sanitizer build
(scripts/sanitize.sh) the original faults are reported if they come back.
Prints a line per input and exits 1 on any violation.
"""
import os
import subprocess
import sys

CRASH_MARKERS = ("Stack dump", "PLEASE submit a bug report", "LLVM ERROR",
                 "Assertion", "terminate called", "Sanitizer",
                 "runtime error:")


def commands(bin_dir, target, path, out):
    mp_opt = os.path.join(bin_dir, "mp-opt")
    if target in ("import-onnx", "import-onnxtxt"):
        fmt = "onnx" if target == "import-onnx" else "onnx-text"
        for shape_inference in ("true", "false"):
            yield ("shape-inference=" + shape_inference,
                   [mp_opt, "--input-format=" + fmt,
                    "--onnx-shape-inference=" + shape_inference,
                    "--mp-infer-shapes", path, "-o", out])
    elif target == "plan":
        yield ("run", [os.path.join(bin_dir, "mp-run"), path, "--zero-inputs"])
    else:
        raise SystemExit("replay.py: unknown fuzz target folder '%s'" % target)


def main():
    bin_dir, regressions, workdir = sys.argv[1:4]
    os.makedirs(workdir, exist_ok=True)
    failures = count = 0
    for target in sorted(os.listdir(regressions)):
        folder = os.path.join(regressions, target)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            out = os.path.join(workdir, target + "-" + name + ".mlir")
            for label, cmd in commands(bin_dir, target, path, out):
                if os.path.exists(out):
                    os.remove(out)
                count += 1
                proc = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True,
                                      errors="replace", timeout=300)
                problems = []
                # mp-run ends with 2 for errors (1 is a --compare mismatch,
                # which these runs do not ask for).
                allowed = (0, 2) if target == "plan" else (0, 1)
                if proc.returncode not in allowed:
                    problems.append("exit code %d" % proc.returncode)
                problems += ["printed '%s'" % m for m in CRASH_MARKERS
                             if m in proc.stderr]
                if proc.returncode != 0 and os.path.exists(out):
                    problems.append("left an output file after failing")
                status = "ok" if not problems else "FAIL: " + ", ".join(problems)
                print("%s/%s [%s]: exit %d, %s" % (target, name, label,
                                                   proc.returncode, status))
                if problems:
                    failures += 1
                    sys.stdout.write(proc.stderr[-3000:])
    print("replayed %d runs, %d failures" % (count, failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
