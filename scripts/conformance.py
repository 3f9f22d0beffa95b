#!/usr/bin/env python3
"""ONNX backend conformance runner for MixPrec.

Runs the ONNX backend tests (Debian's libonnx-testdata: node/ and
pytorch-converted/) through the whole pipeline: mp-opt imports, lowers and
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

Needs only python3 (the standard library) and onnx (>= 1.12).
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

try:
    import onnx
except ImportError:  # pragma: no cover
    sys.exit("conformance.py: needs the 'onnx' Python package "
             "(the project's .venv or Debian's python3-onnx)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TESTDATA = os.environ.get("MP_ONNX_TESTDATA",
                                  "/usr/share/libonnx-testdata/data")
SUITES = ("node", "pytorch-converted")
TARGET_NODE_PASS = 550

# ---------------------------------------------------------------------------
# Inputs frozen into the plan.
#
# op type -> positions of the operands that determine the shape of a result
# or are attributes in disguise (axes, k, ratio, ...). A graph input that
# feeds such an operand (directly, or through Identity/Cast) is frozen with
# --freeze-input to the test's data for it; every other graph input stays a
# runtime input of the plan. Data operands (Clip's min/max, Gather's indices,
# Compress's condition, GatherND, Where, ...) are never frozen.
_REDUCE_OPS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
               "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
               "ReduceLogSumExp", "ReduceSumSquare")
FREEZE_INPUTS = {
    "Reshape": (1,),             # shape
    "Slice": (1, 2, 3, 4),       # starts, ends, axes, steps
    "Expand": (1,),              # shape
    "Tile": (1,),                # repeats
    "Pad": (1, 2, 3),            # pads, constant_value, axes
    "Resize": (1, 2, 3),         # roi, scales, sizes
    "Upsample": (1,),            # scales
    "ConstantOfShape": (0,),     # shape
    "Range": (0, 1, 2),          # start, limit, delta
    "TopK": (1,),                # k
    "Split": (1,),               # split
    "Squeeze": (1,),             # axes
    "Unsqueeze": (1,),           # axes
    "CumSum": (1,),              # axis
    "OneHot": (1,),              # depth
    "Dropout": (1, 2),           # ratio, training_mode
    "Trilu": (1,),               # k
    "CenterCropPad": (1,),       # shape
    "Col2Im": (1, 2),            # image_shape, block_shape
    "MaxUnpool": (2,),           # output_shape
    "DFT": (1, 2),               # dft_length, axis
    "STFT": (1, 3),              # frame_step, frame_length
    "BlackmanWindow": (0,),      # size
    "HannWindow": (0,),          # size
    "HammingWindow": (0,),       # size
    "MelWeightMatrix": (0, 1, 2, 3, 4),
    "NonMaxSuppression": (2, 3, 4),  # max_output_boxes, iou/score thresholds
    "SplitToSequence": (1,),     # split
    "AffineGrid": (1,),          # size
}
FREEZE_INPUTS.update({op: (1,) for op in _REDUCE_OPS})
# Ops an input is followed through when looking for the graph input behind a
# shape operand.
PASS_THROUGH = ("Identity", "Cast")

# Tests whose expected data is known to disagree with the current ONNX
# specification; they still count as failures, and the note is added to
# their reason.
KNOWN_REFERENCE_ISSUES = {
    "test_cast_FLOAT_to_BFLOAT16":
        "ONNX 1.12's reference truncates to bfloat16; the spec and MixPrec "
        "round to nearest even",
    "test_castlike_FLOAT_to_BFLOAT16":
        "ONNX 1.12's reference truncates to bfloat16; the spec and MixPrec "
        "round to nearest even",
    "test_castlike_FLOAT_to_BFLOAT16_expanded":
        "ONNX 1.12's reference truncates to bfloat16; the spec and MixPrec "
        "round to nearest even",
}

# ---------------------------------------------------------------------------
# Classifying tool messages.

# mp-opt errors that mean "not implemented yet" rather than "wrong".
UNSUPPORTED_OPT = [
    re.compile(p) for p in (
        r"cannot lower",
        r"no typed op",
        r"unsupported element type",
        r"element type .* (is )?not supported",
        r"unsupported (data ?type|dtype|type)",
        r"is not supported",
        r"not supported yet",
        r"no lowering",
    )
]
# mp-run errors that mean "not implemented yet".
UNSUPPORTED_RUN = [
    re.compile(p) for p in (
        r"no CPU implementation",
        r"the CUDA backend does not implement",
        r"unsupported (element type|dtype|data ?type)",
    )
]
_NOISE = re.compile(r"^(PLEASE submit|Stack dump|\s*#\d+ |\s*\d+\.\s|"
                    r"Program arguments)")


def first_error_line(text):
    """The first line of a tool's output that says what went wrong."""
    lines = [l.rstrip() for l in text.splitlines() if l.strip()]
    for pat in (r"MISMATCH", r"\berror\b", r"Assertion", r"LLVM ERROR",
                r"terminate called", r"what\(\)", r"fail", r"abort"):
        for l in lines:
            if re.search(pat, l, re.IGNORECASE) and not _NOISE.match(l):
                return l
    for l in lines:
        if not _NOISE.match(l):
            return l
    return lines[0] if lines else ""


