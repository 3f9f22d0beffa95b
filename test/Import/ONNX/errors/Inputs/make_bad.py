"""Writes small ONNX models, valid or broken in one specific way, for the
importer's bad-input tests.

    make_bad.py CASE OUT [OUT2]

CASE names one model (see CASES below); OUT is the .onnx file to write. Every
model is deterministic: no randomness without a fixed seed, no timestamps.
"""
import os
import random
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def opset(version=13, domain=""):
    return helper.make_opsetid(domain, version)


def model(graph, opsets=None, ir_version=8):
    m = helper.make_model(graph, opset_imports=opsets or [opset()],
                          producer_name="make_bad")
    m.ir_version = ir_version
    return m


def tensor(name, dims, value=None):
    """A float initializer with deterministic data 0, 1, 2, ... (or value)."""
    n = int(np.prod(dims)) if dims else 1
    data = np.arange(n, dtype=np.float32) if value is None else value
    return numpy_helper.from_array(np.asarray(data, np.float32).reshape(dims),
                                   name)


def vi(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


def conv_model():
    """X -> Conv(conv1) -> Relu(relu1) -> Y with 4x3x3x3 weights."""
    w = tensor("W", [4, 3, 3, 3])
    b = tensor("B", [4], [0.5, 1.5, 2.5, 3.5])
    conv = helper.make_node("Conv", ["X", "W", "B"], ["C"], name="conv1",
                            pads=[1, 1, 1, 1])
    relu = helper.make_node("Relu", ["C"], ["Y"], name="relu1")
    g = helper.make_graph([conv, relu], "convnet", [vi("X", [1, 3, 8, 8])],
                          [vi("Y", [1, 4, 8, 8])], [w, b])
    return model(g)


def add_model():
    """Y = Relu(X + W): a tiny model with one initializer."""
    w = tensor("W", [2, 3], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    add = helper.make_node("Add", ["X", "W"], ["S"], name="add1")
    relu = helper.make_node("Relu", ["S"], ["Y"], name="relu1")
    g = helper.make_graph([add, relu], "addnet", [vi("X", [2, 3])],
                          [vi("Y", [2, 3])], [w])
    return model(g)


def if_model(then_input):
    """An If node whose then-branch reads `then_input`."""
    then_out = vi("t_out", [2, 3])
    else_out = vi("e_out", [2, 3])
    then_g = helper.make_graph(
        [helper.make_node("Relu", [then_input], ["t_out"], name="then_relu")],
        "then_branch", [], [then_out])
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["X"], ["e_out"], name="else_neg")],
        "else_branch", [], [else_out])
    node = helper.make_node("If", ["cond"], ["Y"], name="if1",
                            then_branch=then_g, else_branch=else_g)
    g = helper.make_graph([node], "ifnet",
                          [vi("cond", [], TensorProto.BOOL), vi("X", [2, 3])],
                          [vi("Y", [2, 3])])
    return model(g)


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def save_external(m, path, location="weights.bin"):
    """Saves `m` with every initializer in the external file `location`."""
    onnx.save_model(m, path, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=location,
                    size_threshold=0, convert_attribute=False)


def set_external(t, location, offset=None, length=None):
    """Marks initializer `t` as external data at `location` (no file)."""
    t.ClearField("raw_data")
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    del t.external_data[:]
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for k, v in entries:
        e = t.external_data.add()
        e.key, e.value = k, v


# --- cases ----------------------------------------------------------------

def case_valid(out):
    save(conv_model(), out)


def case_valid_add(out):
    save(add_model(), out)


