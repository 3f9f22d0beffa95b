#!/usr/bin/env python3
"""Benchmark: importing ResNet-50 (~100 MB of weights) with MixPrec.

Prints the wall time and the peak resident memory of the import (protobuf
parse, validation, ONNX shape inference, building and verifying the mp
module), each measured in a fresh process, next to the same figures for
`onnx.load` (the Python protobuf load alone) measured in the same run, and
the ratio to the file size. Targets: under 2 s and under 2x the file size.

Usage: scripts/bench_import.py [--build build] [--model PATH] [--repeat 5]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_measured(cmd):
    """Runs cmd; returns (wall seconds, peak RSS bytes, stdout)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit("command failed: %s\n%s" % (" ".join(cmd), err.decode()))
    return wall, usage.ru_maxrss * 1024, out.decode()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--model", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    model = args.model or os.path.join(args.build, "models", "resnet50.onnx")
    if not os.path.exists(model):
        subprocess.check_call([sys.executable if "python3" in sys.executable
                               else "/usr/bin/python3",
                               os.path.join(ROOT, "scripts", "export_models.py"),
                               "--out", os.path.dirname(model), "--only",
                               "resnet50"])
    size = os.path.getsize(model)
    bench = os.path.join(args.build, "bin", "mp-import-bench")

    ours_time, ours_rss = [], []
    peer_time, peer_rss = [], []
    for _ in range(args.repeat):
        _, rss, out = run_measured([bench, model])
        ours_time.append(json.loads(out)["best_s"])
        ours_rss.append(rss)
        # Peer: onnx.load in Debian's Python (protobuf parse only), timed
        # inside the process so interpreter start-up is not counted.
        _, rss, out = run_measured([
            "/usr/bin/python3", "-c",
            "import time, onnx; t = time.perf_counter(); onnx.load(%r); "
            "print(time.perf_counter() - t)" % model])
        peer_time.append(float(out))
        peer_rss.append(rss)

    # The process's footprint before any weights: libMLIR/libLLVM and the
    # ONNX schemas, measured by importing the tiny bundled example model.
    _, base_rss, _ = run_measured(
        [bench, os.path.join(ROOT, "examples", "models", "tiny_cnn.onnx")])

    mb = 1024.0 * 1024.0
    t_ours, t_peer = statistics.median(ours_time), statistics.median(peer_time)
    m_ours, m_peer = statistics.median(ours_rss), statistics.median(peer_rss)
    print("model: %s (%.1f MB)" % (model, size / mb))
    print("%-34s %10s %14s %14s" % ("", "wall (s)", "peak RSS (MB)",
                                    "RSS / file"))
    print("%-34s %10.3f %14.1f %14.2f" % ("mp import (median of %d)" %
                                          args.repeat, t_ours, m_ours / mb,
                                          m_ours / size))
    print("%-34s %10.3f %14.1f %14.2f" % ("onnx.load, Python (median)",
                                          t_peer, m_peer / mb, m_peer / size))
    print("mp import above the process baseline (%.1f MB for a tiny model): "
          "%.1f MB = %.2fx the file" % (base_rss / mb, (m_ours - base_rss) / mb,
                                        (m_ours - base_rss) / size))
    print("ratio mp/onnx.load: time %.2fx, memory %.2fx" %
          (t_ours / t_peer, m_ours / m_peer))
    print("targets: time < 2 s: %s; peak memory < 2x file: %s" %
          ("met" if t_ours < 2 else "MISSED",
           "met" if m_ours < 2 * size else "MISSED"))


if __name__ == "__main__":
    main()