_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ (.*?)(?: \(/[^ ]*\+0x[0-9a-f]+\))?"
                    r"(?: [^ ]*:\d+(?::\d+)?)?$")


def crash_summary(text):
    """For a crash without an error message: the innermost frames of the
    stack dump below the signal handler, 'f() <- g() <- h()'."""
    lines = text.splitlines()
    error = first_error_line(text)
    if error and not _NOISE.match(error):
        return error
    frames = []
    for l in lines:
        m = _FRAME.match(l)
        if m:
            frames.append(m.group(1).strip())
    # Skip the signal handler and the libc frame that called it.
    start = 0
    for i, f in enumerate(frames):
        if "SignalHandler" in f or "PrintStackTrace" in f or \
                f.startswith("(/") or not f:
            start = i + 1
        else:
            break
    useful = [_strip_args(f) for f in frames[start:]
              if f and not f.startswith("(/")][:3]
    return ("in " + " <- ".join(useful)) if useful else (error or "")


def _strip_args(symbol):
    """'ns::f(int, char) const' -> 'ns::f()'."""
    s = symbol[:-6] if symbol.endswith(" const") else symbol
    if not s.endswith(")"):
        return symbol
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(s[i], 0)
        if depth == 0:
            return s[:i] + "()"
    return symbol


def shorten(line, testdir):
    """Drops the test data path from a message and trims it."""
    line = line.replace(testdir + "/", "").replace(testdir, "")
    line = re.sub(r"/tmp/[^ :]*/", "", line)
    # The tool's name and the file it worked on are known: drop them.
    line = re.sub(r"^(mp-run|mp-opt): ", "", line)
    line = re.sub(r"^(plan\d+\.mpplan|model\.onnx): ", "", line)
    line = re.sub(r"^unnamed node: ", "", line)
    line = " ".join(line.split())
    return line if len(line) <= 300 else line[:297] + "..."


def signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except (ValueError, AttributeError):
        return "signal %d" % -rc


# ---------------------------------------------------------------------------
# One test.

class Result:
    __slots__ = ("suite", "name", "status", "reason", "ops", "op",
                 "expanded", "typed", "seconds")

    def __init__(self, suite, name):
        self.suite, self.name = suite, name
        self.status, self.reason = "fail", ""
        self.ops, self.op, self.expanded = [], "", False
        self.typed = None  # pytorch-converted: imports without mp.onnx_op
        self.seconds = 0.0

    @property
    def key(self):
        return "%s/%s" % (self.suite, self.name)


