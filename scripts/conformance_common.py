"""Shared by the conformance runner's modules (scripts/conformance.py is the
entry point): the suites and targets, which graph inputs are frozen into a
plan, how tool messages are classified (pass, fail, unsupported), a test's
Result, running a tool and reading a TensorProto file."""

import os
import re
import signal
import subprocess

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The backend test data of the ONNX release the build links: its source
# distribution, unpacked by scripts/build-onnx.sh.
DEFAULT_TESTDATA = os.environ.get(
    "MP_ONNX_TESTDATA",
    os.path.join(ROOT, ".deps", "onnx", "src", "onnx", "backend", "test",
                 "data"))
SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple", "light")
# Issue 22's bar: the share of node/ tests that pass end to end.
TARGET_NODE_PASS_RATE = 0.85

# ---------------------------------------------------------------------------
# Inputs frozen into the plan.
#
# op type -> positions of the operands that determine the shape of a result
# or are attributes in disguise (axes, k, ratio, ...). A graph input that
# feeds such an operand (directly, or through Identity/Cast) is frozen with
# --freeze-input to the test's data for it; every other graph input stays a
# runtime input of the plan. Data operands (Clip's min/max, Gather's indices,
# Compress's condition, GatherND, Where, ...) are never frozen.
_REDUCE_OPS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
               "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
               "ReduceLogSumExp", "ReduceSumSquare")
FREEZE_INPUTS = {
    "Reshape": (1,),             # shape
    "Slice": (1, 2, 3, 4),       # starts, ends, axes, steps
    "Expand": (1,),              # shape
    "Tile": (1,),                # repeats
    "Pad": (1, 2, 3),            # pads, constant_value, axes
    "Resize": (1, 2, 3),         # roi, scales, sizes
    "Upsample": (1,),            # scales
    "ConstantOfShape": (0,),     # shape
    "Range": (0, 1, 2),          # start, limit, delta
    "TopK": (1,),                # k
    "Split": (1,),               # split
    "Squeeze": (1,),             # axes
    "Unsqueeze": (1,),           # axes
    "CumSum": (1,),              # axis
    "OneHot": (1,),              # depth
    "Dropout": (1, 2),           # ratio, training_mode
    "Trilu": (1,),               # k
    "CenterCropPad": (1,),       # shape
    "Col2Im": (1, 2),            # image_shape, block_shape
    "MaxUnpool": (2,),           # output_shape
    "DFT": (1, 2),               # dft_length, axis
    "STFT": (1, 3),              # frame_step, frame_length
    "BlackmanWindow": (0,),      # size
    "HannWindow": (0,),          # size
    "HammingWindow": (0,),       # size
    "MelWeightMatrix": (0, 1, 2, 3, 4),
    "NonMaxSuppression": (2, 3, 4),  # max_output_boxes, iou/score thresholds
    "SplitToSequence": (1,),     # split
    "AffineGrid": (1,),          # size
}
FREEZE_INPUTS.update({op: (1,) for op in _REDUCE_OPS})
# Ops an input is followed through when looking for the graph input behind a
# shape operand.
PASS_THROUGH = ("Identity", "Cast")

# Tests whose expected data is known to disagree with the current ONNX
# specification; they still count as failures, and the note is added to
# their reason.
KNOWN_REFERENCE_ISSUES = {
    "test_cast_FLOAT_to_BFLOAT16":
        "ONNX 1.12's reference truncates to bfloat16; the spec and MixPrec "
        "round to nearest even",
    "test_castlike_FLOAT_to_BFLOAT16":
        "ONNX 1.12's reference truncates to bfloat16; the spec and MixPrec "
        "round to nearest even",
    "test_castlike_FLOAT_to_BFLOAT16_expanded":
        "ONNX 1.12's reference truncates to bfloat16; the spec and MixPrec "
        "round to nearest even",
}


# ---------------------------------------------------------------------------
# Classifying tool messages.

# mp-opt errors that mean "not implemented yet" rather than "wrong".
UNSUPPORTED_OPT = [
    re.compile(p) for p in (
        r"cannot lower",
        r"no typed op",
        r"unsupported element type",
        r"element type .* (is )?not supported",
        r"unsupported (data ?type|dtype|type)",
        r"is not supported",
        r"not supported yet",
        r"no lowering",
    )
]
# mp-run errors that mean "not implemented yet".
UNSUPPORTED_RUN = [
    re.compile(p) for p in (
        r"no CPU implementation",
        r"the CUDA backend does not implement",
        r"unsupported (element type|dtype|data ?type)",
    )
]
_NOISE = re.compile(r"^(PLEASE submit|Stack dump|\s*#\d+ |\s*\d+\.\s|"
                    r"Program arguments)")


