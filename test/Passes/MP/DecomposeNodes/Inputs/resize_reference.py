"""Resize forms that mp-decompose-nodes computes as matrix products, against
ONNX's reference implementation (onnx.reference).

For each case: a Resize-19 model (antialias and/or keep_aspect_ratio_policy,
with or without axes, every coordinate transformation mode but
tf_crop_and_resize), compiled with mp-opt --emit=plan and run with mp-run on
random data; prints one line per case, "<case>: ok" when every output is
within 1e-5 of the reference's.

Usage: resize_reference.py WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

workdir = sys.argv[1]
os.makedirs(workdir, exist_ok=True)

CASES = [
    # name, input shape, attributes, scales, sizes
    ("linear_antialias_down", (1, 2, 13, 17),
     dict(mode="linear", antialias=1), [1, 1, 0.4, 0.6], None),
    ("cubic_antialias_down", (1, 2, 13, 17),
     dict(mode="cubic", antialias=1), [1, 1, 0.3, 0.55], None),
    ("cubic_antialias_sizes_exclude", (2, 1, 16, 11),
     dict(mode="cubic", antialias=1, exclude_outside=1, cubic_coeff_a=-0.5),
     None, [2, 1, 5, 4]),
    ("linear_antialias_up_align", (1, 1, 6, 7),
     dict(mode="linear", antialias=1,
          coordinate_transformation_mode="align_corners"),
     [1, 1, 2.5, 1.5], None),
    ("linear_antialias_axes", (2, 3, 12, 10),
     dict(mode="linear", antialias=1, axes=[3, 2],
          coordinate_transformation_mode="pytorch_half_pixel"),
     [0.5, 0.35], None),
    ("nearest_not_larger", (1, 2, 9, 7),
     dict(mode="nearest", keep_aspect_ratio_policy="not_larger", axes=[2, 3],
          nearest_mode="round_prefer_ceil"),
     None, [5, 6]),
    ("linear_not_smaller_symmetric", (1, 2, 9, 7),
     dict(mode="linear", keep_aspect_ratio_policy="not_smaller", axes=[2, 3],
          coordinate_transformation_mode="half_pixel_symmetric"),
     None, [4, 6]),
    ("cubic_antialias_not_larger_asymmetric", (1, 1, 10, 14),
     dict(mode="cubic", antialias=1, keep_aspect_ratio_policy="not_larger",
          axes=[2, 3], coordinate_transformation_mode="asymmetric"),
     None, [7, 3]),
]

rng = np.random.default_rng(0)
for name, shape, attrs, scales, sizes in CASES:
    axes = attrs.get("axes")
    count = len(axes) if axes else len(shape)
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)]
    inits = []
    if scales is not None:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [count],
                                        scales))
        node_inputs = ["X", "", "scales"]
    else:
        inits.append(helper.make_tensor("sizes", TensorProto.INT64, [count],
                                        sizes))
        node_inputs = ["X", "", "", "sizes"]
    node = helper.make_node("Resize", node_inputs, ["Y"], **attrs)
    output = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    graph = helper.make_graph([node], name, inputs, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    # The output's shape from ONNX's shape inference.
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    x = rng.standard_normal(shape).astype(np.float32)
    (expected,) = ReferenceEvaluator(model).run(None, {"X": x})
    base = os.path.join(workdir, name)
    onnx.save(model, base + ".onnx")
    np.save(base + ".x.npy", x)
    np.save(base + ".y.npy", expected.astype(np.float32))
    subprocess.run(["mp-opt", base + ".onnx", "--emit=plan", "-o",
                    base + ".mpplan"], check=True)
    run = subprocess.run(["mp-run", base + ".mpplan", base + ".x.npy",
                          "--compare", base + ".y.npy", "--rtol=1e-5",
                          "--atol=1e-5"], capture_output=True, text=True)
    ok = run.returncode == 0 and "output Y: ok" in run.stdout
    print(f"{name}: {'ok' if ok else 'MISMATCH'} {list(expected.shape)}")
    if not ok:
        print(run.stdout, run.stderr)
