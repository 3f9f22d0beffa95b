#!/usr/bin/env python3
"""Export the MixPrec benchmark/test models to ONNX (opset 13).

Six real architectures are built with random but seeded (deterministic)
weights -- no weight downloads -- and exported with ``torch.onnx.export``:

    resnet50       torchvision resnet50, eval, BN folded into Conv   [N,3,224,224]
    resnet18_bn    torchvision resnet18, BatchNormalization kept     [N,3,224,224]
    mobilenet_v2   torchvision mobilenet_v2, eval                    [N,3,224,224]
    squeezenet     torchvision squeezenet1_1, eval                   [N,3,224,224]
    bert_encoder   2-layer Transformer encoder classifier            [N,32] int64
    lstm_lm        2-layer LSTM language model                       [N,16] int64

two attention blocks (qkv_attention, swin_block), a small ConvNeXt
(convnext_block, torchvision's blocks, [N,3,32,32]), a small ViT (vit_small,
torchvision's VisionTransformer, [N,3,32,32]) and a GPT-style decoder
whose sequence length is dynamic too (gpt_decoder_seq, [N,S] int64, S <= 128).

Next to every ``<name>.onnx`` the script writes ``<name>.input.npy`` (the
deterministic sample input) and ``<name>.output.npy`` (torch's eval-mode
output on that input, float32); these are the reference outputs for the
correctness tests.  The batch dimension is dynamic (named "batch"), and
gpt_decoder_seq's sequence too ("seq"); the graph input is called ``input``
and the output ``output``.  For the dynamic-shape plan tests, some models
also get references at other sizes (SAMPLES): ``<name>.<tag>.input.npy`` and
``<name>.<tag>.output.npy``, e.g. ``bert_encoder.b3``, ``gpt_decoder_seq.b2s128``.

All files are written to a temporary name and renamed into place, so an
interrupted run never leaves a half-written file behind.

Usage:
    scripts/export_models.py [--out DIR] [--only NAME[,NAME]] [--batch N] [--list-ops]
"""

import argparse
import collections
import os
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision

OPSET = 13
SEED = 0

# Known-benign exporter noise: the LSTM batch-size warning (the initial
# states are built from Shape(input), so other batch sizes work -- checked)
# and the prim::Constant shape-inference note.
warnings.filterwarnings("ignore", message="Exporting a model to ONNX with a batch_size other than 1")
warnings.filterwarnings("ignore", message="The shape inference of prim::Constant type is missing")

_UMASK = os.umask(0)
os.umask(_UMASK)


# --------------------------------------------------------------------------
# Model definitions
# --------------------------------------------------------------------------

class BertEncoder(nn.Module):
    """BERT-style classifier: token + learned positional embedding,
    2 post-norm Transformer encoder layers (GELU), mean pooling, Linear(128,2)."""

    def __init__(self, vocab=1000, d_model=128, seq_len=32, nhead=4,
                 dim_ff=512, num_layers=2, num_classes=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(1, seq_len, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model=d_model, nhead=nhead, dim_feedforward=dim_ff,
            activation="gelu", batch_first=True)
        # enable_nested_tensor=False: no nested-tensor "sparsity" fast path.
        self.encoder = nn.TransformerEncoder(
            layer, num_layers=num_layers, enable_nested_tensor=False)
        # torch 1.13's TransformerEncoderLayer takes a fused fast path
        # (torch._transformer_encoder_layer_fwd) in eval mode under no_grad.
        # That path is only taken when activation_relu_or_gelu is non-zero;
        # clearing the flag forces the ordinary decomposed path (the
        # activation itself stays F.gelu), both for the reference forward
        # and for the ONNX trace, so they compute exactly the same thing.
        for l in self.encoder.layers:
            l.activation_relu_or_gelu = 0
        self.cls = nn.Linear(d_model, num_classes)

    def forward(self, ids):
        x = self.tok(ids) + self.pos
        x = self.encoder(x)
        return self.cls(x.mean(dim=1))


class LstmLM(nn.Module):
    """Embedding(500,64) -> LSTM(64,128,2 layers) -> Linear(128,500) -> log_softmax."""

    def __init__(self, vocab=500, emb=64, hidden=128, num_layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=num_layers, batch_first=True)
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, ids):
        x, _ = self.lstm(self.emb(ids))
        return torch.log_softmax(self.proj(x), dim=-1)