def first_error_line(text):
    """The first line of a tool's output that says what went wrong."""
    lines = [l.rstrip() for l in text.splitlines() if l.strip()]
    for pat in (r"MISMATCH", r"\berror\b", r"Assertion", r"LLVM ERROR",
                r"terminate called", r"what\(\)", r"fail", r"abort"):
        for l in lines:
            if re.search(pat, l, re.IGNORECASE) and not _NOISE.match(l):
                return l
    for l in lines:
        if not _NOISE.match(l):
            return l
    return lines[0] if lines else ""


_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ (.*?)(?: \(/[^ ]*\+0x[0-9a-f]+\))?"
                    r"(?: [^ ]*:\d+(?::\d+)?)?$")


def crash_summary(text):
    """For a crash without an error message: the innermost frames of the
    stack dump below the signal handler, 'f() <- g() <- h()'."""
    lines = text.splitlines()
    error = first_error_line(text)
    if error and not _NOISE.match(error):
        return error
    frames = []
    for l in lines:
        m = _FRAME.match(l)
        if m:
            frames.append(m.group(1).strip())
    # Skip the signal handler and the libc frame that called it.
    start = 0
    for i, f in enumerate(frames):
        if "SignalHandler" in f or "PrintStackTrace" in f or \
                f.startswith("(/") or not f:
            start = i + 1
        else:
            break
    useful = [_strip_args(f) for f in frames[start:]
              if f and not f.startswith("(/")][:3]
    return ("in " + " <- ".join(useful)) if useful else (error or "")


def _strip_args(symbol):
    """'ns::f(int, char) const' -> 'ns::f()'."""
    s = symbol[:-6] if symbol.endswith(" const") else symbol
    if not s.endswith(")"):
        return symbol
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(s[i], 0)
        if depth == 0:
            return s[:i] + "()"
    return symbol


def shorten(line, testdir):
    """Drops the test data path from a message and trims it."""
    line = line.replace(testdir + "/", "").replace(testdir, "")
    line = re.sub(r"/tmp/[^ :]*/", "", line)
    # The tool's name and the file it worked on are known: drop them.
    line = re.sub(r"^(mp-run|mp-opt): ", "", line)
    line = re.sub(r"^(plan\d+\.mpplan|model\.onnx): ", "", line)
    line = re.sub(r"^unnamed node: ", "", line)
    line = " ".join(line.split())
    return line if len(line) <= 300 else line[:297] + "..."


def signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except (ValueError, AttributeError):
        return "signal %d" % -rc


def classify_opt(rc, out, testdir, timeout):
    if rc == "timeout":
        return "fail", "mp-opt timed out after %gs" % timeout
    line = shorten(first_error_line(out), testdir)
    if rc < 0:
        return "fail", "mp-opt crashed (%s): %s" % (
            signal_name(rc), shorten(crash_summary(out), testdir))
    if any(p.search(line) for p in UNSUPPORTED_OPT):
        return "unsupported", "mp-opt: " + line
    return "fail", "mp-opt: " + line


def classify_run(rc, out, testdir, timeout):
    if rc == "timeout":
        return "fail", "mp-run timed out after %gs" % timeout
    line = shorten(first_error_line(out), testdir)
    if rc < 0:
        return "fail", "mp-run crashed (%s): %s" % (
            signal_name(rc), shorten(crash_summary(out), testdir))
    if rc == 2 and any(p.search(out) for p in UNSUPPORTED_RUN):
        for l in out.splitlines():
            if any(p.search(l) for p in UNSUPPORTED_RUN):
                line = shorten(l, testdir)
                break
        return "unsupported", "mp-run: " + line
    if rc == 1:
        mism = [l for l in out.splitlines() if "MISMATCH" in l or
                ("output" in l and "ok," not in l)]
        if mism:
            line = shorten(mism[0], testdir)
        return "fail", "mp-run: " + line
    return "fail", "mp-run: " + line


# ---------------------------------------------------------------------------
# The result of one test, running a tool, reading a tensor file.

class Result:
    __slots__ = ("suite", "name", "status", "reason", "ops", "op",
                 "expanded", "typed", "seconds")

    def __init__(self, suite, name):
        self.suite, self.name = suite, name
        self.status, self.reason = "fail", ""
        self.ops, self.op, self.expanded = [], "", False
        self.typed = None  # pytorch-converted: imports without mp.onnx_op
        self.seconds = 0.0

    @property
    def key(self):
        return "%s/%s" % (self.suite, self.name)


def run_tool(cmd, timeout):
    """Returns (returncode or 'timeout', combined output)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = e.output or b""
        return "timeout", out.decode("utf-8", "replace")
    return p.returncode, p.stdout.decode("utf-8", "replace")


def read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t
