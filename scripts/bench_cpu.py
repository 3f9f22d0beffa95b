#!/usr/bin/env python3
"""Our CPU plans against ONNX Runtime and PyTorch, side by side, in one run.

For each model (the exported test architectures, build/models; `ninja -C
build mp-models` makes them, and the script exports the benchmark-only ones,
scripts/export_models.py's EXTRA_MODELS, when they are missing): compiles an
fp32, a bf16 and an f16 plan with
mp-opt (`--mp-autocast-pipeline=target=...`), times them with mp-run on the
CPU backend (oneDNN where it applies) and the fp32 plan also on the
reference kernels (`--backend=cpu-ref`), and in the same run ONNX Runtime's
CPU provider on the fp32 model and PyTorch (Debian's, run by /usr/bin/python3)
on the same architecture in fp32 and under bf16 autocast (the weights are
seeded anew: they do not change the time). Same threads for all; median ms
of --repeat runs after --warmup, more for the small models (at least
--min-time-ms of runs). Prints a table of ms and one of ratios to ONNX
Runtime, with the ratios' medians over all models and over the nine of the
oneDNN issue's table (the fusion issue's targets), and the CPU's ISA as
oneDNN sees it.

Then training steps (--train-models, default ResNet-18 with its batch norms
and the BERT-style encoder): our fp32 training plan (mp-training, SGD with
momentum) and our bf16 mixed one (autocast to bf16 + f32 master weights, no
loss scaling: bf16 has f32's exponent range) against PyTorch's fp32 step and
its bf16-autocast step with the same optimizer (scripts/bench_gpu.py's
torch_measure on the CPU). docs/benchmarks.md records results with this
command.

  .venv/bin/python scripts/bench_cpu.py [--models resnet50,mobilenet_v2]
      [--train-models resnet18_bn,bert_encoder] [--repeat 10] [--warmup 2]
      [--threads N] [--no-torch]
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = ["resnet50", "resnet18_bn", "mobilenet_v2", "squeezenet",
                  "bert_encoder", "lstm_lm", "efficientnet_b0",
                  "convnext_tiny", "vit_b_16", "densenet121", "gpt_decoder"]
# The batch the benchmark-only models are exported with when missing (the
# issue's table: the large ones at batch 1).
EXPORT_BATCH = {"efficientnet_b0": 2, "convnext_tiny": 1, "vit_b_16": 1,
                "densenet121": 1, "gpt_decoder": 2}
# The fusion issue's CPU targets are medians over the nine architectures of
# the oneDNN issue's table (ResNet-18 and SqueezeNet came later).
NINE_MODELS = ["resnet50", "mobilenet_v2", "efficientnet_b0", "convnext_tiny",
               "vit_b_16", "densenet121", "gpt_decoder", "bert_encoder",
               "lstm_lm"]
DEFAULT_TRAIN_MODELS = ["resnet18_bn", "bert_encoder"]
TRAINING = "--mp-training=loss=cross-entropy optimizer=sgd lr=0.01 momentum=0.9"

# PyTorch's training steps, in a child (Debian's torch): bench_gpu.py's
# torch_measure on the CPU, fp32 and bf16 autocast ("amp" there).
TORCH_TRAIN_TIMER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
import bench_gpu
name, batch, threads, warmup, repeat = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
torch.set_num_threads(threads)
result = {}
for mode, key in (("fp32", "fp32"), ("amp", "bf16")):
    try:
        result[key] = bench_gpu.torch_measure(name, batch, "train", mode, "cpu", repeat, warmup)[0]
    except Exception as e:
        result[key + "_error"] = str(e).splitlines()[0][:120]
print(json.dumps(result))
"""
PLANS = [("fp32", None), ("bf16", "bf16"), ("f16", "f16")]

# Timed in a child: Debian's torch lives in the system python, onnxruntime in
# the project's venv.
TORCH_TIMER = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
import torch
import export_models as em
name, batch, threads, warmup, repeat = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
torch.set_num_threads(threads)
ctor, make_input, _ = {**em.MODELS, **em.EXTRA_MODELS}[name]
torch.manual_seed(0)
model = em.randomize_defaults(ctor()).eval()
x = make_input(batch, torch.Generator().manual_seed(1))
def times(run):
    for _ in range(warmup):
        run()
    out = []
    for _ in range(repeat):
        t = time.perf_counter(); run(); out.append((time.perf_counter() - t) * 1e3)
    return statistics.median(out)
result = {}
with torch.no_grad():
    result["fp32"] = times(lambda: model(x))
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            result["bf16"] = times(lambda: model(x))
    except Exception as e:  # an op without a bf16 CPU kernel in this torch
        result["bf16_error"] = str(e).splitlines()[0][:120]
print(json.dumps(result))
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def torch_child(script, name, batch, args):
    """The JSON a PyTorch timer prints, run by Debian's python (torch)."""
    return json.loads(run(
        ["/usr/bin/python3", "-c", script, os.path.join(ROOT, "scripts"),
         name, str(batch), str(args.threads), str(args.warmup),
         str(args.repeat)]).stdout)


