#!/usr/bin/env python3
"""Writes a model that overflows when its Exp runs in f16: x[2,64] -> MatMul
(weights ~1, so |h| reaches ~30) -> Exp (f16 overflows above ~11) ->
ReduceSum -> Log, next to a harmless MatMul -> Relu branch; and its input."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(3)
w1 = rng.standard_normal((64, 32)).astype(np.float32)
w2 = (rng.standard_normal((64, 16)) * 0.1).astype(np.float32)
nodes = [
    helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm"),
    helper.make_node("Exp", ["h"], ["e"], name="exp"),
    helper.make_node("ReduceSum", ["e", "axes"], ["s"], name="sum", keepdims=1),
    helper.make_node("Log", ["s"], ["y"], name="log"),
    helper.make_node("MatMul", ["x", "w2"], ["g"], name="mm2"),
    helper.make_node("Relu", ["g"], ["z"], name="relu"),
]
graph = helper.make_graph(
    nodes, "overflow",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1]),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 16])],
    [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
     numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, out)
x = rng.standard_normal((2, 64)).astype(np.float32)
np.save(os.path.splitext(out)[0] + ".input.npy", x)
