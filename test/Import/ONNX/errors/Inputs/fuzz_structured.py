"""Structured fuzzing of the ONNX importer: random but well-formed protobufs
whose contents are wrong (op types, input counts, attribute types and values,
tensor dims and data types, opsets, shapes).

    fuzz_structured.py MP_OPT WORKDIR [--count N] [--seed S]

Same contract as fuzz_import.py: exit 0 or 1, no crash report, an output file
exactly on success.
"""
import argparse
import concurrent.futures
import os
import random
import shutil
import sys

import numpy as np
from onnx import AttributeProto, TensorProto, defs, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_import  # noqa: E402
import make_bad  # noqa: E402

OPS = ("Abs Relu Add Sub Mul Div Pow PRelu Equal Less And Not Sum Max Mean "
       "Where MatMul Gemm Einsum Conv ConvTranspose MaxPool AveragePool "
       "LpPool GlobalAveragePool GlobalMaxPool GlobalLpPool LRN Softmax "
       "LogSoftmax Hardmax ReduceSum ReduceMean ReduceMax ReduceL2 ArgMax "
       "ArgMin CumSum LSTM GRU RNN Reshape Transpose Flatten Squeeze "
       "Unsqueeze Concat Split Slice Gather GatherElements Shape Size Expand "
       "Tile Pad Resize DepthToSpace SpaceToDepth Dropout TopK NonZero "
       "Constant ConstantOfShape Range Cast CastLike Clip IsNaN IsInf Identity "
       "BatchNormalization InstanceNormalization LayerNormalization "
       "LeakyRelu Elu Selu HardSigmoid Shrink If Loop Scan "
       "SoftmaxCrossEntropyLoss NegativeLogLikelihoodLoss Mod "
       "Upsample Compress OneHot ScatterND NotAnOp").split()
ATTRS = ("axis axes keepdims perm kernel_shape pads strides dilations group "
         "auto_pad alpha beta gamma to value value_int value_ints value_float "
         "epsilon direction hidden_size split transA transB mode "
         "output_shape output_padding blocksize ceil_mode "
         "count_include_pad equation largest sorted k p size "
         "then_branch else_branch body reduction ignore_index").split()
# Share of nodes built to satisfy their schema (so that they get past the
# importer's checks into shape inference and the typed ops).
SCHEMA_RATE = 0.85
OPSET_FOR_SCHEMA = 13
# Whether the model being built has well-formed tensors and only operators
# that exist at its opset (most do: they reach deeper).
SANE = True


def rand_dims(rng):
    r = rng.random()
    rank = rng.choice([0, 1, 1, 2, 2, 3, 4, 4, 5])
    dims = []
    for _ in range(rank):
        x = rng.random()
        if r < 0.05 and x < 0.3:
            dims.append(rng.choice([-1, -7, 1 << 33, 1 << 62]))
        else:
            dims.append(rng.choice([0, 1, 1, 2, 3, 4, 8]))
    return dims


def rand_tensor(rng, name):
    dims = [d for d in rand_dims(rng) if 0 <= d <= 8]
    n = int(np.prod(dims)) if dims else 1
    if SANE:
        # Well-formed data, so that the model gets past the initializers.
        dt = rng.choice([TensorProto.FLOAT, TensorProto.FLOAT,
                         TensorProto.INT64, TensorProto.INT64,
                         TensorProto.INT32, TensorProto.BOOL])
        if dt == TensorProto.FLOAT:
            values = [rng.choice([0.0, 1.0, -2.5, 3.0]) for _ in range(n)]
        elif dt == TensorProto.BOOL:
            values = [rng.random() < 0.5 for _ in range(n)]
        else:
            values = [rng.choice([-3, -1, 0, 1, 2, 3, 1 << 40])
                      if dt == TensorProto.INT64 else rng.randrange(-3, 4)
                      for _ in range(n)]
        return helper.make_tensor(name, dt, dims, values)
    dt = rng.choice([TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.INT64,
                     TensorProto.INT32, TensorProto.BOOL, TensorProto.FLOAT16,
                     TensorProto.DOUBLE, TensorProto.UINT8, TensorProto.STRING,
                     TensorProto.COMPLEX64, TensorProto.BFLOAT16, 0, 21, 99])
    t = TensorProto()
    t.name = name
    t.data_type = dt
    t.dims.extend(dims)
    how = rng.random()
    if dt == TensorProto.STRING:
        t.string_data.extend([b"s"] * (n + rng.choice([0, 0, 1, -1])))
    elif how < 0.6:
        size = {1: 4, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 2: 1, 14: 8,
                16: 2}.get(dt, 4)
        extra = rng.choice([0, 0, 0, 1, -1])
        t.raw_data = bytes(rng.getrandbits(8)
                           for _ in range(max(0, n * size + extra)))
    elif how < 0.7:
        t.float_data.extend([1.0] * n)
    elif how < 0.8:
        t.int64_data.extend([rng.randrange(-3, 5) for _ in range(n)])
    elif how < 0.9:
        t.int32_data.extend([rng.randrange(-3, 5) for _ in range(n)])
    else:
        t.data_location = TensorProto.EXTERNAL
        for k, v in [("location", rng.choice(["w.bin", "", "a/../b", "/x"])),
                     ("offset", rng.choice(["0", "-1", "x", "99999999999"])),
                     ("length", rng.choice(["4", "0", "18446744073709551615"]))]:
            if rng.random() < 0.8:
                e = t.external_data.add()
                e.key, e.value = k, v
    if rng.random() < 0.05:
        t.segment.begin = 0
    return t