def add_torch_samples(samples, script, name, batch, args):
    """One round of PyTorch's fp32 and bf16 timings into `samples`."""
    if args.no_torch:
        return
    result = torch_child(script, name, batch, args)
    samples["torch fp32"].append(result.get("fp32"))
    samples["torch bf16"].append(result.get("bf16"))


def median_ms(output):
    m = re.search(r"median ([0-9.]+) ms", output)
    if not m:
        raise RuntimeError("no median in mp-run's output:\n" + output)
    return float(m.group(1))


def median_of(values):
    """The median of a configuration's round medians (None: not measured)."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def compile_plan(bindir, model, batch, plan, options):
    """mp-opt `model` at `batch` with `options` into `plan`."""
    run([os.path.join(bindir, "mp-opt"), model, f"--dim-param=batch={batch}"]
        + options + ["--emit=plan", "-o", plan])


def mp_run(bindir, plan, run_args, env):
    """mp-run's output for `plan` with `run_args`."""
    return run([os.path.join(bindir, "mp-run"), plan] + run_args,
               env=env).stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--min-time-ms", type=float, default=300,
                        help="time at least this long per configuration and "
                             "round: a model whose run takes t ms is run "
                             "max(--repeat, this / t) times (the small models' "
                             "medians are otherwise a handful of runs)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure every configuration this many times, "
                             "round after round, and report the median")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--train-models",
                        default=",".join(DEFAULT_TRAIN_MODELS),
                        help="training steps to time ('' for none)")
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args()
    try:
        import onnxruntime as ort
    except ImportError:
        sys.exit("bench_cpu.py: onnxruntime is missing: run it with the "
                 "project's .venv (scripts/install-deps.sh creates it)")
    bindir = os.path.join(args.build, "bin")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads))

    rows = []
    isa = "?"
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            model = os.path.join(args.build, "models", name + ".onnx")
            inp = os.path.join(args.build, "models", name + ".input.npy")
            if not os.path.exists(model) and name in EXPORT_BATCH:
                print(f"  {name}: exporting (scripts/export_models.py)",
                      file=sys.stderr)
                run(["/usr/bin/python3",
                     os.path.join(ROOT, "scripts", "export_models.py"),
                     "--out", os.path.join(args.build, "models"),
                     "--only", name, "--batch", str(EXPORT_BATCH[name])])
            if not os.path.exists(model):
                sys.exit(f"bench_cpu.py: no {model} (ninja -C build mp-models)")
            x = np.load(inp)
            batch = x.shape[0]
            row = {"model": f"{name} b{batch}"}
            plans = {}
            for label, target in PLANS:
                plans[label] = os.path.join(tmp, f"{name}.{label}.mpplan")
                compile_plan(bindir, model, batch, plans[label],
                             [f"--mp-autocast-pipeline=target={target}"]
                             if target else [])
            options = ort.SessionOptions()
            options.intra_op_num_threads = args.threads
            options.inter_op_num_threads = 1
            session = ort.InferenceSession(model, options,
                                           providers=["CPUExecutionProvider"])
            feed = {session.get_inputs()[0].name: x}
            # The repeat count of this model, from one untimed run of ONNX
            # Runtime's: the same for every configuration.
            start = time.perf_counter()
            session.run(None, feed)
            once_ms = (time.perf_counter() - start) * 1e3
            repeat = max(args.repeat,
                         min(2000, int(args.min_time_ms / max(once_ms, 1e-3))))
            model_args = argparse.Namespace(**{**vars(args), "repeat": repeat})
            # Every configuration once per round, the rounds one after the
            # other: a slow spell of the machine hits one round of each,
            # not every run of one configuration.
            samples = collections.defaultdict(list)
            for round_index in range(args.rounds):
                for label, plan in plans.items():
                    # The reference kernels are slow: one round of them.
                    backends = (["cpu", "cpu-ref"]
                                if label == "fp32" and round_index == 0
                                else ["cpu"])
                    for backend in backends:
                        out = mp_run(bindir, plan,
                                     [f"input={inp}", f"--backend={backend}",
                                      f"--repeat={repeat}",
                                      f"--warmup={args.warmup}", "--timing"],
                                     env)
                        key = label if backend == "cpu" else "fp32 ref"
                        samples[key].append(median_ms(out))
                        m = re.search(r"CPU kernels: oneDNN on ([^\s,]+)", out)
                        if m:
                            isa = m.group(1)
                for _ in range(args.warmup):
                    session.run(None, feed)
                times = []
                for _ in range(repeat):
                    start = time.perf_counter()
                    session.run(None, feed)
                    times.append((time.perf_counter() - start) * 1e3)
                samples["ORT fp32"].append(statistics.median(times))
                add_torch_samples(samples, TORCH_TIMER, name, batch,
                                  model_args)
            for key, values in samples.items():
                row[key] = median_of(values)
            rows.append(row)
            print(f"  {name}: done", file=sys.stderr)

    columns = ["ORT fp32", "torch fp32", "torch bf16", "fp32", "bf16", "f16",
               "fp32 ref"]
    heads = ["ORT fp32", "torch fp32", "torch bf16", "our fp32", "our bf16",
             "our f16", "our fp32 (cpu-ref)"]
    fmt = lambda v: "–" if v is None else (f"{v:.2f}" if v < 10 else f"{v:.1f}")
    print(f"CPU: oneDNN ISA {isa}, {args.threads} threads, median of "
          f"{args.repeat} runs (or {args.min_time_ms:g} ms of runs) after "
          f"{args.warmup}"
          + (f", median of {args.rounds} rounds" if args.rounds > 1 else "")
          + " (ms)\n")
    print("| model | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(heads))
    for r in rows:
        print(f"| {r['model']} | " +
              " | ".join(fmt(r.get(c)) for c in columns) + " |")
    print("\nRatios (time / ONNX Runtime fp32; below 1 is faster):\n")
    ratio_cols = ["torch fp32", "torch bf16", "fp32", "bf16", "f16"]
    print("| model | " + " | ".join(
        h for c, h in zip(columns, heads) if c in ratio_cols) +
        " | our bf16 / our fp32 |")
    print("|---|" + "---|" * (len(ratio_cols) + 1))
    for r in rows:
        ort_ms = r["ORT fp32"]
        cells = [fmt(None) if r.get(c) is None else f"{r[c] / ort_ms:.2f}"
                 for c in ratio_cols]
        cells.append(f"{r['bf16'] / r['fp32']:.2f}")
        print(f"| {r['model']} | " + " | ".join(cells) + " |")
    nine = [r for r in rows if r["model"].split(" ")[0] in NINE_MODELS]
    for c in ["fp32", "bf16", "f16"]:
        med = statistics.median(r[c] / r["ORT fp32"] for r in rows)
        line = f"median our {c} / ORT fp32: {med:.2f}"
        if len(nine) == len(NINE_MODELS) and len(nine) < len(rows):
            line += (" (the nine architectures: %.2f)" % statistics.median(
                r[c] / r["ORT fp32"] for r in nine))
        print(line)
    print(f"our f16 / our fp32: at most "
          f"{max(r['f16'] / r['fp32'] for r in rows):.2f}")

    train_models = [m for m in args.train_models.split(",") if m]
    if train_models:
        time_training(args, bindir, env, train_models)


def time_training(args, bindir, env, names):
    """Training steps: ours fp32 and bf16 mixed, PyTorch fp32 and bf16."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            model = os.path.join(args.build, "models", name + ".onnx")
            inp = os.path.join(args.build, "models", name + ".input.npy")
            batch = np.load(inp).shape[0]
            row = {"model": f"{name} b{batch}"}
            plans = {}
            for label, extra in (("fp32", []),
                                 ("bf16", ["--mp-autocast-pipeline=target=bf16",
                                           "--mp-master-weights"])):
                plans[label] = os.path.join(tmp, f"{name}.{label}.train.mpplan")
                compile_plan(bindir, model, batch, plans[label],
                             [TRAINING] + extra)
            samples = collections.defaultdict(list)
            for _ in range(args.rounds):  # as the inference rounds
                for label, plan in plans.items():
                    # The data: the model's sample input; class ids 0
                    # (--zero-inputs); the state persists from step to step.
                    out = mp_run(bindir, plan,
                                 [f"input={inp}", "--zero-inputs",
                                  f"--repeat={args.repeat}",
                                  f"--warmup={args.warmup}"], env)
                    samples[label].append(median_ms(out))
                add_torch_samples(samples, TORCH_TRAIN_TIMER, name, batch,
                                  args)
            for key, values in samples.items():
                row[key] = median_of(values)
            rows.append(row)
            print(f"  {name} training: done", file=sys.stderr)
    fmt = lambda v: "–" if v is None else (f"{v:.2f}" if v < 10 else f"{v:.1f}")
    ratio = lambda a, b: "–" if a is None or b is None else f"{a / b:.2f}"
    print("\nTraining steps (SGD with momentum; ms per step, median of "
          f"{args.repeat} after {args.warmup}"
          + (f", median of {args.rounds} rounds" if args.rounds > 1 else "")
          + "):\n")
    print("| model | torch fp32 | torch bf16 | our fp32 | our bf16 mixed | "
          "our fp32 / torch fp32 | our bf16 / torch bf16 |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {fmt(r.get('torch fp32'))} | "
              f"{fmt(r.get('torch bf16'))} | {fmt(r['fp32'])} | "
              f"{fmt(r['bf16'])} | {ratio(r['fp32'], r.get('torch fp32'))} | "
              f"{ratio(r['bf16'], r.get('torch bf16'))} |")


if __name__ == "__main__":
    main()
