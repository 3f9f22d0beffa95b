#!/usr/bin/env python3
"""Writes the binary ONNX models of the importer tests.

The ONNX 1.12 text syntax has no node names, doc strings, metadata, raw_data,
external data, TENSORS / TYPE_PROTO attributes or sequence / optional types,
so the tests that need them build their model here, at test time:

    gen_model.py KIND OUTPUT.onnx

KIND is one of: names, attributes, initializers, external, ir3.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def model(graph, opsets=(("", 13),), **kwargs):
    m = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
        **kwargs)
    m.ir_version = kwargs.get("ir_version", 8)
    return m


def names():
    """Node names (locations), doc strings and model metadata."""
    x = helper.make_tensor_value_info("input.1", F, ["batch", 3, 8, 8])
    x.doc_string = "the image"
    y = helper.make_tensor_value_info("logits", F, ["batch", 4, 1, 1])
    y.doc_string = "the scores"
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "conv1.weight")
    w.doc_string = "conv weights"
    nodes = [
        helper.make_node("Conv", ["input.1", "conv1.weight"], ["conv1.out"],
                         name="/layer1/conv1/Conv", pads=[1, 1, 1, 1],
                         doc_string="a 3x3 convolution"),
        helper.make_node("Relu", ["conv1.out"], ["relu.out"], name="relu_1"),
        helper.make_node("GlobalAveragePool", ["relu.out"], ["logits"], name=""),
        helper.make_node("Abs", ["relu.out"], ["unused"], name="custom::abs/0"),
    ]
    g = helper.make_graph(nodes, "named_graph", [x], [y], [w],
                          doc_string="a graph with names")
    m = model(g, producer_name="gen_model.py", producer_version="1.2.3",
              domain="org.mixprec.test", model_version=42,
              doc_string="a model with metadata")
    helper.set_model_props(m, {"author": "mixprec", "license": "MIT"})
    return m


def attributes():
    """TENSORS and TYPE_PROTO attributes; sequence and optional types."""
    x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2])
    seq = helper.make_value_info(
        "s", helper.make_sequence_type_proto(
            helper.make_tensor_type_proto(F, [None, 3])))
    opt = helper.make_value_info(
        "o", helper.make_optional_type_proto(
            helper.make_tensor_type_proto(TensorProto.INT8, [4])))
    out = helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2])
    t1 = helper.make_tensor("t1", TensorProto.INT64, [2], [5, 6])
    t2 = helper.make_tensor("t2", TensorProto.UINT16, [1], [7])
    nodes = [
        helper.make_node(
            "Op", ["x", "s", "o"], ["z"], domain="com.example",
            tensors=[t1, t2],
            type=helper.make_tensor_type_proto(TensorProto.BFLOAT16, [2, None])),
        helper.make_node("Identity", ["s"], ["s2"]),
        helper.make_node("Abs", ["x"], ["y"]),
    ]
    g = helper.make_graph(nodes, "attributes", [x, seq, opt],
                          [out, helper.make_value_info(
                              "s2", helper.make_sequence_type_proto(
                                  helper.make_tensor_type_proto(F, [None, 3])))])
    return model(g, opsets=(("", 13), ("com.example", 1)))


def initializers():
    """Initializers in every storage: raw_data (small and large), typed
    fields, bools, doc strings; one is also a graph input (a default)."""
    x = helper.make_tensor_value_info("x", F, [4])
    # Also listed as an input: its initializer is the default value.
    bias_in = helper.make_tensor_value_info("bias", F, [4])
    y = helper.make_tensor_value_info("y", F, [4])
    raw_small = numpy_helper.from_array(np.arange(4, dtype=np.float32), "raw_small")
    raw_large = numpy_helper.from_array(
        np.arange(512, dtype=np.float32).reshape(128, 4), "raw_large")
    typed = helper.make_tensor("typed", F, [4], [0.5, 1.5, 2.5, 3.5])
    int8 = helper.make_tensor("int8", TensorProto.INT8, [3], [-1, 0, 127])
    flags = numpy_helper.from_array(np.array([True, False, True]), "flags")
    bias = helper.make_tensor("bias", F, [4], [1, 1, 1, 1])
    bias.doc_string = "default bias"
    i64 = numpy_helper.from_array(np.array([[1, -2]], np.int64), "i64")
    nodes = [
        helper.make_node("Add", ["x", "raw_small"], ["a"]),
        helper.make_node("Add", ["a", "typed"], ["b"]),
        helper.make_node("Add", ["b", "bias"], ["y"]),
        helper.make_node("MatMul", ["raw_large", "x"], ["big"]),
    ]
    g = helper.make_graph(nodes, "initializers", [x, bias_in], [y],
                          [raw_small, raw_large, typed, int8, flags, bias, i64])
    return model(g)


def external(path):
    """A weight in an external data file next to the model."""
    import os
    x = helper.make_tensor_value_info("x", F, [2, 3])
    y = helper.make_tensor_value_info("y", F, [2, 3])
    w = numpy_helper.from_array(
        np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5, "w")
    data = os.path.basename(path) + ".data"
    with open(os.path.join(os.path.dirname(path) or ".", data), "wb") as f:
        f.write(b"\0" * 16)  # a header the offset skips
        f.write(w.raw_data)
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", data), ("offset", "16"),
                       ("length", str(6 * 4))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    nodes = [helper.make_node("Mul", ["x", "w"], ["y"])]
    g = helper.make_graph(nodes, "external", [x], [y], [w])
    return model(g)


def ir3():
    """An IR version 3 model: initializers are also listed as inputs."""
    x = helper.make_tensor_value_info("x", F, [2])
    w_in = helper.make_tensor_value_info("w", F, [2])
    y = helper.make_tensor_value_info("y", F, [2])
    w = helper.make_tensor("w", F, [2], [3, 4])
    nodes = [helper.make_node("Mul", ["x", "w"], ["y"])]
    g = helper.make_graph(nodes, "", [w_in, x], [y], [w])
    m = model(g, opsets=(("", 8),))
    m.ir_version = 3
    return m


def main():
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "external":
        m = external(path)
    else:
        m = {"names": names, "attributes": attributes,
             "initializers": initializers, "ir3": ir3}[kind]()
    onnx.save(m, path)


if __name__ == "__main__":
    main()