class GptDecoder(nn.Module):
    """GPT-style language model: token + learned positional embedding, 2
    pre-norm causal self-attention layers (GELU), a final LayerNorm and a
    Linear head over the vocabulary (next-token logits at every position)."""

    def __init__(self, vocab=1000, d_model=128, seq_len=32, nhead=4,
                 dim_ff=512, num_layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(1, seq_len, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model=d_model, nhead=nhead, dim_feedforward=dim_ff,
            activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(
            layer, num_layers=num_layers, enable_nested_tensor=False)
        for l in self.blocks.layers:  # the decomposed path (see BertEncoder)
            l.activation_relu_or_gelu = 0
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer(
            "causal", torch.triu(torch.full((seq_len, seq_len), float("-inf")),
                                 diagonal=1))

    def forward(self, ids):
        x = self.tok(ids) + self.pos
        x = self.blocks(x, mask=self.causal)
        return self.head(self.norm(x))


class GptDecoderSeq(GptDecoder):
    """GptDecoder for any sequence length up to seq_len, as GPT-2 writes it:
    the positions and the causal mask are the leading part of tables made
    for the longest sequence (a Slice by the input's length in the export)."""

    def __init__(self):
        super().__init__(seq_len=128)

    def forward(self, ids):
        s = ids.shape[1]
        x = self.tok(ids) + self.pos[:, :s]
        x = self.blocks(x, mask=self.causal[:s, :s])
        return self.head(self.norm(x))


class QkvAttention(nn.Module):
    """Self-attention as timm and Swin write it: one qkv projection,
    reshaped, permuted and unbound into q, k and v (an ONNX Split whose
    sizes are a constant and whose output shapes only shape inference
    gives), scaled q k^T, softmax, the heads merged back."""

    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class SwinBlock(nn.Module):
    """A Swin-style block: layer norm, padding to a multiple of the window
    (the pads computed from the input's shape with Mod and Sub, transposed
    into ONNX's order), a cyclic shift, window partition, QkvAttention per
    window, the windows merged, the shift undone, the padding cropped, a
    residual add."""

    def __init__(self, dim=32, heads=2, window=4, shift=2):
        super().__init__()
        self.window, self.shift = window, shift
        self.norm = nn.LayerNorm(dim)
        self.attn = QkvAttention(dim, heads)

    def forward(self, x):
        b, h, w, c = x.shape
        ws = self.window
        y = nn.functional.pad(self.norm(x),
                              (0, 0, 0, (ws - w % ws) % ws, 0, (ws - h % ws) % ws))
        _, hp, wp, _ = y.shape
        y = torch.roll(y, shifts=(-self.shift, -self.shift), dims=(1, 2))
        y = y.view(b, hp // ws, ws, wp // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        y = self.attn(y.reshape(-1, ws * ws, c))
        y = y.view(b, hp // ws, wp // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        y = torch.roll(y.reshape(b, hp, wp, c), shifts=(self.shift, self.shift),
                       dims=(1, 2))
        return x + y[:, :h, :w, :]


class ConvNextSmall(nn.Module):
    """A small ConvNeXt as torchvision builds its stages: a patchify stem,
    two blocks (depthwise 7x7 convolution, permute to channels last, layer
    norm, MLP, permute back, per-channel layer scale, residual), a
    downsampling layer norm and convolution, one more block and the head.
    The layer scales are drawn around 1 (torchvision starts them at 1e-6,
    which would hide the blocks' bodies from the comparison)."""

    def __init__(self, dim=32, classes=10):
        super().__init__()
        from torchvision.models.convnext import CNBlock, LayerNorm2d
        self.stem = nn.Sequential(nn.Conv2d(3, dim, 4, stride=4),
                                  LayerNorm2d(dim))
        self.stage1 = nn.Sequential(CNBlock(dim, 1.0, 0.0),
                                    CNBlock(dim, 1.0, 0.0))
        self.down = nn.Sequential(LayerNorm2d(dim),
                                  nn.Conv2d(dim, 2 * dim, 2, stride=2))
        self.stage2 = CNBlock(2 * dim, 1.0, 0.0)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(2 * dim, classes))
        with torch.no_grad():
            for block in (*self.stage1, self.stage2):
                block.layer_scale.uniform_(0.5, 1.5)

    def forward(self, x):
        return self.head(self.stage2(self.down(self.stage1(self.stem(x)))))


def vit_b_16():
    """torchvision's ViT-B/16 with attention the exporter takes: torch 1.13's
    MultiheadAttention runs a fused kernel (aten::_native_multi_head_attention,
    which has no ONNX export) in eval mode when no gradient is wanted; with
    gradients enabled it takes the decomposed path, the same arithmetic.
    (Its classifier head starts at zero: the output is the head's bias,
    whatever the encoder computes; vit_small checks the encoder.)"""
    return exportable_attention(torchvision.models.vit_b_16(weights=None))


def vit_small():
    """torchvision's VisionTransformer at a test size (32x32 images, 8x8
    patches, 2 layers of width 32, 2 heads): the class token read by the
    head after the encoder (Gather of token 0). The head is drawn at random
    (torchvision starts it at zero, which would hide the encoder)."""
    from torchvision.models.vision_transformer import VisionTransformer
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                              num_heads=2, hidden_dim=32, mlp_dim=64,
                              num_classes=10)
    nn.init.normal_(model.heads.head.weight, std=0.2)
    return exportable_attention(model)


def exportable_attention(model):
    """A torchvision ViT whose attention layers export (vit_b_16's note)."""
    for block in model.encoder.layers:
        attention = block.self_attention
        forward = attention.forward

        def decomposed(query, key, value, _forward=forward, **kwargs):
            with torch.enable_grad():
                return _forward(query, key, value, **kwargs)
        attention.forward = decomposed
    return model


def randomize_defaults(model):
    """Replace the constant default initialisations with seeded random values.

    Fresh torch modules initialise BatchNorm to weight=1, bias=0, mean=0,
    var=1, LayerNorm to weight=1, bias=0, many biases to 0, and
    nn.TransformerEncoder deep-copies one layer so all layers start out
    identical.  Exported as-is, those tensors are bit-identical, which makes
    the exporter deduplicate them into Identity nodes and makes BN/LN
    numerically trivial (bugs in folding or scale/shift handling would go
    unnoticed).  Values are kept in a range that keeps activations sane.
    """
    for mod in model.modules():
        if isinstance(mod, nn.TransformerEncoderLayer):
            # re-draw every layer independently (they are deep copies)
            mod.self_attn.out_proj.reset_parameters()
            mod.self_attn._reset_parameters()
            mod.linear1.reset_parameters()
            mod.linear2.reset_parameters()
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.normal_(0.0, 0.1)
                mod.running_mean.normal_(0.0, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
            elif isinstance(mod, nn.LayerNorm):
                mod.weight.uniform_(0.8, 1.2)
                mod.bias.normal_(0.0, 0.05)
        for name, p in model.named_parameters():
            if name.endswith("bias") and not p.any():
                p.normal_(0.0, 0.02)
    return model


def _image_input(batch, gen):
    return torch.randn(batch, 3, 224, 224, generator=gen)


def _token_input(vocab, seq):
    def make(batch, gen, seq=seq):
        return torch.randint(0, vocab, (batch, seq), generator=gen, dtype=torch.int64)
    return make


# name -> (constructor, input maker, export kwargs)
_BN_KEEP = dict(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
MODELS = collections.OrderedDict([
    ("resnet50", (lambda: torchvision.models.resnet50(weights=None),
                  _image_input, {})),
    ("resnet18_bn", (lambda: torchvision.models.resnet18(weights=None),
                     _image_input, _BN_KEEP)),
    ("mobilenet_v2", (lambda: torchvision.models.mobilenet_v2(weights=None),
                      _image_input, {})),
    ("squeezenet", (lambda: torchvision.models.squeezenet1_1(weights=None),
                    _image_input, {})),
    ("bert_encoder", (BertEncoder, _token_input(1000, 32), {})),
    ("lstm_lm", (LstmLM, _token_input(500, 16), {})),
    ("qkv_attention", (QkvAttention,
                       lambda batch, gen: torch.randn(batch, 10, 64, generator=gen),
                       {})),
    ("swin_block", (SwinBlock,
                    lambda batch, gen: torch.randn(batch, 6, 6, 32, generator=gen),
                    {})),
    ("convnext_block", (ConvNextSmall,
                        lambda batch, gen: torch.randn(batch, 3, 32, 32, generator=gen),
                        {})),
    ("vit_small", (vit_small,
                   lambda batch, gen: torch.randn(batch, 3, 32, 32, generator=gen),
                   {})),
    ("gpt_decoder_seq", (GptDecoderSeq, _token_input(1000, 32),
                         {"dynamic_axes": {"input": {0: "batch", 1: "seq"},
                                           "output": {0: "batch", 1: "seq"}}})),
])

# Extra reference pairs at other sizes (tag -> input maker arguments), for
# the tests of dynamic-shape plans (test/Models/dynamic_shapes.test).
SAMPLES = {
    "squeezenet": {"b1": dict(batch=1), "b3": dict(batch=3),
                   "b8": dict(batch=8)},
    "bert_encoder": {"b1": dict(batch=1), "b3": dict(batch=3),
                     "b8": dict(batch=8)},
    "gpt_decoder_seq": {"b2s16": dict(batch=2, seq=16),
                        "b2s128": dict(batch=2, seq=128),
                        "b1s37": dict(batch=1, seq=37)},
}

# Exported only on request (--only): large models for benchmarks.
EXTRA_MODELS = collections.OrderedDict([
    # ResNet-50 with its BatchNormalization nodes kept: what a training step
    # needs (the folded resnet50 above has no normalisation left, so its
    # activations grow through the 50 layers and a training step from the
    # initial weights overflows f16 on every step).
    ("resnet50_bn", (lambda: torchvision.models.resnet50(weights=None),
                     _image_input, _BN_KEEP)),
    # BERT-large-shaped: 24 layers, hidden 1024, 16 heads, FF 4096, a
    # 30522-word vocabulary, sequence 128: ~335M parameters, 1.3 GB of fp32.
    ("bert_large", (lambda: BertEncoder(vocab=30522, d_model=1024,
                                        seq_len=128, nhead=16, dim_ff=4096,
                                        num_layers=24),
                    _token_input(30522, 128), {})),
    # The CPU benchmark's other architectures (scripts/bench_cpu.py), each as
    # torchvision builds it, or (gpt_decoder) a small causal Transformer.
    ("efficientnet_b0", (lambda: torchvision.models.efficientnet_b0(weights=None),
                         _image_input, {})),
    ("convnext_tiny", (lambda: torchvision.models.convnext_tiny(weights=None),
                       _image_input, {})),
    ("vit_b_16", (vit_b_16, _image_input, {})),
    ("densenet121", (lambda: torchvision.models.densenet121(weights=None),
                     _image_input, {})),
    ("gpt_decoder", (GptDecoder, _token_input(1000, 32), {})),
])


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

def _atomic_target(path):
    """Return a temp path in the same directory as `path` (same filesystem)."""
    d, base = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix="." + base + ".", suffix=".tmp", dir=d or ".")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; use normal perms
    return tmp


def _save_npy(path, arr):
    tmp = _atomic_target(path)
    try:
        with open(tmp, "wb") as f:
            np.save(f, arr)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def export_one(name, out_dir, batch):
    ctor, make_input, extra = {**MODELS, **EXTRA_MODELS}[name]
    torch.manual_seed(SEED)
    model = randomize_defaults(ctor()).eval()
    gen = torch.Generator().manual_seed(SEED + 1)
    x = make_input(batch, gen)

    with torch.no_grad():
        ref = model(x).float().numpy()

    onnx_path = os.path.join(out_dir, name + ".onnx")
    _save_npy(os.path.join(out_dir, name + ".input.npy"), x.numpy())
    _save_npy(os.path.join(out_dir, name + ".output.npy"), ref)
    for tag, kwargs in SAMPLES.get(name, {}).items():
        sample = make_input(gen=gen, **kwargs)
        with torch.no_grad():
            out = model(sample).float().numpy()
        _save_npy(os.path.join(out_dir, "%s.%s.input.npy" % (name, tag)), sample.numpy())
        _save_npy(os.path.join(out_dir, "%s.%s.output.npy" % (name, tag)), out)

    extra = dict(extra)
    dynamic_axes = extra.pop("dynamic_axes",
                             {"input": {0: "batch"}, "output": {0: "batch"}})
    tmp = _atomic_target(onnx_path)
    try:
        with torch.no_grad():
            torch.onnx.export(
                model, (x,), tmp,
                opset_version=OPSET,
                input_names=["input"], output_names=["output"],
                dynamic_axes=dynamic_axes,
                **extra)
        onnx.checker.check_model(tmp)
        os.replace(tmp, onnx_path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return onnx_path


def op_histogram(model):
    return collections.Counter(n.op_type for n in model.graph.node)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/models", help="output directory (default: build/models)")
    ap.add_argument("--only", default="", help="comma-separated subset of: " + ",".join(MODELS) +
                    " (default: all of them), or the benchmark-only " + ",".join(EXTRA_MODELS))
    ap.add_argument("--batch", type=int, default=2, help="batch size of the sample input (default: 2)")
    ap.add_argument("--list-ops", action="store_true", help="print the set of ONNX op types per model")
    args = ap.parse_args(argv)

    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(MODELS)
    unknown = [n for n in names if n not in MODELS and n not in EXTRA_MODELS]
    if unknown:
        ap.error("unknown model(s): %s (known: %s)" % (
            ", ".join(unknown), ", ".join(list(MODELS) + list(EXTRA_MODELS))))
    if args.batch < 1:
        ap.error("--batch must be >= 1")

    os.makedirs(args.out, exist_ok=True)

    ops_per_model = collections.OrderedDict()
    t_all = time.time()
    for name in names:
        t0 = time.time()
        path = export_one(name, args.out, args.batch)
        m = onnx.load(path, load_external_data=False)
        hist = op_histogram(m)
        ops_per_model[name] = sorted(hist)
        size_mb = os.path.getsize(path) / (1 << 20)
        hist_s = " ".join("%s:%d" % (k, hist[k]) for k in sorted(hist))
        print("%-40s %7.2f MB %5d nodes %5.1fs  %s"
              % (path, size_mb, len(m.graph.node), time.time() - t0, hist_s), flush=True)

    if args.list_ops:
        for name, ops in ops_per_model.items():
            print("%s: %s" % (name, " ".join(ops)))
    print("exported %d model(s) in %.1fs" % (len(names), time.time() - t_all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
