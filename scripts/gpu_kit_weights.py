#!/usr/bin/env python3
"""The weights of plans saved without them (scripts/gpu-kit.sh).

A ResNet-50 plan holds 51-102 MB of weights; four of them do not fit in what
travels to a GPU machine. scripts/gpu-kit.sh saves them without the weights
that the model's initializers reproduce (mp-strip-weights: external weights,
plan format 1.2), and this script gives the GPU machine the same weights:

  extract MODEL.onnx DIR [--manifest FILE]
      (where the plans are compiled) every initializer of MODEL as
      DIR/<name>.npy (characters of the name other than letters, digits,
      '.', '-', '_' become '_', as mp-run --weights looks them up), and a
      manifest: each initializer's name, dtype, shape and SHA-1, in the order
      the graph first uses them.

  regenerate NAME --manifest FILE --out DIR
      (on the GPU machine, which has torch and onnx but not the model) export
      NAME again as scripts/export_models.py does (same constructor, seed and
      randomized defaults; the TorchScript exporter, dynamo=False, as the
      compile machine's torch used), and write its initializers under the
      manifest's names: by name when every name and shape matches, else by
      the order in which the graph uses them (shapes must match). Reports how
      many are bit-identical to the compile machine's (SHA-1); the plans'
      checksums make mp-run refuse the others unless --unchecked-weights.

Exit status: 0 written (whether or not every value is identical: the report
says), 2 the export or the mapping failed (nothing usable written).
"""
import argparse
import hashlib
import inspect
import json
import os
import re
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def file_stem(name):
    """The .npy file name stem mp-run --weights looks a weight up by
    (lib/Runtime/PlanWeights.cpp, fileStem)."""
    out = re.sub(r"[^A-Za-z0-9._-]", "_", name) if name else "_"
    return "_" if out in (".", "..") else out


def initializers_in_use_order(model):
    """The model's initializers, in the order the graph first uses them
    (then any it does not use, in file order)."""
    inits = {i.name: i for i in model.graph.initializer}
    order, seen = [], set()
    for node in model.graph.node:
        for name in node.input:
            if name in inits and name not in seen:
                seen.add(name)
                order.append(inits[name])
    order += [i for i in model.graph.initializer if i.name not in seen]
    return order


# Tensors of at most this many elements keep their values in the manifest
# (shapes, axes, scalars: what a stand-in must not make up).
SMALL_TENSOR = 64


def describe(arrays, stats=False):
    """Name, dtype, shape and SHA-1 of each initializer; with stats, also
    what --fallback-stats draws stand-ins from."""
    import numpy as np
    from onnx import numpy_helper
    out = []
    for t in arrays:
        a = numpy_helper.to_array(t)
        d = {"name": t.name, "dtype": str(a.dtype), "shape": list(a.shape),
             "sha1": hashlib.sha1(a.tobytes()).hexdigest()}
        if stats:
            if a.size <= SMALL_TENSOR:
                d["values"] = a.reshape(-1).tolist()
            elif a.size and np.issubdtype(a.dtype, np.floating):
                f = a.astype(np.float64)
                d.update(mean=float(f.mean()), std=float(f.std()),
                         min=float(f.min()), max=float(f.max()))
        out.append(d)
    return out


def stand_in(w, rng):
    """A stand-in for the manifest entry w (--fallback-stats)."""
    import numpy as np
    dtype = np.dtype(w["dtype"])
    if "values" in w:
        return np.array(w["values"], dtype=dtype).reshape(w["shape"])
    if "mean" in w:
        a = rng.normal(w["mean"], w["std"], size=w["shape"])
        return np.clip(a, w["min"], w["max"]).astype(dtype)
    return np.zeros(w["shape"], dtype=dtype)


def write_npys(pairs, out_dir):
    """pairs: (name, numpy array). Writes out_dir/<stem>.npy each."""
    import numpy as np
    os.makedirs(out_dir, exist_ok=True)
    stems = {}
    for name, a in pairs:
        stem = file_stem(name)
        if stem in stems:
            sys.exit("gpu_kit_weights.py: %s and %s both map to %s.npy" % (
                stems[stem], name, stem))
        stems[stem] = name
        np.save(os.path.join(out_dir, stem + ".npy"), np.require(a, requirements="C"))


def cmd_extract(args):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(args.model)
    inits = initializers_in_use_order(model)
    write_npys([(t.name, numpy_helper.to_array(t)) for t in inits], args.dir)
    if args.manifest:
        with open(args.manifest, "w") as f:
            json.dump({"model": os.path.basename(args.model),
                       "initializers": describe(inits, stats=True)}, f,
                      indent=0)
    total = sum(os.path.getsize(os.path.join(args.dir, p))
                for p in os.listdir(args.dir))
    print("%s: %d initializers, %.1f MB as .npy in %s" % (
        args.model, len(inits), total / 1e6, args.dir))
    return 0


