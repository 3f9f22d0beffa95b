#!/usr/bin/env python3
"""Writes misaligned ONNX models and inputs for the padding equivalence test.

mlp.onnx     x[16,1001] -> Gemm 1000 -> ReLU -> MatMul 999 (+bias) -> Tanh
             -> MatMul 1001 -> graph output (every dim off a multiple of 8)
cnn.onnx     x[2,3,20,20] -> Conv 30 (+BN, ReLU) -> MaxPool -> Conv 61 (+bias)
             -> Relu -> Conv 13 -> GlobalAveragePool -> Flatten -> Gemm 10
vocab.onnx   x[4,64] -> MatMul 96 -> Relu -> MatMul 50257 (a GPT-2-sized
             vocabulary) -> LogSoftmax
Each with <name>.input.npy; random weights, fixed seed.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, out, name, x):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))
    np.save(os.path.join(out, name + ".input.npy"), x)


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)

    def w(*shape, scale=None):
        scale = scale or 1.0 / np.sqrt(shape[-1] if len(shape) > 1 else 8)
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def init(name, array):
        return numpy_helper.from_array(array, name)

    def model(nodes, name, x_shape, y_shape, inits):
        graph = helper.make_graph(
            nodes, name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
            inits)
        return helper.make_model(graph,
                                 opset_imports=[helper.make_opsetid("", 13)])

    # MLP: hidden widths 1000, 999 and an output of 1001.
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
        helper.make_node("Relu", ["h1"], ["r1"], name="relu1"),
        helper.make_node("MatMul", ["r1", "w2"], ["h2"], name="fc2"),
        helper.make_node("Add", ["h2", "b2"], ["a2"], name="bias2"),
        helper.make_node("Tanh", ["a2"], ["t2"], name="tanh2"),
        helper.make_node("MatMul", ["t2", "w3"], ["y"], name="fc3"),
    ]
    inits = [init("w1", w(1000, 1001)), init("b1", w(1000)),
             init("w2", w(1000, 999, scale=0.03)), init("b2", w(999)),
             init("w3", w(999, 1001, scale=0.03))]
    save(model(nodes, "mlp", [16, 1001], [16, 1001], inits), out, "mlp",
         rng.standard_normal((16, 1001)).astype(np.float32))

    # CNN: 3 -> 30 -> 61 -> 13 channels.
    nodes = [
        helper.make_node("Conv", ["x", "c1"], ["h1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["h1", "s1", "bb1", "m1", "v1"],
                         ["n1"], name="bn1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "c2", "cb2"], ["h2"], name="conv2",
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["h2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "c3"], ["h3"], name="conv3"),
        helper.make_node("GlobalAveragePool", ["h3"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1),
    ]
    inits = [init("c1", w(30, 3, 3, 3, scale=0.3)), init("s1", 1 + 0.1 * w(30)),
             init("bb1", w(30)), init("m1", 0.1 * w(30)),
             init("v1", (1 + 0.1 * np.abs(w(30))).astype(np.float32)),
             init("c2", w(61, 30, 3, 3, scale=0.06)), init("cb2", w(61)),
             init("c3", w(13, 61, 1, 1, scale=0.12)),
             init("fw", w(10, 13)), init("fb", w(10))]
    save(model(nodes, "cnn", [2, 3, 20, 20], [2, 10], inits), out, "cnn",
         rng.standard_normal((2, 3, 20, 20)).astype(np.float32))

    # A classifier head with a GPT-2-sized vocabulary.
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="proj"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "emb"], ["logits"], name="lm_head"),
        helper.make_node("LogSoftmax", ["logits"], ["y"], name="log_softmax",
                         axis=-1),
    ]
    inits = [init("w1", w(64, 96)), init("emb", w(96, 50257, scale=0.1))]
    save(model(nodes, "vocab", [4, 64], [4, 50257], inits), out, "vocab",
         rng.standard_normal((4, 64)).astype(np.float32))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
