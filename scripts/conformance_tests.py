"""Finding the ONNX backend tests and running one of them: mp-opt compiles
the model to a plan and mp-run runs it on every data set (or, with --ort, the
model exported by mp-opt runs in ONNX Runtime next to the original)."""

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time

import onnx

from conformance_common import (FREEZE_INPUTS, KNOWN_REFERENCE_ISSUES,
                                PASS_THROUGH, Result, classify_opt,
                                classify_run, first_error_line, read_tensor,
                                run_tool, shorten)

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


# ---------------------------------------------------------------------------
# Driver.

_LIGHT_STAGE = []  # the staging directory of the light suite, made once


def light_input(vi):
    """A light model's input as ONNX's backend test runner makes it
    (BackendTest.generate_dummy_data, random=False): a float tensor of the
    declared shape, dim_params taken as 1, holding arange(n) / n."""
    import numpy as np
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1
                  for d in vi.type.tensor_type.shape.dim)
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


def stage_light(base):
    """The light suite (light_<name>.onnx and light_<name>_output_0.pb, no
    inputs) laid out as the other suites are: <stage>/light_<name>/model.onnx
    and test_data_set_0/ with the inputs ONNX's runner feeds them."""
    if _LIGHT_STAGE:
        return _LIGHT_STAGE[0]
    import atexit
    from onnx import numpy_helper
    stage = tempfile.mkdtemp(prefix="mp-conformance-light-")
    atexit.register(shutil.rmtree, stage, True)
    for f in sorted(os.listdir(base)):
        if not (f.startswith("light_") and f.endswith(".onnx")):
            continue
        name = f[:-len(".onnx")]
        d = os.path.join(stage, name)
        ds = os.path.join(d, "test_data_set_0")
        os.makedirs(ds)
        os.symlink(os.path.join(base, f), os.path.join(d, "model.onnx"))
        model = onnx.load(os.path.join(base, f), load_external_data=False)
        inits = {i.name for i in model.graph.initializer}
        inputs = [i for i in model.graph.input if i.name not in inits]
        for k, vi in enumerate(inputs):
            if vi.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
                continue  # ONNX's runner makes float inputs only
            with open(os.path.join(ds, "input_%d.pb" % k), "wb") as out:
                out.write(numpy_helper.from_array(
                    light_input(vi), vi.name).SerializeToString())
        for k in range(len(model.graph.output)):
            expected = os.path.join(base, "%s_output_%d.pb" % (name, k))
            if os.path.exists(expected):
                os.symlink(expected, os.path.join(ds, "output_%d.pb" % k))
    _LIGHT_STAGE.append(stage)
    return stage


def discover(testdata, suites, name_filter, only=None):
    tests = []
    for suite in suites:
        base = os.path.join(testdata, suite)
        if not os.path.isdir(base):
            sys.exit("conformance.py: no test suite at %s" % base)
        if suite == "light":
            base = stage_light(base)
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
