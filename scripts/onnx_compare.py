#!/usr/bin/env python3
"""Compares an exported ONNX model with the original, and runs both.

Structure (--structure): the model fields (IR version, opsets, producer,
domain, model version, doc string, metadata), the graph's inputs and outputs
(names, element types; a dim the original gives must be kept), every node
(op type, domain, name, inputs, outputs, attributes, doc string; matched by
their outputs, the order may differ) and every initializer (name, type, dims,
bit-identical data).

Execution (--run): both models in ONNX Runtime (CPU) on the same inputs (the
given .npy files in input order, else random ones from --seed, with each
dynamic dim set to --dim); --exact requires bit-identical outputs, else
--rtol/--atol apply. With --checker the exported model must pass
onnx.checker.

Prints one line per finding and a summary; exits 1 on any difference.
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def attr_value(a):
    v = helper.get_attribute_value(a)
    if isinstance(v, onnx.TensorProto):
        return ("tensor", v.data_type, tuple(v.dims),
                numpy_helper.to_array(v).tobytes())
    if isinstance(v, onnx.GraphProto):
        return ("graph", v.name, len(v.node))
    if isinstance(v, list):
        return tuple(x if not isinstance(x, onnx.TensorProto)
                     else numpy_helper.to_array(x).tobytes() for x in v)
    return v


def check_type(problems, what, orig, new):
    ot, nt = orig.type.tensor_type, new.type.tensor_type
    if ot.elem_type and ot.elem_type != nt.elem_type:
        problems.append("%s: element type %d became %d" % (what, ot.elem_type, nt.elem_type))
    if ot.HasField("shape"):
        if len(ot.shape.dim) != len(nt.shape.dim):
            problems.append("%s: rank %d became %d" % (what, len(ot.shape.dim), len(nt.shape.dim)))
            return
        for i, (od, nd) in enumerate(zip(ot.shape.dim, nt.shape.dim)):
            if od.HasField("dim_value") and od.dim_value != nd.dim_value:
                problems.append("%s: dim %d %d became %s" % (what, i, od.dim_value, nd))
            if od.HasField("dim_param") and od.dim_param != nd.dim_param:
                problems.append("%s: dim %d '%s' became %s" % (what, i, od.dim_param, nd))


def compare_structure(orig, new, io_types=True):
    problems = []
    for field in ("ir_version", "producer_name", "producer_version", "domain",
                  "model_version", "doc_string"):
        if getattr(orig, field) != getattr(new, field):
            problems.append("model %s: %r became %r" % (field, getattr(orig, field), getattr(new, field)))
    if {(o.domain, o.version) for o in orig.opset_import} != \
            {(o.domain, o.version) for o in new.opset_import}:
        problems.append("opset_import differs")
    if {(p.key, p.value) for p in orig.metadata_props} != \
            {(p.key, p.value) for p in new.metadata_props}:
        problems.append("metadata_props differ")
    og, ng = orig.graph, new.graph
    if og.name != ng.name or og.doc_string != ng.doc_string:
        problems.append("graph name or doc string differs")
    for kind in ("input", "output"):
        on = [v.name for v in getattr(og, kind)]
        nn = [v.name for v in getattr(ng, kind)]
        if on != nn:
            problems.append("graph %ss %s became %s" % (kind, on, nn))
            continue
        if io_types:
            for o, n in zip(getattr(og, kind), getattr(ng, kind)):
                check_type(problems, "%s '%s'" % (kind, o.name), o, n)
    onodes = {tuple(n.output): n for n in og.node}
    nnodes = {tuple(n.output): n for n in ng.node}
    for key in onodes.keys() - nnodes.keys():
        problems.append("node %s (%s) is missing" % (onodes[key].name, onodes[key].op_type))
    for key in nnodes.keys() - onodes.keys():
        problems.append("node %s (%s) is new" % (nnodes[key].name, nnodes[key].op_type))
    for key in onodes.keys() & nnodes.keys():
        o, n = onodes[key], nnodes[key]
        for field in ("op_type", "domain", "name", "doc_string"):
            if getattr(o, field) != getattr(n, field):
                problems.append("node %s: %s %r became %r" % (o.name, field, getattr(o, field), getattr(n, field)))
        if list(o.input) != list(n.input):
            problems.append("node %s: inputs %s became %s" % (o.name, list(o.input), list(n.input)))
        oa = {a.name: attr_value(a) for a in o.attribute}
        na = {a.name: attr_value(a) for a in n.attribute}
        if oa != na:
            problems.append("node %s: attributes %s became %s" % (o.name, sorted(oa), sorted(na)))
    oinit = {t.name: t for t in og.initializer}
    ninit = {t.name: t for t in ng.initializer}
    if oinit.keys() != ninit.keys():
        problems.append("initializers %s missing, %s new" % (
            sorted(oinit.keys() - ninit.keys())[:5], sorted(ninit.keys() - oinit.keys())[:5]))
    for name in oinit.keys() & ninit.keys():
        o, n = oinit[name], ninit[name]
        if o.data_type != n.data_type or list(o.dims) != list(n.dims):
            problems.append("initializer %s: type/dims changed" % name)
        elif numpy_helper.to_array(o).tobytes() != numpy_helper.to_array(n).tobytes():
            problems.append("initializer %s: data changed" % name)
    return problems


NP_TYPES = {1: np.float32, 10: np.float16, 11: np.float64, 6: np.int32,
            7: np.int64, 9: np.bool_, 2: np.uint8, 3: np.int8}


def make_inputs(model, files, seed, dim):
    inits = {t.name for t in model.graph.initializer}
    inputs = [v for v in model.graph.input if v.name not in inits]
    if files:
        return {v.name: np.load(f) for v, f in zip(inputs, files)}
    rng = np.random.default_rng(seed)
    feeds = {}
    for v in inputs:
        tt = v.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else dim for d in tt.shape.dim]
        dtype = NP_TYPES[tt.elem_type]
        if np.issubdtype(dtype, np.floating):
            feeds[v.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[v.name] = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            feeds[v.name] = rng.integers(0, 10, shape).astype(dtype)
    return feeds


def run(path, feeds):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return names, session.run(names, feeds)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("original")
    ap.add_argument("exported")
    ap.add_argument("--structure", action="store_true")
    ap.add_argument("--no-io-types", action="store_true",
                    help="do not compare graph input/output types (models "
                         "whose I/O were converted)")
    ap.add_argument("--checker", action="store_true")
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--inputs", nargs="*", default=[])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--scale-tol", type=float, default=None,
                    help="instead of rtol/atol: max |error| <= X * max "
                         "|reference| per output (whole models)")
    ap.add_argument("--against", nargs="*", default=[],
                    help="also compare the exported model's outputs with "
                         "these .npy files (in output order), e.g. mp-run's")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args()
    problems = []
    orig = onnx.load(args.original, load_external_data=False)
    new = onnx.load(args.exported, load_external_data=False)
    if args.checker:
        try:
            onnx.checker.check_model(args.exported, full_check=False)
            print("checker: ok")
        except Exception as e:  # noqa: BLE001 - report whatever it raised
            problems.append("checker: %s" % str(e).splitlines()[0])
    if args.structure:
        found = compare_structure(orig, new, not args.no_io_types)
        problems += found
        print("structure: %d nodes, %d initializers%s" % (
            len(new.graph.node), len(new.graph.initializer),
            ", identical" if not found else ", %d differences" % len(found)))
    if args.run:
        feeds = make_inputs(orig, args.inputs, args.seed, args.dim)
        onames, oout = run(args.original, feeds)
        nnames, nout = run(args.exported, feeds)
        pairs = list(zip(onames, oout, nout))
        for i, f in enumerate(args.against):
            pairs.append(("%s vs %s" % (nnames[i], f), np.load(f), nout[i]))
        for name, a, b in pairs:
            if a.shape != b.shape:
                problems.append("output %s: shape %s became %s" % (name, a.shape, b.shape))
                continue
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            nonfinite = int(np.count_nonzero(~np.isfinite(b64)))
            if args.exact:
                same = np.array_equal(a, b, equal_nan=True) and a.dtype == b.dtype
                print("output %s: %s" % (name, "bit-identical" if same else "DIFFERENT"))
                if not same:
                    problems.append("output %s differs" % name)
            else:
                err = float(np.max(np.abs(a64 - b64))) if a.size else 0.0
                if args.scale_tol is not None:
                    scale = float(np.max(np.abs(a64))) if a.size else 0.0
                    scaled = err / scale if scale > 0 else err
                    ok = scaled <= args.scale_tol and nonfinite == 0
                    print("output %s: max abs error %.3g, scaled %.3g, "
                          "non-finite %d: %s" % (name, err, scaled, nonfinite,
                                                 "ok" if ok else "FAIL"))
                else:
                    ok = np.allclose(b64, a64, rtol=args.rtol, atol=args.atol,
                                     equal_nan=True)
                    print("output %s: max abs error %.3g, non-finite %d: %s" % (
                        name, err, nonfinite, "ok" if ok else "FAIL"))
                if not ok:
                    problems.append("output %s out of tolerance" % name)
    for p in problems:
        print("DIFFERENCE: " + p)
    print("%d differences" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