def rand_graph(rng, depth):
    inputs = []
    for name in ["X", "W"][: rng.randrange(1, 3)]:
        elem = rng.choice([TensorProto.FLOAT] * 4 +
                          [TensorProto.INT64, TensorProto.BOOL] +
                          ([] if SANE else [0, 50]))
        if rng.random() < 0.1:
            inputs.append(helper.make_tensor_sequence_value_info(
                name, TensorProto.FLOAT, None))
        else:
            dims = rand_dims(rng)
            dims = [rng.choice([d, "N"]) if rng.random() < 0.2 else d
                    for d in dims]
            inputs.append(helper.make_tensor_value_info(name, elem, dims))
    inits = [rand_tensor(rng, n)
             for n in rng.sample(["B", "C", "I", "K"], rng.randrange(0, 4))]
    nodes = []
    produced = []
    for i in range(rng.randrange(1, 5)):
        op = rng.choice(OPS)
        avail = [v.name for v in inputs] + [t.name for t in inits] + produced
        nin = rng.choice([0, 1, 1, 2, 2, 3, 4, 6])
        ins = [rng.choice(avail + [""]) if avail else "" for _ in range(nin)]
        outs = ["v%d_%d" % (depth, i)] + (
            ["v%d_%d_b" % (depth, i)] if rng.random() < 0.3 else [])
        node = None
        if SANE or rng.random() < SCHEMA_RATE:
            node = schema_node(rng, op, OPSET_FOR_SCHEMA, avail, outs,
                               "n%d_%d" % (depth, i), depth)
        if node is None and SANE:
            continue
        if node is None:
            node = helper.make_node(op, ins, outs, name="n%d_%d" % (depth, i))
            for _ in range(rng.randrange(0, 4)):
                node.attribute.append(rand_attr(rng, depth))
            if rng.random() < 0.05:
                node.domain = rng.choice(["ai.onnx", "com.example",
                                          "ai.onnx.ml"])
        nodes.append(node)
        produced.extend(o for o in node.output if o)
    outputs = []
    if not produced:
        nodes.append(helper.make_node("Identity", ["X"], ["v%d_id" % depth],
                                      name="n%d_id" % depth))
        produced = ["v%d_id" % depth]
    for name in rng.sample(produced, rng.randrange(1, min(3, len(produced)) + 1)):
        if rng.random() < 0.5:
            outputs.append(helper.make_tensor_value_info(
                name, rng.choice([TensorProto.FLOAT, TensorProto.INT64, 0]),
                rand_dims(rng)))
        else:
            vi = helper.ValueInfoProto()
            vi.name = name
            outputs.append(vi)
    vinfo = []
    for name in produced:
        if rng.random() < 0.2:
            vinfo.append(helper.make_tensor_value_info(
                name, rng.choice([TensorProto.FLOAT, TensorProto.INT64, 1, 9]),
                rand_dims(rng)))
    g = helper.make_graph(nodes, "g%d" % depth, inputs if depth == 0 else [],
                          outputs, inits, value_info=vinfo)
    return g