def export_again(name, path):
    """scripts/export_models.py's export of `name`, with the TorchScript
    exporter (the default before torch 2.9, and what made the kit's plans)."""
    import torch
    import export_models as em
    ctor, make_input, extra = {**em.MODELS, **em.EXTRA_MODELS}[name]
    torch.manual_seed(em.SEED)
    model = em.randomize_defaults(ctor()).eval()
    gen = torch.Generator().manual_seed(em.SEED + 1)
    x = make_input(2, gen)
    kwargs = dict(opset_version=em.OPSET, input_names=["input"],
                  output_names=["output"],
                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                  **extra)
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    with torch.no_grad():
        torch.onnx.export(model, (x,), path, **kwargs)
    return torch.__version__


def write_stand_ins(args, want):
    """--fallback-stats: seeded stand-ins from the manifest's statistics
    (exit 0); without it, exit 2."""
    import numpy as np
    if not args.fallback_stats:
        return 2
    if not any("values" in w or "mean" in w for w in want):
        print("gpu_kit_weights.py: the manifest has no statistics (made "
              "before --fallback-stats existed): no stand-ins")
        return 2
    rng = np.random.default_rng(0)
    write_npys([(w["name"], stand_in(w, rng)) for w in want], args.out)
    print("%s: wrote %d STAND-IN initializers drawn from the manifest's "
          "statistics (for timing only; mp-run needs --unchecked-weights)"
          % (args.name, len(want)))
    if args.status:
        with open(args.status, "w") as f:
            json.dump({"model": args.name, "torch": None,
                       "mapped": "stand-in", "identical": 0,
                       "total": len(want)}, f)
    return 0


def cmd_regenerate(args):
    import onnx
    from onnx import numpy_helper
    with open(args.manifest) as f:
        want = json.load(f)["initializers"]
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="gpu-kit-weights.") as tmp:
        path = os.path.join(tmp, args.name + ".onnx")
        try:
            version = export_again(args.name, path)
        except Exception as e:  # an exporter this torch no longer has, ...
            print("gpu_kit_weights.py: exporting %s failed: %s: %s" % (
                args.name, type(e).__name__, e))
            return write_stand_ins(args, want)
        model = onnx.load(path)
    got = initializers_in_use_order(model)
    arrays = [numpy_helper.to_array(t) for t in got]
    mine = describe(got)
    by_name = {d["name"]: i for i, d in enumerate(mine)}
    if all(w["name"] in by_name and
           mine[by_name[w["name"]]]["shape"] == w["shape"] for w in want):
        how = "by name"
        index = [by_name[w["name"]] for w in want]
    elif len(mine) == len(want) and all(
            m["shape"] == w["shape"] for m, w in zip(mine, want)):
        how = "by the order the graph uses them (the names differ)"
        index = list(range(len(want)))
    else:
        print("gpu_kit_weights.py: %s exported by torch %s has %d "
              "initializers whose names and shapes do not match the %d the "
              "plans were compiled with: cannot map them" % (
                  args.name, version, len(mine), len(want)))
        differ = [(i, m, w) for i, (m, w) in enumerate(zip(mine, want))
                  if m["shape"] != w["shape"]]
        for i, m, w in differ[:5]:
            print("  #%d: here %s %s, the plans' %s %s" % (
                i, m["name"], m["shape"], w["name"], w["shape"]))
        return write_stand_ins(args, want)
    identical = sum(1 for i, w in zip(index, want)
                    if mine[i]["sha1"] == w["sha1"])
    write_npys([(w["name"], arrays[i]) for i, w in zip(index, want)], args.out)
    print("%s: exported again by torch %s in %.1f s, %d initializers mapped "
          "%s; %d of %d bit-identical to the compile machine's" % (
              args.name, version, time.time() - start, len(want), how,
              identical, len(want)))
    if args.status:
        with open(args.status, "w") as f:
            json.dump({"model": args.name, "torch": version, "mapped": how,
                       "identical": identical, "total": len(want)}, f)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)
    e = sub.add_parser("extract")
    e.add_argument("model")
    e.add_argument("dir")
    e.add_argument("--manifest")
    g = sub.add_parser("regenerate")
    g.add_argument("name")
    g.add_argument("--manifest", required=True)
    g.add_argument("--out", required=True)
    g.add_argument("--status", help="also write the report as JSON here")
    g.add_argument("--fallback-stats", action="store_true",
                   help="where the export or mapping fails, write stand-ins "
                        "from the manifest's statistics (timing only)")
    args = ap.parse_args(argv)
    return cmd_extract(args) if args.verb == "extract" else cmd_regenerate(args)


if __name__ == "__main__":
    sys.exit(main())
