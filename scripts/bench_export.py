#!/usr/bin/env python3
"""mp-opt's mixed-precision ONNX export against onnxconverter-common.

For each model, in the same run:
  ours    `mp-opt model.onnx --mp-autocast-pipeline -o model.mp.onnx`
          (import + autocast + padding + cast cleanup + export)
  theirs  onnxconverter-common `convert_float_to_float16(model,
          keep_io_types=True)` including onnx.load and onnx.save (what a user
          runs), in a child Python process
Each tool runs in its own process; wall time and peak RSS (ru_maxrss of the
child) are measured, the fastest of --repeat runs is reported. Then ONNX
Runtime (CPU) runs the fp32 original and both converted models on --samples
inputs (the model's <model>.input.npy and random ones like it) and the
accuracy of each against fp32 is reported over all of them: max abs error,
max error relative to the output's scale, top-1 agreement (rows of the last
axis), NaN/Inf count; a model ONNX Runtime cannot load is reported as
failing.

ONNX Runtime's CPU provider has no f16 kernels for most ops on x86: it runs
them in f32 between Casts it inserts and then removes the f32->f16->f32
pairs, so an all-f16 model (onnxconverter-common's) executes with f16 weights
but almost no f16 activations, while the explicit Casts of a model that keeps
some ops in f32 stay. That column therefore does not measure f16 execution.
The second accuracy column does: both converted models are compiled by
mp-opt (no passes beyond lowering: the precisions are the converter's) and
run by mp-run's CPU backend, which stores every f16 tensor as f16 and
accumulates matmuls and convolutions in f32 with one rounding, as tensor
cores do. Besides the max errors, the mean relative error (mean |error| /
mean |fp32 output|) is reported: the max over a few samples is one value.

    .venv/bin/python scripts/bench_export.py build/models/*.onnx /tmp/big/bert_large.onnx
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONVERT_THEIRS = r"""
import sys, onnx
from onnxconverter_common import float16
model = onnx.load(sys.argv[1])
converted = float16.convert_float_to_float16(model, keep_io_types=True)
big = converted.ByteSize() > 2**31 - 2**26
onnx.save(converted, sys.argv[2], save_as_external_data=big,
          location=sys.argv[2].split("/")[-1] + ".data" if big else None)
"""


def measure(cmd):
    """(seconds, peak RSS bytes, returncode, stderr tail) of one child.

    GNU time reports the peak RSS of the tool alone (a child forked from this
    Python process would count this process's pages too)."""
    rss_file = tempfile.NamedTemporaryFile(prefix="rss.", delete=False).name
    start = time.monotonic()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file] + cmd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.monotonic() - start
    with open(rss_file) as f:
        lines = [l for l in f.read().split() if l.strip().isdigit()]
    os.unlink(rss_file)
    rss = int(lines[-1]) * 1024 if lines else 0
    err = proc.stderr.decode(errors="replace")
    return seconds, rss, proc.returncode, err.strip().splitlines()[-3:]


def sample_inputs(model_path, samples):
    """The model's saved sample input (<model>.input.npy) and samples-1
    random ones like it (token ids below the sample's largest + 1)."""
    import onnxruntime as ort
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    npy = model_path[: -len(".onnx")] + ".input.npy"
    rng = np.random.default_rng(0)
    if os.path.exists(npy):
        first = np.load(npy)
    else:
        shape = [d if isinstance(d, int) else 2 for d in inp.shape]
        first = (rng.integers(0, 1000, shape).astype(np.int64)
                 if "int64" in inp.type else
                 rng.standard_normal(shape).astype(np.float32))
    feeds = [{inp.name: first}]
    for _ in range(samples - 1):
        if np.issubdtype(first.dtype, np.integer):
            x = rng.integers(0, int(first.max()) + 1, first.shape).astype(first.dtype)
        else:
            x = rng.standard_normal(first.shape).astype(first.dtype)
        feeds.append({inp.name: x})
    return feeds