def run_tool(cmd, timeout):
    """Returns (returncode or 'timeout', combined output)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = e.output or b""
        return "timeout", out.decode("utf-8", "replace")
    return p.returncode, p.stdout.decode("utf-8", "replace")


def value_kind(vi):
    t = vi.type
    for kind in ("tensor_type", "sequence_type", "map_type", "optional_type",
                 "sparse_tensor_type"):
        try:
            if t.HasField(kind):
                return kind[:-5]
        except ValueError:
            pass
    return "unknown"


def op_under_test(name, model, op_names):
    """Names the ONNX op a node test tests.

    The model's only op type, Constant nodes aside (test_batchnorm_epsilon
    -> BatchNormalization, test_constant_pad -> Pad); otherwise, and always
    for the _expanded tests that spell a function op with primitive ops, the
    op spelled by the longest prefix of the test name
    (test_softmax_axis_0_expanded -> Softmax, test_reduce_sum_... ->
    ReduceSum); otherwise the op type of the node that produces the first
    graph output."""
    types = sorted({n.op_type for n in model.graph.node})
    real = [t for t in types if t != "Constant"] or types
    expanded = name.endswith("_expanded")
    if len(real) == 1 and not expanded:
        return real[0]
    base = name[len("test_"):] if name.startswith("test_") else name
    tokens = base.split("_")
    for n in range(len(tokens), 0, -1):
        op = op_names.get("".join(tokens[:n]).lower())
        if op:
            return op
    if len(real) == 1:
        return real[0]
    outs = {o.name for o in model.graph.output[:1]}
    for node in model.graph.node:
        if outs & set(node.output):
            return node.op_type
    return types[0] if types else "?"


def frozen_inputs(model, runtime_inputs):
    """Names of the graph inputs to freeze (see FREEZE_INPUTS)."""
    producer = {}
    for node in model.graph.node:
        for o in node.output:
            producer[o] = node
    result = set()
    for node in model.graph.node:
        for pos in FREEZE_INPUTS.get(node.op_type, ()):
            if pos >= len(node.input) or not node.input[pos]:
                continue
            value = node.input[pos]
            for _ in range(8):
                if value in runtime_inputs:
                    result.add(value)
                    break
                p = producer.get(value)
                if p is None or p.op_type not in PASS_THROUGH or not p.input:
                    break
                value = p.input[0]
    return result


def tensor_dims(path):
    return list(read_tensor(path).dims)


def read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def fix_bf16(path, vi, work, tag):
    """ONNX 1.12's test data stores bfloat16 tensors as UINT16 (the bits);
    gives a copy that says BFLOAT16 where the model declares bfloat16."""
    if vi.type.tensor_type.elem_type != onnx.TensorProto.BFLOAT16:
        return path
    t = read_tensor(path)
    if t.data_type != onnx.TensorProto.UINT16:
        return path
    t.data_type = onnx.TensorProto.BFLOAT16
    fixed = os.path.join(work, tag + ".pb")
    with open(fixed, "wb") as f:
        f.write(t.SerializeToString())
    return fixed


def fix_declared_shapes(model, model_path, inputs, testdir, work):
    """Where a graph input's declared static shape contradicts the test's
    data (a few ONNX 1.12 CastLike tests declare 'like' as [3, 4] and give
    [1]), returns a copy of the model declaring the data's shape: the test
    data is what a backend is run on."""
    ds0 = os.path.join(testdir, "test_data_set_0")
    changed = False
    for i, vi in enumerate(inputs):
        f = os.path.join(ds0, "input_%d.pb" % i)
        tt = vi.type.tensor_type
        if not os.path.exists(f) or not tt.HasField("shape"):
            continue
        dims = tensor_dims(f)
        decl = [d.dim_value if d.HasField("dim_value") else None
                for d in tt.shape.dim]
        if len(decl) == len(dims) and all(
                a is None or a == b for a, b in zip(decl, dims)):
            continue
        tt.shape.ClearField("dim")
        for d in dims:
            tt.shape.dim.add().dim_value = d
        changed = True
    if not changed:
        return model_path
    patched = os.path.join(work, "model.onnx")
    onnx.save(model, patched)
    return patched


def file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def run_test(suite, testdir, args, tmproot, op_names, typed_check):
    name = os.path.basename(testdir)
    r = Result(suite, name)
    start = time.monotonic()
    try:
        _run_test(r, testdir, args, tmproot, op_names, typed_check)
    except Exception as e:  # a runner problem, not the compiler's
        r.status, r.reason = "fail", "runner error: %s: %s" % (
            type(e).__name__, e)
    r.seconds = time.monotonic() - start
    note = KNOWN_REFERENCE_ISSUES.get(name)
    if note and r.status == "fail":
        r.reason += " [known: %s]" % note
    return r


def _run_test(r, testdir, args, tmproot, op_names, typed_check):
    model_path = os.path.join(testdir, "model.onnx")
    model = onnx.load(model_path, load_external_data=False)
    r.ops = sorted({n.op_type for n in model.graph.node})
    r.expanded = r.name.endswith("_expanded")
    r.op = op_under_test(r.name, model, op_names) if r.suite == "node" else ""
    work = tempfile.mkdtemp(prefix=r.name[:40] + ".", dir=tmproot)
    try:
        if typed_check:
            rc, out = run_tool([args.mp_opt, model_path, "-o",
                                os.path.join(work, "import.mlir")],
                               args.timeout)
            if rc == 0:
                with open(os.path.join(work, "import.mlir"),
                          encoding="utf-8", errors="replace") as f:
                    r.typed = "mp.onnx_op" not in f.read()
            else:
                r.typed = False
        if args.ort:
            _export_and_run_ort(r, testdir, model, model_path, args, work)
        else:
            _compile_and_run(r, testdir, model, model_path, args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _compile_and_run(r, testdir, model, model_path, args, work):
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    outputs = list(model.graph.output)
    for vi in inputs + outputs:
        kind = value_kind(vi)
        if kind != "tensor":
            r.status = "unsupported"
            r.reason = "graph %s '%s' is not a tensor but %s (plans take and give tensors only)" % (
                "input" if vi in inputs else "output", vi.name, kind)
            return
    freeze = frozen_inputs(model, {i.name for i in inputs})
    model_path = fix_declared_shapes(model, model_path, inputs, testdir,
                                     work)
    dynamic = set()
    for vi in inputs:
        tt = vi.type.tensor_type
        if not tt.HasField("shape") or any(
                not d.HasField("dim_value") for d in tt.shape.dim):
            dynamic.add(vi.name)

    datasets = sorted(
        (d for d in os.listdir(testdir) if d.startswith("test_data_set_")),
        key=lambda d: int(d.rsplit("_", 1)[1]) if d.rsplit("_", 1)[1].isdigit()
        else 0)
    if not datasets:
        r.status, r.reason = "fail", "no test_data_set_*"
        return
    if args.save_kit:
        args.kit_writer.set_datasets(r, len(datasets))
    plans = {}  # compile key -> plan path
    for ds in datasets:
        dsdir = os.path.join(testdir, ds)
        in_files = {}
        for i, vi in enumerate(inputs):
            f = os.path.join(dsdir, "input_%d.pb" % i)
            if os.path.exists(f):
                in_files[vi.name] = fix_bf16(f, vi, work, "%s.in%d" % (ds, i))
        out_files = []
        for i, vi in enumerate(outputs):
            f = os.path.join(dsdir, "output_%d.pb" % i)
            if os.path.exists(f):
                out_files.append((vi.name, fix_bf16(
                    f, vi, work, "%s.out%d" % (ds, i))))
        opt_args = []
        for n in sorted(freeze):
            if n in in_files:
                opt_args.append("--freeze-input=%s=%s" % (n, in_files[n]))
        for n in sorted(dynamic - freeze):
            if n in in_files:
                dims = tensor_dims(in_files[n])
                if dims:
                    opt_args.append("--input-shape=%s:%s" % (
                        n, "x".join(str(d) for d in dims)))
        key = tuple(a if not a.startswith("--freeze-input=") else
                    a.split("=", 2)[1] + "@" + file_digest(a.split("=", 2)[2])
                    for a in opt_args)
        plan = plans.get(key)
        if plan is None:
            plan = os.path.join(work, "plan%d.mpplan" % len(plans))
            cmd = [args.mp_opt, model_path, "--emit=plan", "-o", plan] + opt_args
            if args.autocast is not None:
                cmd.insert(2, "--mp-autocast-pipeline" + (
                    "=" + args.autocast if args.autocast else ""))
            rc, out = run_tool(cmd, args.timeout)
            if rc != 0:
                r.status, r.reason = classify_opt(rc, out, testdir, args.timeout)
                return
            plans[key] = plan
            if args.save_kit:
                args.kit_writer.add_plan(r, plan)
            if args.cuda_check:
                # The CUDA backend's host-side planning of every call: a
                # plan the CPU runs and the GPU would refuse fails here.
                rc, out = run_tool([args.mp_run, plan, "--backend=cuda",
                                    "--check"], args.timeout)
                if rc != 0:
                    r.status = "fail"
                    r.reason = "the CUDA backend refuses the plan: " + \
                        shorten(first_error_line(out), testdir)
                    return
        cmd = [args.mp_run, plan]
        if args.backend != "cpu":
            cmd.append("--backend=" + args.backend)
        for n, f in in_files.items():
            if n not in freeze:
                cmd.append("%s=%s" % (n, f))
        if out_files:
            cmd.append("--compare")
            cmd += ["%s=%s" % (n, f) for n, f in out_files]
        cmd += ["--rtol=%g" % args.rtol, "--atol=%g" % args.atol]
        if args.save_kit:
            args.kit_writer.add_run(
                r, ds, plan, [(n, f) for n, f in in_files.items()
                              if n not in freeze], out_files)
        rc, out = run_tool(cmd, args.timeout)
        if rc != 0:
            r.status, r.reason = classify_run(rc, out, testdir, args.timeout)
            if len(datasets) > 1:
                r.reason = "%s: %s" % (ds, r.reason)
            return
    r.status, r.reason = "pass", ""


# ---------------------------------------------------------------------------
# The kit for a machine without mp-opt and test data (--save-kit, --kit).

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


def _ort_session(path):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 4
    return ort.InferenceSession(path, options,
                                providers=["CPUExecutionProvider"])


def _export_and_run_ort(r, testdir, model, model_path, args, work):
    """--ort: mp-opt exports the model (after the autocast pipeline with
    --autocast); ONNX Runtime runs the exported model and the original on
    the test's inputs. Without --autocast the outputs must be bit-identical
    (a lossless round trip), with it within the tolerances. A model ONNX
    Runtime cannot run in its original form is unsupported (the client lacks
    the op), as are graphs with non-tensor inputs or outputs."""
    import numpy as np
    from onnx import numpy_helper
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    for vi in inputs + list(model.graph.output):
        kind = value_kind(vi)
        if kind != "tensor":
            r.status = "unsupported"
            r.reason = "graph %s '%s' is %s (the runner feeds tensors only)" % (
                "input" if vi in inputs else "output", vi.name, kind)
            return
    try:
        original = _ort_session(model_path)
    except Exception:  # noqa: BLE001 - ONNX Runtime's own errors
        r.status = "unsupported"
        r.reason = "ONNX Runtime cannot run the original model"
        return
    exported = os.path.join(work, "exported.onnx")
    cmd = [args.mp_opt, model_path, "-o", exported]
    if args.autocast is not None:
        cmd.insert(2, "--mp-autocast-pipeline" + (
            "=" + args.autocast if args.autocast else ""))
    rc, out = run_tool(cmd, args.timeout)
    if rc != 0:
        r.status, r.reason = classify_opt(rc, out, testdir, args.timeout)
        return
    try:
        session = _ort_session(exported)
    except Exception as e:  # noqa: BLE001
        r.status = "fail"
        r.reason = "ONNX Runtime rejects the exported model: %s" % (
            str(e).splitlines()[0][:300])
        return
    names = [o.name for o in original.get_outputs()]
    if [o.name for o in session.get_outputs()] != names:
        r.status, r.reason = "fail", "the exported model's outputs are renamed"
        return
    for ds in sorted(d for d in os.listdir(testdir)
                     if d.startswith("test_data_set_")):
        dsdir = os.path.join(testdir, ds)
        feeds = {}
        for i, vi in enumerate(inputs):
            f = os.path.join(dsdir, "input_%d.pb" % i)
            if os.path.exists(f):
                feeds[vi.name] = numpy_helper.to_array(read_tensor(f))
        try:
            want = original.run(names, feeds)
        except Exception:  # noqa: BLE001
            r.status = "unsupported"
            r.reason = "ONNX Runtime cannot run the original model on %s" % ds
            return
        try:
            got = session.run(names, feeds)
        except Exception as e:  # noqa: BLE001
            r.status = "fail"
            r.reason = "%s: ONNX Runtime: %s" % (ds, str(e).splitlines()[0][:300])
            return
        for name, a, e in zip(names, got, want):
            a, e = np.asarray(a), np.asarray(e)
            if a.shape != e.shape or a.dtype != e.dtype:
                r.status = "fail"
                r.reason = "%s: output %s is %s %s, the original gives %s %s" % (
                    ds, name, a.dtype, a.shape, e.dtype, e.shape)
                return
            if args.autocast is None or e.dtype.kind not in "fc":
                ok = (np.array_equal(a, e, equal_nan=True)
                      if e.dtype.kind in "fc" else np.array_equal(a, e))
            else:
                ok = np.allclose(a.astype(np.float64), e.astype(np.float64),
                                 rtol=args.rtol, atol=args.atol, equal_nan=True)
            if not ok:
                r.status = "fail"
                r.reason = "%s: output %s differs from the original's in " \
                           "ONNX Runtime" % (ds, name)
                return
    r.status, r.reason = "pass", ""


def classify_opt(rc, out, testdir, timeout):
    if rc == "timeout":
        return "fail", "mp-opt timed out after %gs" % timeout
    line = shorten(first_error_line(out), testdir)
    if rc < 0:
        return "fail", "mp-opt crashed (%s): %s" % (
            signal_name(rc), shorten(crash_summary(out), testdir))
    if any(p.search(line) for p in UNSUPPORTED_OPT):
        return "unsupported", "mp-opt: " + line
    return "fail", "mp-opt: " + line


def classify_run(rc, out, testdir, timeout):
    if rc == "timeout":
        return "fail", "mp-run timed out after %gs" % timeout
    line = shorten(first_error_line(out), testdir)
    if rc < 0:
        return "fail", "mp-run crashed (%s): %s" % (
            signal_name(rc), shorten(crash_summary(out), testdir))
    if rc == 2 and any(p.search(out) for p in UNSUPPORTED_RUN):
        for l in out.splitlines():
            if any(p.search(l) for p in UNSUPPORTED_RUN):
                line = shorten(l, testdir)
                break
        return "unsupported", "mp-run: " + line
    if rc == 1:
        mism = [l for l in out.splitlines() if "MISMATCH" in l or
                ("output" in l and "ok," not in l)]
        if mism:
            line = shorten(mism[0], testdir)
        return "fail", "mp-run: " + line
    return "fail", "mp-run: " + line


# ---------------------------------------------------------------------------
# Driver.

def discover(testdata, suites, name_filter, only=None):
    tests = []
    for suite in suites:
        base = os.path.join(testdata, suite)
        if not os.path.isdir(base):
            sys.exit("conformance.py: no test suite at %s" % base)
        for name in sorted(os.listdir(base)):
            d = os.path.join(base, name)
            if not os.path.isfile(os.path.join(d, "model.onnx")):
                continue
            if name_filter and not re.search(name_filter, name):
                continue
            if only is not None and "%s/%s" % (suite, name) not in only:
                continue
            tests.append((suite, d))
    return tests


# Test-name spellings of ops that are not the op's name (test_nllloss_...).
OP_NAME_ALIASES = {
    "nllloss": "NegativeLogLikelihoodLoss",
    "sce": "SoftmaxCrossEntropyLoss",
    "mvn": "MeanVarianceNormalization",
    "batchnorm": "BatchNormalization",
    "instancenorm": "InstanceNormalization",
    "greaterequal": "GreaterOrEqual",
    "lessequal": "LessOrEqual",
}


def op_name_map():
    names = dict(OP_NAME_ALIASES)
    try:
        for s in onnx.defs.get_all_schemas_with_history():
            if s.domain in ("", "ai.onnx"):
                names.setdefault(s.name.lower(), s.name)
    except Exception:
        pass
    return names


def read_allowlist(path):
    entries = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                entries.append(line)
    return entries


def write_allowlist(path, results, command, mode=None):
    passing = sorted(r.key for r in results if r.status == "pass")
    with open(path, "w", encoding="utf-8") as f:
        f.write("# ONNX backend tests (suite/test) that pass in mode: %s.\n"
                % (mode or "mp-opt --emit=plan and mp-run on the CPU"))
        f.write("# Generated by: %s\n" % command)
        f.write("# Checked by test/Conformance/%s "
                "(scripts/conformance.py --check): every listed test must "
                "pass.\n" % ("allowlist-%s.test" % mode if mode
                              else "allowlist.test"))
        f.write("# Regenerate after adding kernels (see docs/conformance.md)."
                "\n")
        for k in passing:
            f.write(k + "\n")
    return len(passing)


def suite_counts(results, suite):
    rs = [r for r in results if r.suite == suite]
    c = {"pass": 0, "fail": 0, "unsupported": 0}
    for r in rs:
        c[r.status] += 1
    return len(rs), c


def summary_line(results, suites):
    parts = []
    for s in suites:
        n, c = suite_counts(results, s)
        if n:
            parts.append("%s: %d/%d pass, %d fail, %d unsupported" % (
                s, c["pass"], n, c["fail"], c["unsupported"]))
    return "; ".join(parts)


def target_lines(results, suites):
    lines = []
    if "node" in suites:
        n, c = suite_counts(results, "node")
        if n:
            lines.append("node: %d pass (target >= %d)%s" % (
                c["pass"], TARGET_NODE_PASS,
                "" if n == 932 else " [only %d of 932 tests ran]" % n))
    pt = [r for r in results if r.suite == "pytorch-converted"
          and r.typed is not None]
    if pt:
        typed = [r for r in pt if r.typed]
        ok = [r for r in typed if r.status == "pass"]
        lines.append("pytorch-converted: all tests whose ops are typed: "
                     "%d/%d pass (%d of %d tests import with typed ops only)"
                     % (len(ok), len(typed), len(typed), len(pt)))
        for r in sorted(typed, key=lambda r: r.name):
            if r.status != "pass":
                lines.append("  typed but not passing: %s: %s: %s" % (
                    r.name, r.status, r.reason))
    return lines


def md_escape(s):
    return s.replace("|", "\\|").replace("<", "&lt;")


DOC_HEADER = """\
# ONNX conformance