def schema_node(rng, op, version, avail, outs, name, depth):
    """A node that satisfies op's schema: input/output counts in range,
    required inputs named, attributes of the declared types (random values)."""
    try:
        schema = defs.get_schema(op, version)
    except Exception:  # noqa: BLE001 - not an operator at this opset
        return None
    nin = rng.randint(schema.min_input, min(schema.max_input,
                                            schema.min_input + 3))
    ins = []
    for i in range(nin):
        optional = (i < len(schema.inputs) and schema.inputs[i].option ==
                    defs.OpSchema.FormalParameterOption.Optional)
        ins.append("" if optional and rng.random() < 0.3 or not avail
                   else rng.choice(avail))
    nout = rng.randint(schema.min_output, min(schema.max_output,
                                              schema.min_output + 2))
    outs = (outs + ["%s_o%d" % (outs[0], i) for i in range(5)])[:nout]
    node = helper.make_node(op, ins, outs, name=name)
    for aname, attr in sorted(schema.attributes.items()):
        if not attr.required and rng.random() < 0.6:
            continue
        t = int(attr.type)
        a = None
        if t == AttributeProto.INT:
            a = helper.make_attribute(aname, rng.choice([-2, -1, 0, 1, 1, 2,
                                                         3, 1 << 40]))
        elif t == AttributeProto.FLOAT:
            a = helper.make_attribute(aname, rng.choice([0.0, 0.5, -1.0]))
        elif t == AttributeProto.INTS:
            a = helper.make_attribute(
                aname, [rng.choice([-1, 0, 1, 1, 2, 3, 1 << 40])
                        for _ in range(rng.randrange(0, 6))])
        elif t == AttributeProto.FLOATS:
            a = helper.make_attribute(aname, [0.5] * rng.randrange(0, 4))
        elif t == AttributeProto.STRING:
            a = helper.make_attribute(aname, rng.choice(
                [b"NOTSET", b"SAME_UPPER", b"VALID", b"ij,jk->ik", b"i,i",
                 b"forward", b"bidirectional", b"nearest", b"", b"mean",
                 b"Relu", b"x"]))
        elif t == AttributeProto.STRINGS:
            a = helper.make_attribute(aname, [b"Relu", b"Tanh"][
                : rng.randrange(0, 3)])
        elif t == AttributeProto.TENSOR:
            a = helper.make_attribute(aname, rand_tensor(rng, ""))
        elif t == AttributeProto.GRAPH:
            if depth >= 2:
                return None
            a = helper.make_attribute(aname, rand_graph(rng, depth + 1))
        else:
            continue
        node.attribute.append(a)
    return node


def rand_attr(rng, depth):
    name = rng.choice(ATTRS)
    kind = rng.randrange(9)
    if kind == 0:
        return helper.make_attribute(name, rng.randrange(-3, 5))
    if kind == 1:
        return helper.make_attribute(name, rng.choice([0.5, -1.0, 1e30]))
    if kind == 2:
        return helper.make_attribute(
            name, [rng.randrange(-2, 4) for _ in range(rng.randrange(0, 7))])
    if kind == 3:
        return helper.make_attribute(name, [0.5, 1.5])
    if kind == 4:
        return helper.make_attribute(
            name, rng.choice([b"NOTSET", b"SAME_UPPER", b"VALID", b"ij,jk->ik",
                              b"forward", b"nearest", b"", b"mean"]))
    if kind == 5:
        return helper.make_attribute(name, rand_tensor(rng, ""))
    if kind == 6 and depth < 2:
        return helper.make_attribute(name, rand_graph(rng, depth + 1))
    if kind == 7:
        a = AttributeProto()
        a.name = name
        a.type = rng.choice([0, 9, 10, 11, 12, 13, 14])
        return a
    return helper.make_attribute(name, [b"a", b"b"])


def rand_model(rng):
    global OPSET_FOR_SCHEMA, SANE
    SANE = rng.random() < 0.6
    version = rng.choice([1, 6, 7, 9, 11, 13, 13, 13, 15, 17])
    OPSET_FOR_SCHEMA = version
    g = rand_graph(rng, 0)
    opsets = [helper.make_opsetid("", version)]
    if rng.random() < 0.2:
        opsets.append(helper.make_opsetid("com.example", 1))
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = rng.choice([3, 7, 8, 8, 8, 9])
    return m


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mp_opt")
    parser.add_argument("workdir")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    rng = random.Random(args.seed)
    cases = []
    for i in range(args.count):
        m = rand_model(rng)
        cases.append(("s%d" % i, ".onnx", m.SerializeToString()))
    failures = []
    imported = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(fuzz_import.run_one, args.mp_opt, args.workdir,
                               *c) for c in cases]
        for f in futures:
            rc, problem = f.result()
            imported += rc == 0
            if problem:
                failures.append(problem)
    print("structured fuzz: %d models (%d imported), %d failures" %
          (len(cases), imported, len(failures)))
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