def run_ort(path, feeds):
    """The first output for each feed (one session)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(path, options,
                                   providers=["CPUExecutionProvider"])
    return np.stack([session.run(None, f)[0] for f in feeds])


def run_mp(model_path, feeds, mp_opt, work, tag):
    """The first output for each feed, executed by mp-run's CPU backend (f16
    stored as f16). The plan is compiled for the feeds' static shapes."""
    import onnx
    name = next(iter(feeds[0]))
    shape = "x".join(str(d) for d in feeds[0][name].shape)
    plan = os.path.join(work, tag + ".mpplan")
    subprocess.run([mp_opt, model_path, "--input-shape=%s:%s" % (name, shape),
                    "--emit=plan", "-o", plan], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    output = onnx.load(model_path, load_external_data=False).graph.output[0].name
    mp_run = os.path.join(os.path.dirname(mp_opt), "mp-run")
    outs = []
    for i, feed in enumerate(feeds):
        x = os.path.join(work, "%s.in%d.npy" % (tag, i))
        np.save(x, feed[name])
        out_dir = os.path.join(work, "%s.out%d" % (tag, i))
        subprocess.run([mp_run, plan, "%s=%s" % (name, x), "--output-dir", out_dir],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        outs.append(np.load(os.path.join(out_dir, output + ".npy")))
    return np.stack(outs)


def accuracy(ref, out):
    if out is None:
        return None
    ref64, out64 = ref.astype(np.float64), out.astype(np.float64)
    nonfinite = int(np.count_nonzero(~np.isfinite(out64)))
    finite = np.isfinite(out64)
    err = np.abs(ref64 - out64)
    max_abs = float(np.max(np.where(finite, err, 0))) if err.size else 0.0
    scale = float(np.max(np.abs(ref64))) or 1.0
    top1 = None
    if ref.ndim >= 3 and ref.shape[-1] >= 2:
        r = ref.reshape(-1, ref.shape[-1]).argmax(1)
        o = out.reshape(-1, out.shape[-1]).argmax(1)
        top1 = "%d/%d" % (int(np.sum(r == o)), r.size)
    mean_rel = float(np.mean(np.where(finite, err, 0)) /
                     (np.mean(np.abs(ref64)) or 1.0))
    return {"max_abs": max_abs, "scaled": max_abs / scale, "top1": top1,
            "nonfinite": nonfinite, "mean_rel": mean_rel}


def fmt_acc(a, runner="ONNX Runtime"):
    if a is None:
        return "fails in " + runner
    s = "%.2e abs, %.2e of scale, mean rel %.2e" % (a["max_abs"], a["scaled"],
                                                     a["mean_rel"])
    if a["top1"]:
        s += ", top-1 %s" % a["top1"]
    return s + ", NaN/Inf %d" % a["nonfinite"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--mp-opt", default=os.path.join(ROOT, "build", "bin", "mp-opt"))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-accuracy", action="store_true")
    ap.add_argument("--no-f16-run", action="store_true",
                    help="skip the accuracy of f16 execution on mp-run")
    ap.add_argument("--samples", type=int, default=16,
                    help="inputs per model for the accuracy (default 16: the "
                         "saved sample and 15 random ones like it)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mp-bench-export.")
    rows = []
    for model in args.models:
        name = os.path.basename(model)[: -len(".onnx")]
        ours_path = os.path.join(work, name + ".mp.onnx")
        theirs_path = os.path.join(work, name + ".occ.onnx")
        best = {}
        for tool, cmd in (
                ("ours", [args.mp_opt, model, "--mp-autocast-pipeline", "-o", ours_path]),
                ("theirs", [sys.executable, "-c", CONVERT_THEIRS, model, theirs_path])):
            for _ in range(args.repeat):
                seconds, rss, rc, err = measure(cmd)
                if rc != 0:
                    best[tool] = (seconds, rss, rc, err)
                    break
                if tool not in best or seconds < best[tool][0]:
                    best[tool] = (seconds, rss, rc, err)
        row = {"model": name, "size_mb": os.path.getsize(model) / 2**20}
        for tool in ("ours", "theirs"):
            seconds, rss, rc, err = best[tool]
            row[tool] = {"seconds": seconds, "rss": rss, "rc": rc, "err": err}
        if not args.no_accuracy:
            feeds = sample_inputs(model, args.samples)
            ref = run_ort(model, feeds)
            for tool, path in (("ours", ours_path), ("theirs", theirs_path)):
                out = None
                if row[tool]["rc"] == 0:
                    try:
                        out = run_ort(path, feeds)
                    except Exception as e:  # noqa: BLE001 - the peer may break models
                        row[tool]["err"] = [str(e).splitlines()[0][:200]]
                row[tool]["acc"] = accuracy(ref, out)
                f16 = None
                if row[tool]["rc"] == 0 and not args.no_f16_run:
                    try:
                        f16 = run_mp(path, feeds, args.mp_opt, work, name + "." + tool)
                    except subprocess.CalledProcessError as e:
                        row[tool]["f16_err"] = e.stderr.decode(errors="replace").strip()[-300:]
                row[tool]["acc_f16"] = accuracy(ref, f16)
        rows.append(row)
        o, t = row["ours"], row["theirs"]
        print("%s (%.0f MB): mp-opt %.2f s %.0f MB | onnxconverter-common %.2f s %.0f MB | "
              "speed-up %.1fx, memory %.2fx" % (
                  name, row["size_mb"], o["seconds"], o["rss"] / 2**20,
                  t["seconds"], t["rss"] / 2**20, t["seconds"] / o["seconds"],
                  t["rss"] / o["rss"]), flush=True)
        for tool in ("ours", "theirs"):
            if row[tool]["rc"] != 0:
                print("  %s failed (exit %d): %s" % (tool, row[tool]["rc"],
                                                     " | ".join(row[tool]["err"])))
            if "acc" in row[tool]:
                print("  %s accuracy (ONNX Runtime CPU): %s" % (tool, fmt_acc(row[tool]["acc"])))
                print("  %s accuracy (f16 executed, mp-run): %s" % (
                    tool, fmt_acc(row[tool]["acc_f16"], "mp-run: " + row[tool].get("f16_err", "skipped"))))
    print()
    print("| model | size | mp-opt time | onnxconverter-common time | speed-up | "
          "mp-opt peak RSS | onnxconverter-common peak RSS | mp-opt accuracy | "
          "onnxconverter-common accuracy |")
    print("|---|---|---|---|---|---|---|---|---|")
    table2 = []
    for r in rows:
        o, t = r["ours"], r["theirs"]
        print("| %s | %.0f MB | %.2f s | %.2f s | %.1fx | %.0f MB | %.0f MB | %s | %s |" % (
            r["model"], r["size_mb"], o["seconds"], t["seconds"],
            t["seconds"] / o["seconds"], o["rss"] / 2**20, t["rss"] / 2**20,
            fmt_acc(o.get("acc")), fmt_acc(t.get("acc"))))
        if o.get("acc_f16") or t.get("acc_f16"):
            table2.append("| %s | %s | %s |" % (r["model"], fmt_acc(o.get("acc_f16"), "mp-run"),
                                               fmt_acc(t.get("acc_f16"), "mp-run")))
    if table2:
        print()
        print("f16 executed (mp-run CPU backend: f16 storage, f32 accumulation):")
        print("| model | mp-opt accuracy | onnxconverter-common accuracy |")
        print("|---|---|---|")
        print("\n".join(table2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
