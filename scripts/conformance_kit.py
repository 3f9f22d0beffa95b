"""The kit for a machine without mp-opt and test data: --save-kit keeps
every plan a run compiles with its inputs and expected outputs (KitWriter);
--kit runs those plans with mp-run alone and compares with the run that
made the kit."""

import hashlib
import json
import os
import sys
import threading
import time

import onnx

from conformance_common import Result, classify_run, read_tensor, run_tool

KIT_MANIFEST = "manifest.json"


class KitWriter:
    """Keeps every plan a run compiles and every mp-run call it makes
    (inputs and expected outputs converted to .npy, which an mp-run without
    ONNX reads), content-addressed under DIR/plans and DIR/data."""

    def __init__(self, directory):
        self.dir = directory
        os.makedirs(os.path.join(directory, "plans"), exist_ok=True)
        os.makedirs(os.path.join(directory, "data"), exist_ok=True)
        self.lock = threading.Lock()
        self.entries = {}  # test key -> dict
        self.plans = {}    # compiled plan path -> kit file

    def _entry(self, r):
        return self.entries.setdefault(r.key, {"runs": [], "kit_error": ""})

    def _store(self, sub, ext, data):
        name = hashlib.sha1(data).hexdigest()[:20] + ext
        path = os.path.join(self.dir, sub, name)
        if not os.path.exists(path):
            tmp = "%s.tmp-%d-%d" % (path, os.getpid(), threading.get_ident())
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        return sub + "/" + name

    def set_datasets(self, r, n):
        with self.lock:
            self._entry(r)["datasets"] = n

    def add_plan(self, r, plan):
        with open(plan, "rb") as f:
            data = f.read()
        with self.lock:
            self.plans[plan] = self._store("plans", ".mpplan", data)

    def _npy(self, path):
        """The tensor file as .npy bytes, or (None, why)."""
        import io
        import numpy as np
        from onnx import numpy_helper
        if path.endswith(".npy"):
            with open(path, "rb") as f:
                return f.read(), None
        t = read_tensor(path)
        if t.data_type == onnx.TensorProto.BFLOAT16:
            return None, "bfloat16 data (NumPy, hence .npy, has no bfloat16)"
        try:
            a = numpy_helper.to_array(t)
        except Exception as e:  # strings, unknown types
            return None, "cannot convert %s: %s" % (os.path.basename(path), e)
        if a.dtype.kind not in "fiub":
            return None, "%s data cannot be an .npy file for mp-run" % a.dtype
        buf = io.BytesIO()
        np.save(buf, np.require(a, requirements="C"))  # keeps 0-d arrays
        return buf.getvalue(), None

    def add_run(self, r, ds, plan, inputs, outputs):
        run = {"ds": ds, "plan": None, "inputs": [], "outputs": []}
        why = ""
        for key, files in (("inputs", inputs), ("outputs", outputs)):
            for name, f in files:
                data, err = self._npy(f)
                if err:
                    why = why or err
                    continue
                with self.lock:
                    run[key].append([name, self._store("data", ".npy", data)])
        with self.lock:
            e = self._entry(r)
            run["plan"] = self.plans.get(plan)
            e["runs"].append(run)
            if why and not e["kit_error"]:
                e["kit_error"] = why

    def finish(self, results, command, backend):
        manifest = {"made_by": command, "backend": backend, "tests": {}}
        for r in results:
            e = self.entries.get(r.key, {"runs": [], "kit_error": "",
                                         "datasets": 0})
            e.update({"suite": r.suite, "name": r.name, "ops": r.ops,
                      "op": r.op, "expanded": r.expanded, "typed": r.typed,
                      "made": [r.status, r.reason]})
            # What the recorded runs do not decide: an outcome before any
            # run (mp-opt failed, no tensors), or mp-opt failing for a later
            # data set after the recorded runs passed.
            e["after_runs"] = ([r.status, r.reason]
                               if r.status != "pass" and
                               (not e["runs"] or r.reason.startswith("mp-opt"))
                               else None)
            manifest["tests"][r.key] = e
        with open(os.path.join(self.dir, KIT_MANIFEST), "w") as f:
            json.dump(manifest, f, indent=0, sort_keys=True)
        return manifest


