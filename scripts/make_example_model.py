#!/usr/bin/env python3
"""Write the small example model used by the README's first command.

    scripts/make_example_model.py [OUTPUT]   (default: examples/models/tiny_cnn.onnx
                                              relative to the repository root)

A tiny CNN for 1x3x32x32 float inputs, with seeded random weights:

    Conv(3->16, 3x3, pad 1) + BatchNorm + ReLU -> MaxPool 2x2
    -> Conv(16->32, 3x3, pad 1) + ReLU -> global average pool -> Flatten
    -> Linear(32->10) -> Softmax

Exported at opset 13 with training=PRESERVE and do_constant_folding=False so
the BatchNormalization node is kept (not folded into the Conv); node and
initializer names are left as torch produces them.  The output is
byte-for-byte reproducible (the script verifies this by exporting twice)
and is written atomically (temp file + rename).
"""

import hashlib
import io
import os
import sys

import onnx
import torch
import torch.nn as nn

OPSET = 13
SEED = 0
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO_ROOT, "examples", "models", "tiny_cnn.onnx")


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(32, 10)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = self.pool(self.relu1(self.bn1(self.conv1(x))))
        x = self.relu2(self.conv2(x))
        return self.softmax(self.fc(self.flatten(self.gap(x))))


def build():
    torch.manual_seed(SEED)
    model = TinyCNN()
    # Non-trivial BN statistics (defaults are weight=1, bias=0, mean=0, var=1).
    with torch.no_grad():
        model.bn1.weight.uniform_(0.5, 1.5)
        model.bn1.bias.normal_(0.0, 0.1)
        model.bn1.running_mean.normal_(0.0, 0.1)
        model.bn1.running_var.uniform_(0.5, 1.5)
    return model.eval()


def export_bytes():
    model = build()
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(SEED + 1))
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(
            model, (x,), buf,
            opset_version=OPSET,
            input_names=["input"], output_names=["output"],
            training=torch.onnx.TrainingMode.PRESERVE,
            do_constant_folding=False)
    m = onnx.load_from_string(buf.getvalue())
    # Drop doc strings (they can carry source paths) so the bytes do not
    # depend on where the script lives.
    m.doc_string = ""
    m.graph.doc_string = ""
    for n in m.graph.node:
        n.doc_string = ""
    onnx.checker.check_model(m)
    return m.SerializeToString(deterministic=True)


def main(argv):
    out = os.path.abspath(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    data = export_bytes()
    if hashlib.sha256(export_bytes()).digest() != hashlib.sha256(data).digest():
        sys.exit("error: ONNX export is not reproducible")
    if len(data) >= 100 * 1024:
        sys.exit("error: model is %d bytes, expected < 100 KB" % len(data))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = "%s.tmp.%d" % (out, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    print("%s  %d bytes  sha256 %s" % (out, len(data), hashlib.sha256(data).hexdigest()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
