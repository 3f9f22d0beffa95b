#!/usr/bin/env python3
"""GPU benchmark: MixPrec's fp32 and mixed-precision plans against PyTorch on
the same GPU, model and batch (the CUDA-backend issue's benchmark).

For each model (ResNet-50, the BERT-style encoder, the LSTM language model;
scripts/export_models.py defines them) and each phase (inference, training
step), it times:
  ours fp32        mp-run --backend=cuda on the fp32 plan
  ours mixed       mp-run --backend=cuda on the mixed-precision plan
                   (autocast + padding; training: + master weights + dynamic
                   loss scaling)
  ours fp32-nchw   (the CNNs) the fp32 plan compiled channels first
                   (mp-opt --channels-last=none): fp32 convolutions went
                   channels last by default for oneDNN; this measures what
                   that does to cuDNN's fp32 convolutions
  ours mixed-unfused, ours fp32-unfused
                   the same plans compiled with --fuse=false (training steps
                   also with mp-training's raise-composites=false: layer
                   norms, GELUs and their gradients as chains of ops): one
                   call per ONNX node, what the fusion stage (attention,
                   epilogues, norms, elementwise programs, the backward's
                   activation and bias gradients) saves
  torch fp32       PyTorch eager, TF32 off
  torch tf32       PyTorch eager, TF32 on (matmul and cuDNN)
  torch amp        PyTorch eager autocast(fp16) + GradScaler, channels_last
                   for the CNNs
and prints samples per second, the speed-ups (mixed over our fp32, ours over
torch amp) and the fraction of the GPU's dense fp16 tensor-core peak (FLOPs
counted by torch.utils.flop_counter on the same model and batch).

The plans are compiled where MLIR is (the GPU machine has none):
  scripts/bench_gpu.py --print-compile-commands --batch 64
prints the mp-opt commands; copy the plans to the GPU machine and run
  scripts/bench_gpu.py --plans DIR --batch 64 [--out results.md]
Our plans' float inputs get seeded normal values, their integer inputs
(class ids, tokens) zeros; a training plan's repeated runs carry its state
(the loss scale backs off in the warm-up as GradScaler's does), and the
table says where the last timed step was still skipped.
`--device cpu --mp-run-backend cpu` runs the same measurements on the CPU
(to check the script, not for figures). Plans saved without their weights
(mp-strip-weights, scripts/gpu-kit.sh) get them with `--weights DIR`: mp-run
--weights=DIR/<model> for each model that has a directory there.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

# Dense fp16 tensor-core peaks (TFLOPS, without sparsity) by device name,
# the first key the name contains (the PCIe and NVL H100s before the SXM).
PEAK_FP16_TFLOPS = [("H200", 989.4), ("H100 PCIe", 756.0), ("H100 NVL", 835.0),
                    ("H100", 989.4), ("A100", 312.0), ("L40S", 362.1),
                    ("A10", 125.0)]

# How each model trains, as mp-training builds its plan.
LOSS = {"resnet50": "cross-entropy", "resnet50_bn": "cross-entropy",
        "resnet18_bn": "cross-entropy", "bert_encoder": "cross-entropy",
        "lstm_lm": "mse"}
CNNS = {"resnet50", "resnet50_bn"}
# The phases a model is benchmarked in (default both): ResNet-50 infers as
# deployed, batch norm folded into the convolutions (resnet50), and trains
# with its batch norms (resnet50_bn), as PyTorch runs it in both.
PHASES_OF = {"resnet50": ("infer",), "resnet50_bn": ("train",)}


def compile_commands(models, batch, out_dir, mp_opt):
    train = ("--mp-training=loss={loss} optimizer=sgd lr=0.01 momentum=0.9")
    mixed_train = ["--mp-autocast-pipeline", "--mp-master-weights",
                   "--mp-loss-scale=mode=dynamic"]
    cmds = []
    for m in models:
        src = os.path.join("build", "models", m + ".onnx")
        base = [mp_opt, src, "--dim-param=batch=%d" % batch]
        for prec in (("fp32", "mixed") + (("fp32-nchw",) if m in CNNS else ()) +
                     tuple(UNFUSED)):
            phases = PHASES_OF.get(m, ("infer", "train"))
            layout = ["--channels-last=none"] if prec == "fp32-nchw" else []
            unfused = prec in UNFUSED
            if unfused:
                layout = ["--fuse=false"]
            mixed = prec.startswith("mixed")
            if "infer" in phases:
                infer = base + layout + (["--mp-autocast-pipeline"] if mixed else [])
                cmds.append(infer + ["--emit=plan", "-o",
                                     os.path.join(out_dir, "%s.%s.infer.mpplan" % (m, prec))])
            if "train" in phases:
                training = train.format(loss=LOSS[m]) + (" raise-composites=false" if unfused else "")
                tr = base + layout + [training] + (mixed_train if mixed else [])
                cmds.append(tr + ["--emit=plan", "-o",
                                  os.path.join(out_dir, "%s.%s.train.mpplan" % (m, prec))])
    return cmds


NPY_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16"}


def random_inputs(mp_run, plan, out_dir):
    """NAME=FILE arguments binding the plan's float inputs to seeded normal
    values (images, features). Integer inputs (class ids, tokens) are left to
    --zero-inputs: 0 is valid for every one. Zeros for the images would make
    the mixed training step overflow and skip its update on every run, which
    a timing must not leave out."""
    import numpy as np
    out = subprocess.run([mp_run, plan, "--print-plan"], capture_output=True,
                         text=True, timeout=60)
    rng = np.random.default_rng(0)
    args = []
    for name, dtype, dims in re.findall(r"^input\s+(\S+): (\w+) \[([0-9, ]*)\]",
                                        out.stdout, re.M):
        if dtype not in NPY_DTYPES:
            continue
        shape = [int(d) for d in dims.split(",") if d.strip()]
        path = os.path.join(out_dir, re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".npy")
        np.save(path, rng.standard_normal(shape).astype(NPY_DTYPES[dtype]))
        args.append("%s=%s" % (name, path))
    return args


def time_mp_run(mp_run, plan, backend, iters, warmup, extra_args=(), timeout=None):
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        inputs = random_inputs(mp_run, plan, tmp)
        outputs = os.path.join(tmp, "outputs")
        ms, why = run_timed(mp_run, plan, backend, iters, warmup, inputs,
                            list(extra_args) + ["--output-dir=" + outputs],
                            timeout)
        # A training plan's last step: skipped (non-finite gradients) or not.
        skipped = os.path.join(outputs, "skipped.npy")
        if ms is not None and os.path.exists(skipped):
            import numpy as np
            if float(np.load(skipped).reshape(-1)[0]) != 0:
                why = ["the last timed step was skipped (loss scale backing off)"]
        return ms, why


def run_timed(mp_run, plan, backend, iters, warmup, inputs, extra_args, timeout):
    cmd = [mp_run, plan] + inputs + ["--zero-inputs", "--backend=" + backend,
           "--repeat=%d" % iters, "--warmup=%d" % warmup] + list(extra_args)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, ["mp-run timed out after %gs" % timeout]
    if out.returncode != 0:
        return None, (out.stderr or out.stdout).strip().splitlines()[-1:]
    m = re.search(r"median ([0-9.]+) ms", out.stdout)
    return (float(m.group(1)) if m else None), None


def torch_step_times(step, device, iters, warmup):
    """Milliseconds of each of `iters` calls of `step` after `warmup` untimed
    ones, the device synchronised after each."""
    import torch
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for _ in range(warmup):
        step()
    sync()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        step()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def torch_measure(name, batch, phase, mode, device, iters, warmup):
    """Median ms per step and FLOPs per step of one PyTorch configuration."""
    import torch
    import export_models

    ctor, make_input, _ = {**export_models.MODELS,
                           **export_models.EXTRA_MODELS}[name]
    gen = torch.Generator().manual_seed(0)
    model = ctor().to(device)
    x = make_input(batch, gen).to(device)
    cnn = name in CNNS
    amp = mode == "amp"
    if cnn and amp:
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
        torch.backends.cudnn.allow_tf32 = mode == "tf32"
        torch.backends.cudnn.benchmark = True
    with torch.no_grad():
        y_shape = model.eval()(x).shape
    if LOSS[name] == "mse":
        target = torch.zeros(y_shape, device=device)
        loss_fn = torch.nn.MSELoss()
    else:
        target = torch.randint(0, y_shape[1], (batch,), generator=gen).to(device)
        loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    # GradScaler is for fp16 on the GPU; the CPU smoke test autocasts to bf16.
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler(device, enabled=amp and device == "cuda")
    else:
        scaler = torch.cuda.amp.GradScaler(enabled=amp and device == "cuda")
    low = torch.float16 if device == "cuda" else torch.bfloat16

    def step():
        if phase == "infer":
            with torch.no_grad(), torch.autocast(device, dtype=low, enabled=amp):
                model(x)
            return
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=low, enabled=amp):
            loss = loss_fn(model(x).float(), target)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    model.train(phase == "train")
    if phase == "infer":
        model.eval()
    times = torch_step_times(step, device, iters, warmup)
    try:  # PyTorch 2.1 and later
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:
        return statistics.median(times), None
    counter = FlopCounterMode(display=False)
    with counter:
        step()
    return statistics.median(times), counter.get_total_flops()


def peak_tflops(device, override):
    if override:
        return override
    if device != "cuda":
        return None
    import torch
    name = torch.cuda.get_device_name()
    for key, peak in PEAK_FP16_TFLOPS:
        if key in name:
            return peak
    return None


# Every configuration, in the default order of measurement: the figures the
# GPU kit wants first (ours mixed vs our fp32 vs PyTorch AMP) come first, so
# that a run cut short still returns them.
CONFIGS = ("ours mixed", "ours fp32", "torch amp", "torch fp32", "torch tf32",
           "ours fp32-nchw", "ours mixed-unfused", "ours fp32-unfused")
# Our plans compiled without the fusion stage (the "vs unfused" column).
UNFUSED = ("mixed-unfused", "fp32-unfused")


def read_results(path):
    """The rows measured so far (--results, one JSON object per line)."""
    rows = []
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    rows.append(json.loads(line))
    return rows


def render_table(rows, peak, device, backend):
    """The Markdown table of all rows: samples/s, the speed-ups against our
    fp32 plan and PyTorch AMP of the same model and phase, and the fraction
    of the fp16 tensor-core peak (FLOPs counted on PyTorch's model)."""
    def key(r):
        return (r["model"], r["phase"])
    ms_of = {(key(r), r["config"]): r["ms"] for r in rows}
    flops = {}
    for r in rows:
        if r.get("flops"):
            flops[key(r)] = r["flops"]
    lines = ["| model | phase | batch | configuration | ms / step | samples/s | "
             "vs our fp32 | vs torch amp | vs unfused | % fp16 TC peak |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ms = r["ms"]
        if ms is None:
            lines.append("| %s | %s | %d | %s | not measured: %s | | | | | |" % (
                r["model"], r["phase"], r["batch"], r["config"],
                " ".join(r.get("why") or []).replace("|", "/")))
            continue
        base = ms_of.get((key(r), "ours fp32"))
        ref = ms_of.get((key(r), "torch amp"))
        # The fused plan's speed-up over the same plan compiled unfused.
        unfused = ms_of.get((key(r), r["config"] + "-unfused"))
        f = flops.get(key(r))
        frac = ("%.1f%%" % (100 * f / (ms / 1e3) / (peak * 1e12))
                if peak and f else "-")
        lines.append("| %s | %s | %d | %s | %.2f | %.0f | %s | %s | %s | %s |" % (
            r["model"], r["phase"], r["batch"],
            r["config"] + ("" if not r.get("why") else
                           " (%s)" % " ".join(r["why"]).replace("|", "/")),
            ms, r["batch"] / (ms / 1e3),
            "%.2fx" % (base / ms) if base else "-",
            "%.2fx" % (ref / ms) if ref else "-",
            "%.2fx" % (unfused / ms) if unfused else "-", frac))
    head = ("device %s, mp-run backend %s, fp16 dense tensor-core peak %s "
            "TFLOPS; medians over the timed iterations"
            % (device, backend, peak or "unknown"))
    return head + "\n\n" + "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,resnet50_bn,bert_encoder,lstm_lm")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--plans", default="build/bench-plans")
    ap.add_argument("--mp-run", default=os.path.join(ROOT, "build", "bin", "mp-run"))
    ap.add_argument("--mp-opt", default=os.path.join(ROOT, "build", "bin", "mp-opt"))
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--mp-run-backend", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--peak-tflops", type=float, help="fp16 tensor-core peak")
    ap.add_argument("--phases", default="infer,train",
                    help="in this order (default infer,train)")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="which configurations, in this order (default: %s)"
                         % ",".join(CONFIGS))
    ap.add_argument("--print-compile-commands", action="store_true")
    ap.add_argument("--out", help="also write the table (Markdown) here, "
                                  "again after every measurement")
    ap.add_argument("--results", metavar="FILE.jsonl",
                    help="append every measurement here as it finishes; the "
                         "table (--out) shows all rows of the file, earlier "
                         "runs' too")
    ap.add_argument("--weights", metavar="DIR",
                    help="mp-run --weights=DIR/<model> for the models with a "
                         "directory there (plans saved without weights)")
    ap.add_argument("--unchecked-weights", action="store_true",
                    help="with --weights: mp-run --unchecked-weights")
    ap.add_argument("--cuda-batch-norm", choices=("auto", "spatial", "own"),
                    help="mp-run --cuda-batch-norm (who runs the batch norms)")
    ap.add_argument("--mp-run-timeout", type=float, default=300,
                    help="seconds for one mp-run (default 300)")
    args = ap.parse_args()
    models = args.models.split(",")
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    for c in configs:
        if c not in CONFIGS:
            ap.error("unknown configuration '%s' (%s)" % (c, ", ".join(CONFIGS)))

    if args.print_compile_commands:
        print("mkdir -p %s" % args.plans)
        for cmd in compile_commands(models, args.batch, args.plans, args.mp_opt):
            print(" ".join('"%s"' % c if " " in c else c for c in cmd))
        return 0

    peak = peak_tflops(args.device, args.peak_tflops)
    rows = read_results(args.results)

    def record(row):
        rows.append(row)
        if args.results:
            with open(args.results, "a") as f:
                f.write(json.dumps(row) + "\n")
        if args.out:
            with open(args.out, "w") as f:
                f.write(render_table(rows, peak, args.device,
                                     args.mp_run_backend))

    for name in models:
        for phase in args.phases.split(","):
            if phase not in PHASES_OF.get(name, (phase,)):
                continue
            for config in configs:
                who, mode = config.split(" ")
                if mode == "fp32-nchw" and name not in CNNS:
                    continue  # no convolutions: the same plan as fp32
                row = {"model": name, "phase": phase, "batch": args.batch,
                       "config": config, "ms": None, "why": None,
                       "flops": None}
                if who == "torch":
                    if mode == "tf32" and args.device != "cuda":
                        continue
                    try:
                        row["ms"], row["flops"] = torch_measure(
                            name, args.batch, phase, mode, args.device,
                            args.iters, args.warmup)
                    except Exception as e:  # one configuration, not the table
                        row["why"] = ["%s: %s" % (type(e).__name__, e)]
                else:
                    plan = os.path.join(args.plans, "%s.%s.%s.mpplan" % (name, mode, phase))
                    if not os.path.exists(plan):
                        row["why"] = ["no plan " + plan]
                    else:
                        mp_run_args = []
                        if args.weights and os.path.isdir(os.path.join(args.weights, name)):
                            mp_run_args = ["--weights=" + os.path.join(args.weights, name)]
                            if args.unchecked_weights:
                                mp_run_args.append("--unchecked-weights")
                        if args.cuda_batch_norm and args.mp_run_backend == "cuda":
                            mp_run_args.append("--cuda-batch-norm=" + args.cuda_batch_norm)
                        row["ms"], row["why"] = time_mp_run(
                            args.mp_run, plan, args.mp_run_backend, args.iters,
                            args.warmup, mp_run_args, args.mp_run_timeout)
                print("%s %s %s: %s ms %s" % (name, phase, config, row["ms"],
                                              " ".join(row["why"] or [])),
                      flush=True)
                record(row)
    print()
    print(render_table(rows, peak, args.device, args.mp_run_backend))
    return 0


if __name__ == "__main__":
    sys.exit(main())