How much of the ONNX backend test suite runs end to end: each test's model is
imported, lowered and planned by `mp-opt --emit=plan`, the plan runs on the
CPU backend (`mp-run`, fp32) and every output of every data set is compared
with the expected output with ONNX's default tolerances, `rtol 1e-3`,
`atol 1e-7` (`|actual - expected| <= atol + rtol * |expected|`; NaN matches
NaN; integers and bools must be equal). The tests are Debian's
`libonnx-testdata` (ONNX 1.12): `node/` (932 one-op tests, including the
`_expanded` tests that spell a function op with primitive ops) and
`pytorch-converted/` (82 small torch modules).

The runner is `scripts/conformance.py` (python3 with the `onnx` package: the
project's `.venv` or Debian's `python3-onnx`):

```sh
scripts/conformance.py                          # both suites, summary only
scripts/conformance.py -v --filter '^test_resize' --jobs 2
scripts/conformance.py --suite pytorch-converted -v
scripts/conformance.py --check test/Conformance/allowlist.txt   # regressions
scripts/conformance.py --write-doc docs/conformance.md \\
    --update-allowlist test/Conformance/allowlist.txt            # refresh both
```

Options: `--suite` (repeatable), `--filter REGEX` (on the test name),
`--jobs N` (default 2), `--timeout S` per tool call (default 60),
`--bin-dir` / `--mp-opt` / `--mp-run` (default `build/bin`), `--testdata`,
`--rtol` / `--atol`, `-v` (a line per test), `--json FILE` (every result).