def read_kit(directory):
    path = os.path.join(directory, KIT_MANIFEST)
    if not os.path.exists(path):
        sys.exit("conformance.py: %s: no kit here (make one with --save-kit "
                 "where mp-opt and the test data are)" % path)
    with open(path) as f:
        return json.load(f)


def run_kit_test(key, e, args):
    """One test of the kit, or None when --time-budget is spent before it
    starts."""
    if args.deadline is not None and time.monotonic() > args.deadline:
        return None
    r = Result(e["suite"], e["name"])
    r.ops, r.op, r.expanded, r.typed = e["ops"], e["op"], e["expanded"], e["typed"]
    start = time.monotonic()
    try:
        _run_kit_test(r, e, args)
    except Exception as ex:
        r.status, r.reason = "fail", "runner error: %s: %s" % (
            type(ex).__name__, ex)
    r.seconds = time.monotonic() - start
    return r


def _run_kit_test(r, e, args):
    if e["kit_error"]:
        r.status = "unsupported"
        r.reason = "not in the kit: " + e["kit_error"]
        return
    if not e["runs"] and e["after_runs"]:
        r.status, r.reason = e["after_runs"]
        return
    where = os.path.join(args.kit, "")
    for run in e["runs"]:
        if not run["plan"]:
            r.status, r.reason = "fail", "kit: no plan for " + run["ds"]
            return
        cmd = [args.mp_run, os.path.join(args.kit, run["plan"])]
        if args.backend != "cpu":
            cmd.append("--backend=" + args.backend)
        cmd += ["%s=%s" % (n, os.path.join(args.kit, f))
                for n, f in run["inputs"]]
        if run["outputs"]:
            cmd.append("--compare")
            cmd += ["%s=%s" % (n, os.path.join(args.kit, f))
                    for n, f in run["outputs"]]
        cmd += ["--rtol=%g" % args.rtol, "--atol=%g" % args.atol]
        rc, out = run_tool(cmd, args.timeout)
        if rc != 0:
            r.status, r.reason = classify_run(rc, out, where, args.timeout)
            if len(e["runs"]) > 1:
                r.reason = "%s: %s" % (run["ds"], r.reason)
            return
    if e["after_runs"]:
        r.status, r.reason = e["after_runs"]
    elif len(e["runs"]) < e.get("datasets", 0):
        # The run that made the kit stopped at a failing data set: later
        # ones were never recorded.
        r.status = "fail"
        r.reason = ("kit: the recorded data sets pass, the later ones were "
                    "not recorded (made: %s)" % e["made"][1])
    else:
        r.status, r.reason = "pass", ""


def kit_comparison(results, manifest):
    """Lines comparing this run with the run that made the kit."""
    made = manifest["tests"]
    lines = []
    was = sum(1 for r in results if made[r.key]["made"][0] == "pass")
    now = sum(1 for r in results if r.status == "pass")
    lines.append("kit made with %s (backend %s): %d of these %d tests "
                 "passed there, %d pass here" % (
                     manifest["made_by"], manifest["backend"], was,
                     len(results), now))
    lost = [r for r in results
            if made[r.key]["made"][0] == "pass" and r.status != "pass"]
    gained = [r for r in results
              if made[r.key]["made"][0] != "pass" and r.status == "pass"]
    by = {}
    for r in lost:
        by.setdefault(r.status, []).append(r)
    for status in sorted(by):
        lines.append("%d passed there, %s here:" % (len(by[status]), status))
        for r in by[status]:
            lines.append("  %s: %s" % (r.key, r.reason))
    if gained:
        lines.append("%d did not pass there and pass here: %s" % (
            len(gained), " ".join(r.key for r in gained)))
    return lines
