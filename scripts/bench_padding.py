#!/usr/bin/env python3
"""Tensor-core padding on the GPU: misaligned GEMMs and convolutions with and
without mp-pad-tensor-cores, against PyTorch fp16 on the same dims
(docs/padding.md, "GPU figures").

Two models with dims that are not multiples of 8, seeded weights:
  mlp   x[M, 1001] -> MatMul 1001x1001 -> Relu -> MatMul 1001x1001
  conv  x[N, 61, 56, 56] -> Conv 61->125 3x3 -> Relu -> Conv 125->61 3x3
Each is compiled with the mixed-precision pipeline twice, with padding
(the default, multiple 8) and without (pad=false). Where MLIR is:
  scripts/bench_padding.py make --mp-opt build/bin/mp-opt --dir DIR
writes DIR/<model>.onnx and DIR/<model>.{padded,unpadded}.mpplan. Where the
GPU is:
  scripts/bench_padding.py run --dir DIR --mp-run mp-run [--out padding.md]
times both plans (mp-run --repeat, inputs zero: timing does not depend on
them) and PyTorch fp16 (cuBLAS / cuDNN, channels last for the convolutions)
on the misaligned dims and on the same dims rounded up to multiples of 8,
and prints ms, TFLOPS and the speed-up of padding. `--device cpu
--backend cpu` checks the script without a GPU (not for figures).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gpu  # noqa: E402  (torch_step_times)

# name: (batch or rows, widths); every width but the 3x3 kernel misaligned.
MLP_ROWS, MLP_WIDTH = 16384, 1001
CONV_BATCH, CONV_IN, CONV_MID, CONV_HW = 64, 61, 125, 56


def round8(n):
    return (n + 7) // 8 * 8


def mlp_flops(width):
    return 2 * 2 * MLP_ROWS * width * width


def conv_flops(cin, cmid):
    return 2 * 2 * CONV_BATCH * CONV_HW * CONV_HW * cin * cmid * 9


def make_models(dir_):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def init(name, shape, fan_in):
        w = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
        return numpy_helper.from_array(w, name)

    w = MLP_WIDTH
    mlp = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2")],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [MLP_ROWS, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [MLP_ROWS, w])],
        [init("w1", [w, w], w), init("w2", [w, w], w)])
    conv = helper.make_graph(
        [helper.make_node("Conv", ["x", "k1", "b1"], ["h"], name="conv1",
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("Conv", ["r", "k2", "b2"], ["y"], name="conv2",
                          kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
        "conv",
        [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, [CONV_BATCH, CONV_IN, CONV_HW, CONV_HW])],
        [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [CONV_BATCH, CONV_IN, CONV_HW, CONV_HW])],
        [init("k1", [CONV_MID, CONV_IN, 3, 3], CONV_IN * 9),
         init("b1", [CONV_MID], CONV_MID),
         init("k2", [CONV_IN, CONV_MID, 3, 3], CONV_MID * 9),
         init("b2", [CONV_IN], CONV_IN)])
    paths = {}
    for graph in (mlp, conv):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                  producer_name="bench_padding.py")
        onnx.checker.check_model(model)
        paths[graph.name] = os.path.join(dir_, graph.name + ".onnx")
        onnx.save(model, paths[graph.name])
    return paths


def cmd_make(args):
    os.makedirs(args.dir, exist_ok=True)
    for name, path in make_models(args.dir).items():
        for variant, pipeline in (("padded", "--mp-autocast-pipeline"),
                                  ("unpadded", "--mp-autocast-pipeline=pad=false")):
            plan = os.path.join(args.dir, "%s.%s.mpplan" % (name, variant))
            cmd = [args.mp_opt, path, pipeline, "--emit=plan", "-o", plan]
            print(" ".join(cmd), flush=True)
            subprocess.run(cmd, check=True)
    return 0


def time_plan(mp_run, plan, backend, iters, warmup):
    cmd = [mp_run, plan, "--zero-inputs", "--backend=" + backend,
           "--repeat=%d" % iters, "--warmup=%d" % warmup]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    m = re.search(r"median ([0-9.]+) ms", out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError((out.stderr or out.stdout).strip().splitlines()[-1:])
    return float(m.group(1))


def time_torch(name, width_or_channels, device, iters, warmup):
    """Median ms of the same two layers in PyTorch fp16 (bf16 on the CPU) at
    the given widths."""
    import torch
    torch.backends.cudnn.benchmark = True
    gen = torch.Generator().manual_seed(0)
    dt = torch.float16 if device == "cuda" else torch.bfloat16
    if name == "mlp":
        w = width_or_channels
        x = torch.randn(MLP_ROWS, w, generator=gen).to(device, dt)
        w1 = torch.randn(w, w, generator=gen).to(device, dt) / w ** 0.5
        w2 = torch.randn(w, w, generator=gen).to(device, dt) / w ** 0.5

        def step():
            return torch.relu(x @ w1) @ w2
    else:
        cin, cmid = width_or_channels
        conv1 = torch.nn.Conv2d(cin, cmid, 3, padding=1).to(device, dt)
        conv2 = torch.nn.Conv2d(cmid, cin, 3, padding=1).to(device, dt)
        x = torch.randn(CONV_BATCH, cin, CONV_HW, CONV_HW, generator=gen).to(device, dt)
        conv1 = conv1.to(memory_format=torch.channels_last)
        conv2 = conv2.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)

        def step():
            return conv2(torch.relu(conv1(x)))
    with torch.no_grad():
        return statistics.median(
            bench_gpu.torch_step_times(step, device, iters, warmup))


def cmd_run(args):
    rows = []  # (model, configuration, dims, flops, ms or None, why)
    low = "fp16" if args.device == "cuda" else "bf16"  # what torch computes in

    def measure(model, config, dims, flops, fn):
        try:
            ms, why = fn(), ""
        except Exception as e:  # one row, not the table
            ms, why = None, "%s: %s" % (type(e).__name__, e)
        rows.append((model, config, dims, flops, ms, why))
        print("%s %s %s: %s ms %s" % (model, config, dims, ms, why), flush=True)
        if args.out:
            with open(args.out, "w") as f:
                f.write(render(rows, args))

    for variant in ("unpadded", "padded"):
        measure("mlp", "ours mixed, " + variant, "1001", mlp_flops(MLP_WIDTH),
                lambda v=variant: time_plan(args.mp_run, os.path.join(args.dir, "mlp.%s.mpplan" % v),
                                            args.backend, args.iters, args.warmup))
    for width in (MLP_WIDTH, round8(MLP_WIDTH)):
        measure("mlp", "torch " + low, str(width), mlp_flops(width),
                lambda w=width: time_torch("mlp", w, args.device, args.iters, args.warmup))
    conv_dims = "%d->%d->%d" % (CONV_IN, CONV_MID, CONV_IN)
    for variant in ("unpadded", "padded"):
        measure("conv", "ours mixed, " + variant, conv_dims, conv_flops(CONV_IN, CONV_MID),
                lambda v=variant: time_plan(args.mp_run, os.path.join(args.dir, "conv.%s.mpplan" % v),
                                            args.backend, args.iters, args.warmup))
    for cin, cmid in ((CONV_IN, CONV_MID), (round8(CONV_IN), round8(CONV_MID))):
        measure("conv", "torch %s (channels last)" % low, "%d->%d->%d" % (cin, cmid, cin),
                conv_flops(cin, cmid),
                lambda c=(cin, cmid): time_torch("conv", c, args.device, args.iters, args.warmup))
    print()
    print(render(rows, args))
    return 0


def render(rows, args):
    lines = ["# Tensor-core padding: misaligned vs padded (%s, %s backend)" % (args.device, args.backend),
             "",
             "mlp: x[%d, 1001] -> MatMul 1001x1001 -> Relu -> MatMul 1001x1001; "
             "conv: x[%d, 61, %d, %d] -> Conv 3x3 61->125 -> Relu -> Conv 3x3 125->61. "
             "TFLOPS count the misaligned model's FLOPs (useful work) for every row; "
             "median of %d runs after %d warm-ups." % (MLP_ROWS, CONV_BATCH, CONV_HW, CONV_HW,
                                                       args.iters, args.warmup),
             "",
             "| model | configuration | dims | ms | useful TFLOPS | vs unpadded / misaligned |",
             "|---|---|---|---|---|---|"]
    base = {}
    for model, config, dims, flops, ms, why in rows:
        useful = mlp_flops(MLP_WIDTH) if model == "mlp" else conv_flops(CONV_IN, CONV_MID)
        who = config.split(",")[0]
        if ms is None:
            lines.append("| %s | %s | %s | failed: %s | | |" % (model, config, dims, why))
            continue
        key = (model, who)
        base.setdefault(key, ms)
        lines.append("| %s | %s | %s | %.3f | %.1f | %.2fx |" % (
            model, config, dims, ms, useful / ms / 1e9, base[key] / ms))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make", help="write the models and plans (needs mp-opt)")
    mk.add_argument("--mp-opt", required=True)
    mk.add_argument("--dir", required=True)
    rn = sub.add_parser("run", help="time the plans and PyTorch")
    rn.add_argument("--dir", required=True)
    rn.add_argument("--mp-run", required=True)
    rn.add_argument("--backend", default="cuda", choices=("cuda", "cpu"))
    rn.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    rn.add_argument("--iters", type=int, default=30)
    rn.add_argument("--warmup", type=int, default=5)
    rn.add_argument("--out", help="the Markdown table, rewritten after each row")
    args = ap.parse_args()
    return cmd_make(args) if args.cmd == "make" else cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