def case_truncated(out):
    data = conv_model().SerializeToString()
    # Half-way through: inside the graph field, so never a message boundary.
    with open(out, "wb") as f:
        f.write(data[: len(data) // 2])


def case_random(out):
    rng = random.Random(20240229)
    # 0xff 0xff ...: a tag with wire type 7, which protobuf never accepts.
    data = b"\xff\xff" + bytes(rng.getrandbits(8) for _ in range(254))
    with open(out, "wb") as f:
        f.write(data)


def case_text(out):
    with open(out, "w") as f:
        f.write("This is a plain text file, not an ONNX model.\n")


def case_no_graph(out):
    m = onnx.ModelProto()
    m.ir_version = 8
    m.producer_name = "make_bad"
    m.opset_import.append(opset())
    save(m, out)


def case_missing_initializer(out):
    m = conv_model()
    # Drop W: conv1 now reads a name nothing defines.
    del m.graph.initializer[0]
    save(m, out)


def case_undefined_output(out):
    m = conv_model()
    m.graph.output.append(vi("Z", [1]))
    save(m, out)


def case_cycle(out):
    # a1: A = Add(X, C); r1: B = Relu(A); n1: C = Neg(B); C feeds a1.
    nodes = [
        helper.make_node("Add", ["X", "C"], ["A"], name="a1"),
        helper.make_node("Relu", ["A"], ["B"], name="r1"),
        helper.make_node("Neg", ["B"], ["C"], name="n1"),
    ]
    g = helper.make_graph(nodes, "cyclic", [vi("X", [2])], [vi("B", [2])])
    save(model(g), out)


def case_self_loop(out):
    nodes = [helper.make_node("Add", ["X", "A"], ["A"], name="selfadd")]
    g = helper.make_graph(nodes, "selfloop", [vi("X", [2])], [vi("A", [2])])
    save(model(g), out)


def case_out_of_order(out):
    m = conv_model()
    nodes = list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend(reversed(nodes))  # relu1 before conv1
    save(m, out)


def case_duplicate_output(out):
    m = add_model()
    m.graph.node.append(helper.make_node("Neg", ["X"], ["S"], name="neg1"))
    save(m, out)


def case_duplicate_initializer(out):
    m = add_model()
    m.graph.initializer.append(tensor("W", [2, 3]))
    save(m, out)


def case_duplicate_input(out):
    m = add_model()
    m.graph.input.append(vi("X", [2, 3]))
    save(m, out)


def case_unknown_domain(out):
    m = add_model()
    m.graph.node[1].domain = "com.example"
    m.graph.node[1].op_type = "FancyRelu"
    save(m, out)


def case_opset99(out):
    m = add_model()
    m.opset_import[0].version = 99
    save(m, out)


def case_opset0(out):
    m = add_model()
    m.opset_import[0].version = 0
    save(m, out)


def case_conv_rank2_weight(out):
    m = conv_model()
    m.graph.initializer[0].CopyFrom(tensor("W", [4, 27]))
    save(m, out)


def case_raw_data_size(out):
    m = add_model()
    w = m.graph.initializer[0]
    w.raw_data = w.raw_data[:10]  # 10 bytes for 2x3 floats (24 bytes)
    save(m, out)


def case_negative_dim(out):
    m = add_model()
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    del w.dims[:]
    w.dims.extend([-2, 3])
    save(m, out)


def case_absurd_dim(out):
    # 2^50 floats, no data: must be rejected before anything is allocated.
    m = add_model()
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    del w.dims[:]
    w.dims.extend([1 << 50])
    save(m, out)


def case_absurd_dims_product(out):
    # Each dim is fine, their product (2^60) is not.
    m = add_model()
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    del w.dims[:]
    w.dims.extend([1 << 30, 1 << 30])
    save(m, out)


def case_absurd_input_dim(out):
    m = add_model()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1 << 50
    save(m, out)


def case_absurd_input_dims_product(out):
    m = add_model()
    dims = m.graph.input[0].type.tensor_type.shape.dim
    dims[0].dim_value = 1 << 30
    dims[1].dim_value = 1 << 30
    save(m, out)


def case_external_valid(out):
    save_external(add_model(), out)


def case_external_large(out):
    # 1 MiB of weights: large enough that the importer maps the file.
    w = tensor("W", [256, 1024])
    add = helper.make_node("Add", ["X", "W"], ["Y"], name="add1")
    g = helper.make_graph([add], "bignet", [vi("X", [256, 1024])],
                          [vi("Y", [256, 1024])], [w])
    save_external(model(g), out)


def case_external_missing(out):
    save_external(add_model(), out)
    os.remove(os.path.join(os.path.dirname(out), "weights.bin"))


def case_external_dotdot(out):
    m = add_model()
    set_external(m.graph.initializer[0], "../weights.bin")
    save(m, out)


def case_external_absolute(out):
    m = add_model()
    set_external(m.graph.initializer[0], "/etc/hostname")
    save(m, out)


def case_external_short(out):
    save_external(add_model(), out)
    path = os.path.join(os.path.dirname(out), "weights.bin")
    with open(path, "r+b") as f:
        f.truncate(16)  # 24 bytes needed


def case_external_offset(out):
    # The file is long enough, but not from this offset.
    save_external(add_model(), out)
    w = onnx.load(out, load_external_data=False)
    set_external(w.graph.initializer[0], "weights.bin", offset=8, length=24)
    save(w, out)


def case_external_length(out):
    # length disagrees with the 24 bytes a 2x3 float tensor needs.
    save_external(add_model(), out)
    w = onnx.load(out, load_external_data=False)
    set_external(w.graph.initializer[0], "weights.bin", offset=0, length=8)
    save(w, out)


def case_if_undefined(out):
    save(if_model("ghost"), out)


def case_if_valid(out):
    save(if_model("X"), out)


def case_duplicate_attribute(out):
    m = conv_model()
    m.graph.node[0].attribute.append(
        helper.make_attribute("pads", [0, 0, 0, 0]))
    save(m, out)


def case_wrong_attribute_type(out):
    m = conv_model()
    # pads as one INT instead of INTS.
    del m.graph.node[0].attribute[:]
    m.graph.node[0].attribute.append(helper.make_attribute("pads", 1))
    save(m, out)


def case_missing_required_input(out):
    m = conv_model()
    del m.graph.node[0].input[1:]  # Conv with X only
    save(m, out)


def case_required_input_empty(out):
    m = conv_model()
    m.graph.node[0].input[1] = ""  # Conv(X, "", B)
    save(m, out)


def case_unknown_op(out):
    m = add_model()
    m.graph.node[1].op_type = "Frobnicate"
    save(m, out)


def case_scan_no_body(out):
    # ONNX 1.12's shape inference dereferences the missing body and crashes.
    node = helper.make_node("Scan", ["X"], ["Y"], name="scan1",
                            num_scan_inputs=1)
    g = helper.make_graph([node], "scannet", [vi("X", [2, 3])],
                          [vi("Y", [2, 3])])
    save(model(g), out)


def case_transpose_bad_perm(out):
    # ONNX 1.12's shape inference reads out of bounds on this perm.
    node = helper.make_node("Transpose", ["X"], ["Y"], name="transpose1",
                            perm=[1, 1 << 40])
    g = helper.make_graph([node], "transposenet", [vi("X", [2, 3])],
                          [vi("Y", [3, 2])])
    save(model(g), out)


def case_scan_absurd_count(out):
    # ONNX 1.12's shape inference allocates num_scan_inputs entries.
    body = helper.make_graph(
        [helper.make_node("Identity", ["s_in"], ["s_out"], name="body_id")],
        "body", [vi("s_in", [3])], [vi("s_out", [3])])
    node = helper.make_node("Scan", ["X"], ["Y"], name="scan1", body=body,
                            num_scan_inputs=1 << 40)
    g = helper.make_graph([node], "scannet", [vi("X", [2, 3])],
                          [vi("Y", [2, 3])])
    save(model(g), out)


def case_convtranspose_scalar_weight(out):
    # Passes the importer's schema checks, but ONNX 1.12's shape inference
    # crashes (SIGSEGV) on the rank-0 weight.
    w = tensor("W", [], [1.0])
    node = helper.make_node("ConvTranspose", ["X", "W"], ["Y"], name="deconv1")
    g = helper.make_graph([node], "deconvnet", [vi("X", [1, 1, 4, 4])],
                          [vi("Y", None)], [w])
    save(model(g), out)


def case_depthtospace_huge_blocksize(out):
    # blocksize^2 overflows int64 to 0 in the mp dialect's type inference.
    node = helper.make_node("DepthToSpace", ["X"], ["Y"], name="d2s1",
                            blocksize=1 << 32)
    g = helper.make_graph([node], "d2snet", [vi("X", [1, 4, 2, 2])],
                          [vi("Y", None)])
    save(model(g), out)


def nested_if_model(depth):
    """`depth` If nodes, each in the then-branch of the one before."""
    inner = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y%d" % depth], name="relu")],
        "g%d" % depth, [], [vi("Y%d" % depth, [2])])
    for level in reversed(range(depth)):
        out = "Y%d" % level
        other = helper.make_graph(
            [helper.make_node("Neg", ["X"], [out + "e"], name="neg%d" % level)],
            "e%d" % level, [], [vi(out + "e", [2])])
        node = helper.make_node("If", ["c"], [out], name="if%d" % level,
                                then_branch=inner, else_branch=other)
        inner = helper.make_graph([node], "g%d" % level, [], [vi(out, [2])])
    g = helper.make_graph(list(inner.node), "nested",
                          [vi("c", [], TensorProto.BOOL), vi("X", [2])],
                          [vi("Y0", [2])])
    return model(g)


def case_nested_40(out):
    # 40 levels: more than protobuf's default recursion limit allows.
    save(nested_if_model(40), out)


def case_nested_70(out):
    save(nested_if_model(70), out)


def case_nested_text(out):
    # 5000 nested subgraphs in ONNX text: ONNX's parser would overflow the
    # stack.
    depth = 5000
    text = ['<ir_version: 8, opset_import: ["" : 13]>',
            "g (bool c, float[2] X) => (float[2] Y) {"]
    text += [" Y = If (c) <then_branch = g%d () => (float[2] Y) {" % i
             for i in range(depth)]
    text.append(" Y = Relu(X)")
    text += [" }, else_branch = e%d () => (float[2] Y) { Y = Relu(X) }>" % i
             for i in range(depth)]
    text.append("}")
    with open(out, "w") as f:
        f.write("\n".join(text) + "\n")


CASES = {name[len("case_"):].replace("_", "-"): fn
         for name, fn in globals().items() if name.startswith("case_")}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit("usage: make_bad.py {%s} OUT" % ",".join(sorted(CASES)))
    CASES[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
