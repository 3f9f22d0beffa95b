#!/usr/bin/env python3
"""ONNX backend conformance runner for MixPrec.

Runs the ONNX backend tests (the test data of the ONNX release the build
links, unpacked by scripts/build-onnx.sh: node/, pytorch-converted/,
pytorch-operator/, simple/ and light/, whose model-zoo graphs get the inputs
ONNX's own runner feeds them) through the whole pipeline: mp-opt imports, lowers and
plans each model (`--emit=plan`), mp-run executes the plan on the CPU in fp32
and compares every output with the test's expected output using ONNX's
default tolerances (rtol 1e-3, atol 1e-7).

Each test is classified as
  pass         every output of every data set matches;
  fail         wrong values or shapes, an error that is not a missing
               feature, a crash (killed by a signal) or a timeout;
  unsupported  mp-opt cannot lower the model (no typed op, no lowering,
               unsupported element type) or mp-run has no CPU implementation
               of a call, or the test needs non-tensor graph inputs/outputs.

Plans need static shapes, so graph inputs that determine shapes (or are
attributes in disguise, e.g. Reshape's shape or Slice's starts) are frozen
into the plan with `mp-opt --freeze-input=NAME=input_N.pb`; see FREEZE_INPUTS
below and docs/conformance.md. Everything else is bound at run time.

Usage:
  scripts/conformance.py                       # both suites, summary
  scripts/conformance.py -v --filter reshape   # one line per test
  scripts/conformance.py --write-doc docs/conformance.md \\
      --update-allowlist test/Conformance/allowlist.txt
  scripts/conformance.py --check test/Conformance/allowlist.txt

A GPU machine has no mp-opt (no MLIR) and no test data: `--save-kit DIR`
keeps, while a run compiles here, every plan with its inputs and expected
outputs (as .npy) and what mp-opt said where it failed; `--kit DIR` then runs
those plans with mp-run alone (`--backend=cuda` on the GPU machine) and
compares with the outputs and with the results of the run that made the
kit (scripts/gpu-kit.sh, docs/gpu-kit.md). `--time-budget SECONDS` starts
no test after that many seconds and still prints the summary and the
comparison, over the tests that ran (a run under an outer time limit).

The runner's code lives beside this entry point: conformance_common.py
(suites, frozen inputs, classifying tool messages), conformance_tests.py
(finding and running a test), conformance_kit.py (--save-kit, --kit) and
conformance_report.py (allow-list, summary, results page).

Needs only python3 (the standard library) and onnx (>= 1.12).
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

try:
    import onnx  # noqa: F401 - the modules below need it; say so plainly
except ImportError:  # pragma: no cover
    sys.exit("conformance.py: needs the 'onnx' Python package "
             "(the project's .venv or Debian's python3-onnx)")

from conformance_common import DEFAULT_TESTDATA, ROOT, SUITES, Result
from conformance_kit import KitWriter, kit_comparison, read_kit, run_kit_test
from conformance_report import (read_allowlist, summary_line, target_lines,
                                write_allowlist, write_doc, write_section)
from conformance_tests import discover, op_name_map, run_test


def find_tool(args, name):
    explicit = getattr(args, name.replace("-", "_"))
    if explicit:
        return explicit
    if args.bin_dir:
        return os.path.join(args.bin_dir, name)
    cand = os.path.join(ROOT, "build", "bin", name)
    if os.path.exists(cand):
        return cand
    found = shutil.which(name)
    if not found:
        sys.exit("conformance.py: cannot find %s (build it: ninja -C build %s,"
                 " or pass --bin-dir)" % (name, name))
    return found


def snapshot_tools(args, tmproot):
    """Runs copies of mp-opt and mp-run, so that a rebuild of the build tree
    during a run cannot make tests fail (the binaries link the project's
    libraries statically). Waits up to two minutes for a tool that is being
    relinked."""
    bindir = os.path.join(tmproot, "bin")
    os.mkdir(bindir)
    for attr in ("mp_opt", "mp_run"):
        src = getattr(args, attr)
        dst = os.path.join(bindir, os.path.basename(src))
        for attempt in range(25):
            try:
                shutil.copy2(src, dst)
                if subprocess.run([dst, "--help"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL,
                                  timeout=60).returncode == 0:
                    break
            except (OSError, subprocess.SubprocessError):
                pass
            time.sleep(5)
        else:
            sys.exit("conformance.py: cannot run %s" % src)
        setattr(args, attr, dst)


def canonical_command(args):
    """The command line that reproduces the results (without options that
    only change how the run goes, such as -v, --jobs or --json)."""
    parts = ["scripts/conformance.py"]
    for s in args.suite or ():
        parts.append("--suite " + s)
    if args.filter:
        parts.append("--filter '%s'" % args.filter)
    if args.testdata != DEFAULT_TESTDATA:
        parts.append("--testdata " + args.testdata)
    if args.ort:
        parts.append("--ort")
    if args.autocast is not None:
        parts.append("--autocast" + ("='%s'" % args.autocast
                                     if args.autocast else ""))
    default_rtol, default_atol = ((1e-2, 1e-3) if args.autocast is not None
                                  else (1e-3, 1e-7))
    if args.rtol != default_rtol:
        parts.append("--rtol %g" % args.rtol)
    if args.atol != default_atol:
        parts.append("--atol %g" % args.atol)
    if args.write_doc:
        parts.append("--write-doc " + os.path.relpath(args.write_doc, ROOT)
                     if os.path.abspath(args.write_doc).startswith(ROOT + "/")
                     else "--write-doc " + args.write_doc)
    if args.update_allowlist:
        a = args.update_allowlist
        parts.append("--update-allowlist " + (
            os.path.relpath(a, ROOT)
            if os.path.abspath(a).startswith(ROOT + "/") else a))
    return " ".join(parts)


def set_default_tolerances(args):
    """ONNX's default tolerances, or fp16 ones with --autocast, where the
    command line gives none."""
    if args.rtol is None:
        args.rtol = 1e-2 if args.autocast is not None else 1e-3
    if args.atol is None:
        args.atol = 1e-3 if args.autocast is not None else 1e-7


def results_mode(args):
    """Which results a run gives beside the fp32 plans (the page's section
    and the allow-list's name): "autocast", "ort", "ort-autocast" or None."""
    if args.ort:
        return "ort-autocast" if args.autocast is not None else "ort"
    return "autocast" if args.autocast is not None else None


def print_result(r):
    """The -v line of one test."""
    print("%-11s %s%s" % (r.status.upper() + ":", r.key,
                          (": " + r.reason) if r.reason else ""),
          flush=True)


def write_json(path, results):
    with open(path, "w", encoding="utf-8") as f:
        json.dump([{k: getattr(r, k) for k in Result.__slots__}
                   for r in results], f, indent=1)


def check_allowlisted(results):
    """--check: the exit status, 1 listing every allow-listed test that
    does not pass."""
    regressions = [r for r in results if r.status != "pass"]
    if regressions:
        print("%d regression(s): allow-listed tests that do not pass:" %
              len(regressions))
        for r in regressions:
            print("REGRESSION: %s: %s: %s" % (r.key, r.status, r.reason))
        return 1
    print("all %d allow-listed tests pass" % len(results))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Runs the ONNX backend tests through mp-opt --emit=plan "
                    "and mp-run on the CPU and compares the outputs.")
    ap.add_argument("--testdata", default=DEFAULT_TESTDATA,
                    help="ONNX backend test data (default %(default)s)")
    ap.add_argument("--suite", action="append", choices=SUITES,
                    help="suite to run (repeatable; default: all)")
    ap.add_argument("--filter", help="regex on the test name")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60,
                    help="seconds per tool call (default 60)")
    ap.add_argument("--bin-dir", help="directory of mp-opt and mp-run "
                    "(default: build/bin of the repository, then PATH)")
    ap.add_argument("--mp-opt")
    ap.add_argument("--mp-run")
    ap.add_argument("--backend", choices=("cpu", "cuda"), default="cpu",
                    help="the mp-run backend the plans run on (cuda: on a "
                         "machine with an NVIDIA GPU)")
    ap.add_argument("--cuda-check", action="store_true",
                    help="also check that the CUDA backend accepts each "
                         "plan (mp-run --backend=cuda --check: its host-side "
                         "planning, no GPU needed); a plan it refuses fails "
                         "the test")
    ap.add_argument("--rtol", type=float, default=None,
                    help="default 1e-3 (1e-2 with --autocast)")
    ap.add_argument("--atol", type=float, default=None,
                    help="default 1e-7 (1e-3 with --autocast)")
    ap.add_argument("--autocast", nargs="?", const="", default=None,
                    metavar="OPTIONS",
                    help="compile with --mp-autocast-pipeline[=OPTIONS] "
                         "(mixed precision, f16 by default) and compare with "
                         "fp16 tolerances; --write-doc then fills the "
                         "autocast section of the page")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="a line per test")
    ap.add_argument("--write-doc", metavar="FILE",
                    help="write the results page (docs/conformance.md)")
    ap.add_argument("--update-allowlist", metavar="FILE",
                    help="rewrite the allow-list from this run's passes")
    ap.add_argument("--check", metavar="FILE",
                    help="run only the allow-listed tests; exit 1 listing "
                         "each one that does not pass")
    ap.add_argument("--json", metavar="FILE", help="write every result")
    ap.add_argument("--ort", action="store_true",
                    help="export each model with mp-opt (-o model.onnx, "
                         "after the autocast pipeline with --autocast) and "
                         "run it in ONNX Runtime instead of compiling a plan")
    ap.add_argument("--no-typed-check", action="store_true",
                    help="skip the typed-import check of pytorch-converted")
    ap.add_argument("--save-kit", metavar="DIR",
                    help="also keep every compiled plan, its inputs and "
                         "expected outputs (.npy) and the results in DIR, "
                         "for --kit on a machine without mp-opt")
    ap.add_argument("--time-budget", type=float, metavar="SECONDS",
                    help="with --kit: start no test after this many seconds "
                         "(the rest are reported as not started), so that a run "
                         "under an outer time limit still prints its "
                         "summary and comparison")
    ap.add_argument("--kit", metavar="DIR",
                    help="run the plans of a kit (--save-kit) with mp-run "
                         "alone: no mp-opt, no test data; compares with the "
                         "results of the run that made it")
    args = ap.parse_args(argv)
    if args.time_budget is not None and not args.kit:
        ap.error("--time-budget is for --kit runs")
    if args.kit:
        return kit_main(args)
    set_default_tolerances(args)
    args.mp_opt = find_tool(args, "mp-opt")
    args.mp_run = find_tool(args, "mp-run")
    suites = tuple(args.suite) if args.suite else SUITES
    command = canonical_command(args)

    only = None
    if args.check:
        if args.update_allowlist:
            sys.exit("conformance.py: --check and --update-allowlist "
                     "exclude each other")
        listed = read_allowlist(args.check)
        only = set(listed)
        bad = [k for k in listed if k.split("/", 1)[0] not in SUITES]
        if bad:
            sys.exit("conformance.py: %s: not suite/test: %s" % (
                args.check, ", ".join(bad)))
        suites = tuple(s for s in SUITES if any(k.startswith(s + "/")
                                                  for k in listed)) or suites
    tests = discover(args.testdata, suites, args.filter, only)
    if args.check:
        found = {"%s/%s" % (s, os.path.basename(d)) for s, d in tests}
        missing = sorted(only - found)
        if missing and not args.filter:
            print("conformance.py: listed tests not found in %s: %s" % (
                args.testdata, ", ".join(missing)))
            return 1
    if args.update_allowlist and (args.filter or args.suite):
        sys.exit("conformance.py: --update-allowlist needs a full run "
                 "(no --filter/--suite)")

    if args.save_kit:
        if args.ort:
            sys.exit("conformance.py: --save-kit keeps plans; --ort makes none")
        args.kit_writer = KitWriter(args.save_kit)
    op_names = op_name_map()
    typed_check = not args.no_typed_check and not args.check
    results = []
    lock = threading.Lock()
    tmproot = tempfile.mkdtemp(prefix="mp-conformance.")
    start = time.monotonic()
    try:
        snapshot_tools(args, tmproot)
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            futs = [pool.submit(run_test, s, d, args, tmproot, op_names,
                                typed_check and s == "pytorch-converted")
                    for s, d in tests]
            for fut in concurrent.futures.as_completed(futs):
                r = fut.result()
                with lock:
                    results.append(r)
                    if args.verbose:
                        print_result(r)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(tmproot, ignore_errors=True)
    elapsed = time.monotonic() - start
    results.sort(key=lambda r: r.key)

    print(summary_line(results, suites) or "no tests ran")
    print("(%d tests in %.1f s with %d jobs)" % (len(results), elapsed,
                                                  args.jobs))
    if not args.check:
        for l in target_lines(results, suites):
            print(l)

    if args.save_kit:
        args.kit_writer.finish(results, command, args.backend)
        print("wrote the kit %s (%d tests)" % (args.save_kit, len(results)))
    if args.json:
        write_json(args.json, results)
    if args.write_doc:
        mode = results_mode(args)
        if mode:
            write_section(args.write_doc, mode, results, suites, command,
                          elapsed, args.jobs)
        else:
            write_doc(args.write_doc, results, suites, command, elapsed,
                      args.jobs)
        print("wrote %s" % args.write_doc)
    if args.update_allowlist:
        n = write_allowlist(args.update_allowlist, results, command,
                            results_mode(args))
        print("wrote %s (%d tests)" % (args.update_allowlist, n))
    if args.check:
        return check_allowlisted(results)
    return 0