## Classification

| status | meaning |
|---|---|
| pass | every output of every data set matches |
| fail | wrong values or shapes (`mp-run` exit 1), an `mp-opt`/`mp-run` error that is not a missing feature, a crash (killed by a signal: always a failure, in either tool), or a timeout (60 s per tool call) |
| unsupported | `mp-opt` cannot lower the model ("cannot lower", "no typed op", unsupported element types), `mp-run` has "no CPU implementation" of a call, or a graph input/output is not a tensor (sequence, optional, map: plans take and give tensors only) |

The reason recorded is the first relevant line the tool printed.

## Static shapes: frozen inputs

Plans have static shapes, and every operand that decides a shape (or is an
attribute in disguise, such as Slice's `axes` or TopK's `k`) must be known at
compile time. In the ONNX tests such operands are often graph inputs, so the
runner freezes them: a graph input that feeds one of the operands below
(directly, or through `Identity`/`Cast`) is compiled into the plan with
`mp-opt --freeze-input=NAME=input_N.pb` (the test's own data); every other
input is bound at run time by `mp-run`. Graph inputs with dynamic dims get
`--input-shape=NAME:D0xD1...` from the test data. A test with several data
sets is compiled once per distinct frozen data/shapes. This is what
onnx-mlir and TVM do for these tests as well: they compile for static shapes
and constant shape operands.

| op | frozen operand positions |
|---|---|
{freeze_table}

Never frozen (data operands, kept at run time): Clip's min/max, Gather/
GatherND/Scatter indices, Compress's condition, Where, and every operand not
listed above.

## Test data accommodations

The runner adapts three quirks of the ONNX 1.12 test data, and nothing else:

- bfloat16 tensors are stored as `UINT16` (their bits); where the model
  declares bfloat16, the runner hands `mp-run` a copy that says `BFLOAT16`.
- a few CastLike tests declare the `like` input as `[3, 4]` and give `[1]`;
  where declared static dims contradict the test data, the runner compiles a
  copy of the model that declares the data's shape.
- the float → bfloat16 Cast/CastLike references truncate, while the ONNX
  specification (and MixPrec) round to nearest even; these tests stay
  failures, with a `[known: ...]` note (`KNOWN_REFERENCE_ISSUES`).

`mp-opt` and `mp-run` are copied into the run's temporary directory first,
so that a rebuild during a run cannot change or break it.

## Per-op grouping

Node tests are grouped by the op under test: the longest prefix of the test
name (after `test_`, underscores dropped) that spells an ONNX op
(`test_reduce_sum_keepdims_random` → ReduceSum, `test_center_crop_pad_crop` →
CenterCropPad); failing that, the model's only op type
(`test_batchnorm_epsilon` → BatchNormalization); failing that, the op that
produces the first output. `_expanded` tests (the function op written with
primitive ops) count in the op's separate "expanded" column, not in its
pass/fail/unsupported columns.

## Keeping it green

`test/Conformance/allowlist.txt` lists every test that passes
(`suite/test_name`). The lit test `test/Conformance/allowlist.test` runs
`scripts/conformance.py --check test/Conformance/allowlist.txt`, which runs only
the listed tests and fails listing each one that no longer passes (about
30-45 s on 2 cores; a full run of both suites takes 35-100 s with 2 jobs,
depending on the machine's load). After adding kernels or lowerings, refresh
the list and this page:

```sh
scripts/conformance.py --write-doc docs/conformance.md \\
    --update-allowlist test/Conformance/allowlist.txt
```

Everything below is generated by that command.
"""

GENERATED_MARK = "<!-- generated by scripts/conformance.py: do not edit below -->"


SECTIONS = {
    "autocast": (
        "Under autocast (mixed precision)",
        "The same tests compiled with `--mp-autocast-pipeline` (f16 "
        "tensor-core ops, f32 reductions and norms, casts at the boundaries; "
        "tests whose ops all stay f32 run unchanged) and compared with fp16 "
        "tolerances (`rtol 0.01`, `atol 0.001`)."),
    "ort": (
        "Exported to ONNX, run in ONNX Runtime",
        "Each test model imported and exported by `mp-opt -o model.onnx` "
        "(no passes) and run in ONNX Runtime 1.20 (CPU) next to the original "
        "model: the outputs must be bit-identical. Unsupported: ONNX Runtime "
        "cannot run the original, or the graph takes or gives sequences or "
        "optionals."),
    "ort-autocast": (
        "Exported in mixed precision, run in ONNX Runtime",
        "Each test model exported by `mp-opt --mp-autocast-pipeline -o "
        "model.onnx` and run in ONNX Runtime 1.20 (CPU) next to the "
        "original: outputs within fp16 tolerances (`rtol 0.01`, "
        "`atol 0.001`)."),
}


def section_markers(mode):
    return ("<!-- %s results: written by conformance.py -->" % mode,
            "<!-- end of %s results -->" % mode)


def existing_section(path, mode):
    """The `mode` section of the page at `path`, or "" (kept when the fp32
    results are rewritten)."""
    begin_mark, end_mark = section_markers(mode)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return ""
    begin, end = text.find(begin_mark), text.find(end_mark)
    if begin < 0 or end < 0:
        return ""
    return text[begin:end + len(end_mark)]


def counts_table(results, suites):
    """The per-suite pass/fail/unsupported table (Markdown lines)."""
    out = ["| suite | tests | pass | fail | unsupported |", "|---|---|---|---|---|"]
    for suite in suites:
        n, c = suite_counts(results, suite)
        if n:
            out.append("| %s | %d | %d | %d | %d |" % (
                suite, n, c["pass"], c["fail"], c["unsupported"]))
    return out


def failures_table(results):
    """Every failing test with its op and reason (Markdown lines)."""
    fails = sorted((r for r in results if r.status == "fail"),
                   key=lambda r: r.key)
    if not fails:
        return ["None."]
    return ["| test | op | reason |", "|---|---|---|"] + [
        "| %s | %s | %s |" % (r.key, r.op or "", md_escape(r.reason))
        for r in fails]


def write_section(path, mode, results, suites, command, elapsed, jobs):
    """Writes the results of a run in `mode` into the page's section for it,
    next to the fp32 results (which must be there already)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    title, description = SECTIONS[mode]
    begin_mark, end_mark = section_markers(mode)
    out = [begin_mark, "", "## " + title, "", description, "",
           "Produced by `%s` (%.0f s with %d jobs)." % (command, elapsed, jobs),
           ""] + counts_table(results, suites) + ["", "### Failing", ""]
    out += failures_table(results) + ["", end_mark]
    section = "\n".join(out)
    old = existing_section(path, mode)
    text = text.replace(old, section) if old else text.rstrip("\n") + "\n\n" + section
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.rstrip("\n") + "\n")


def write_doc(path, results, suites, command, elapsed, jobs):
    freeze_rows = []
    groups = {}
    for op, pos in FREEZE_INPUTS.items():
        groups.setdefault(tuple(pos), []).append(op)
    for pos, ops in sorted(groups.items(), key=lambda kv: sorted(kv[1])[0]):
        freeze_rows.append("| %s | %s |" % (", ".join(sorted(ops)),
                                             ", ".join(str(p) for p in pos)))
    header = DOC_HEADER.replace("{freeze_table}", "\n".join(freeze_rows))
    out = [header, GENERATED_MARK, "", "## Results", "",
           "Produced by `%s` (%.0f s with %d jobs)." % (command, elapsed, jobs),
           ""] + counts_table(results, suites) + [""]
    for l in target_lines(results, suites):
        if l.startswith("  "):
            out.append("  - " + md_escape(l.strip()))
        else:
            out.append("- " + md_escape(l))
    out.append("")

    node = [r for r in results if r.suite == "node"]
    if node:
        out += ["## Node tests by op", "",
                "| op | tests | pass | fail | unsupported | expanded: pass/tests |",
                "|---|---|---|---|---|---|"]
        per = {}
        for r in node:
            e = per.setdefault(r.op, {"pass": 0, "fail": 0, "unsupported": 0,
                                      "n": 0, "xp": 0, "xn": 0})
            if r.expanded:
                e["xn"] += 1
                e["xp"] += r.status == "pass"
            else:
                e["n"] += 1
                e[r.status] += 1
        for op in sorted(per, key=str.lower):
            e = per[op]
            out.append("| %s | %d | %d | %d | %d | %s |" % (
                op, e["n"], e["pass"], e["fail"], e["unsupported"],
                "%d/%d" % (e["xp"], e["xn"]) if e["xn"] else ""))
        out.append("")

    pt = [r for r in results if r.suite == "pytorch-converted"]
    if pt:
        out += ["## pytorch-converted tests", "",
                "Typed: the model imports without any generic `mp.onnx_op`.",
                "", "| test | status | typed | ops | reason |",
                "|---|---|---|---|---|"]
        for r in sorted(pt, key=lambda r: r.name):
            out.append("| %s | %s | %s | %s | %s |" % (
                r.name, r.status,
                "" if r.typed is None else ("yes" if r.typed else "no"),
                ", ".join(r.ops), md_escape(r.reason)))
        out.append("")

    out += ["## Failing tests", ""] + failures_table(results) + [""]

    uns = sorted((r for r in results if r.status == "unsupported"),
                 key=lambda r: r.key)
    if uns:
        out += ["## Unsupported tests", "", "| test | reason |", "|---|---|"]
        for r in uns:
            out.append("| %s | %s |" % (r.key, md_escape(r.reason)))
        out.append("")
    for mode in SECTIONS:
        kept = existing_section(path, mode)
        if kept:
            out += ["", kept, ""]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))


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
    if args.testdata != "/usr/share/libonnx-testdata/data":
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
    if args.rtol is None:
        args.rtol = 1e-2 if args.autocast is not None else 1e-3
    if args.atol is None:
        args.atol = 1e-3 if args.autocast is not None else 1e-7
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
                        print("%-11s %s%s" % (
                            r.status.upper() + ":", r.key,
                            (": " + r.reason) if r.reason else ""),
                            flush=True)
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
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{k: getattr(r, k) for k in Result.__slots__}
                       for r in results], f, indent=1)
    if args.write_doc:
        mode = ("ort-autocast" if args.ort and args.autocast is not None
                else "ort" if args.ort
                else "autocast" if args.autocast is not None else None)
        if mode:
            write_section(args.write_doc, mode, results, suites, command,
                          elapsed, args.jobs)
        else:
            write_doc(args.write_doc, results, suites, command, elapsed,
                      args.jobs)
        print("wrote %s" % args.write_doc)
    if args.update_allowlist:
        n = write_allowlist(args.update_allowlist, results, command,
                            "ort-autocast" if args.ort and args.autocast is not None
                            else "ort" if args.ort
                            else "autocast" if args.autocast is not None
                            else None)
        print("wrote %s (%d tests)" % (args.update_allowlist, n))
    if args.check:
        regressions = [r for r in results if r.status != "pass"]
        if regressions:
            print("%d regression(s): allow-listed tests that do not pass:" %
                  len(regressions))
            for r in regressions:
                print("REGRESSION: %s: %s: %s" % (r.key, r.status, r.reason))
            return 1
        print("all %d allow-listed tests pass" % len(results))
    return 0


def kit_main(args):
    """--kit DIR: the plans of a kit, run by mp-run alone."""
    for bad in ("save_kit", "write_doc", "update_allowlist", "ort"):
        if getattr(args, bad):
            sys.exit("conformance.py: --kit cannot be used with --%s" %
                     bad.replace("_", "-"))
    if args.rtol is None:
        args.rtol = 1e-2 if args.autocast is not None else 1e-3
    if args.atol is None:
        args.atol = 1e-3 if args.autocast is not None else 1e-7
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
                print("%-11s %s%s" % (r.status.upper() + ":", r.key,
                                      (": " + r.reason) if r.reason else ""),
                      flush=True)
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
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{k: getattr(r, k) for k in Result.__slots__}
                       for r in results], f, indent=1)
    if args.check:
        regressions = [r for r in results if r.status != "pass"]
        if regressions:
            print("%d regression(s): allow-listed tests that do not pass:" %
                  len(regressions))
            for r in regressions:
                print("REGRESSION: %s: %s: %s" % (r.key, r.status, r.reason))
            return 1
        print("all %d allow-listed tests pass" % len(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