def kit_main(args):
    """--kit DIR: the plans of a kit, run by mp-run alone."""
    for bad in ("save_kit", "write_doc", "update_allowlist", "ort"):
        if getattr(args, bad):
            sys.exit("conformance.py: --kit cannot be used with --%s" %
                     bad.replace("_", "-"))
    set_default_tolerances(args)
    manifest = read_kit(args.kit)
    args.mp_run = find_tool(args, "mp-run")
    suites = tuple(args.suite) if args.suite else SUITES
    only = set(read_allowlist(args.check)) if args.check else None
    keys = sorted(k for k, e in manifest["tests"].items()
                  if e["suite"] in suites
                  and (not args.filter or re.search(args.filter, e["name"]))
                  and (only is None or k in only))
    if only is not None:
        missing = sorted(only - set(manifest["tests"]))
        if missing and not args.filter:
            print("conformance.py: listed tests not in the kit: %s" %
                  ", ".join(missing))
            return 1
    results = []
    start = time.monotonic()
    args.deadline = (start + args.time_budget
                     if args.time_budget is not None else None)
    not_run = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futs = [pool.submit(run_kit_test, k, manifest["tests"][k], args)
                for k in keys]
        for fut in concurrent.futures.as_completed(futs):
            r = fut.result()
            if r is None:
                not_run += 1
                continue
            results.append(r)
            if args.verbose:
                print_result(r)
    elapsed = time.monotonic() - start
    results.sort(key=lambda r: r.key)
    print(summary_line(results, suites) or "no tests ran")
    print("(%d tests in %.1f s with %d jobs, kit %s, backend %s)" % (
        len(results), elapsed, args.jobs, args.kit, args.backend))
    if not_run:
        print("%d tests NOT STARTED: the time budget of %g s was spent" % (
            not_run, args.time_budget))
    for l in target_lines(results, suites):
        print(l)
    for l in kit_comparison(results, manifest):
        print(l)
    if args.json:
        write_json(args.json, results)
    if args.check:
        return check_allowlisted(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
