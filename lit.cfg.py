# -*- Python -*-
# lit configuration of the MixPrec test suite. The build tree's
# test/lit.site.cfg.py sets the paths and loads this file.
import os
import shutil

import lit.formats
import lit.llvm

lit.llvm.initialize(lit_config, config)
from lit.llvm import llvm_config

config.name = "MixPrec"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test", ".py"]

# Tests live under test/; the other top-level folders are not tests.
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mp_obj_root, "test")
config.excludes = [
    name
    for name in os.listdir(config.test_source_root)
    if name != "test"
] + ["Inputs", "unit", "CMakeLists.txt", "lit.site.cfg.py.in"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%python", config.mp_python))
config.substitutions.append(("%models", config.mp_models_dir))
config.substitutions.append(("%repo", config.test_source_root))
config.substitutions.append(("%testdata", config.mp_onnx_testdata))
config.substitutions.append(("%mp_obj", config.mp_obj_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
# A sanitizer build (scripts/sanitize.sh) passes its report options to every
# tool; tests that cannot run under the sanitizers say UNSUPPORTED: sanitizers.
llvm_config.with_system_environment(["ASAN_OPTIONS", "UBSAN_OPTIONS",
                                     "LSAN_OPTIONS"])
# What picks the CPU kernels of the libraries the runtime calls: OpenBLAS's
# kernel family and thread count, oneDNN's highest ISA. lit drops variables
# it is not told of, so without these a portability run
# (scripts/check-portability.sh) would test the machine's default alone.
llvm_config.with_system_environment(["OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
                                     "OPENBLAS_VERBOSE", "OMP_NUM_THREADS",
                                     "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA",
                                     "MP_VECTOR_MATH_ISA"])
if config.mp_sanitizers:
    config.available_features.add("sanitizers")
llvm_config.use_default_substitutions()

tool_dirs = [config.mp_tools_dir, config.llvm_tools_dir]
tools = ["mp-opt", "mp-import-suite"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.mp_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

if os.path.exists(os.path.join(config.mp_models_dir, "resnet50.onnx")):
    config.available_features.add("models")
if os.path.isdir(config.mp_onnx_testdata):
    config.available_features.add("onnx-testdata")
# Data-parallel training: mp-run built with MPI and an mpirun to start it.
# `%mpirun N cmd` runs N ranks on this machine, more than its cores if need
# be, as root too (CI runs as root), and ends a run that hangs after 5 minutes.
if getattr(config, "mp_have_mpi", "") and shutil.which("mpirun"):
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", "mpirun --oversubscribe --bind-to none --timeout 300 -n"))
    for name in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
        config.environment[name] = "1"
# Graphviz draws the autocast report's SVG picture.
if shutil.which("dot"):
    config.available_features.add("graphviz")
# Tests that write ONNX models or run scripts/conformance.py need the onnx
# package in %python.
import subprocess

try:
    _has_onnx = subprocess.run([config.mp_python, "-c", "import onnx"],
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL,
                               timeout=60).returncode == 0
except Exception:
    _has_onnx = False
if _has_onnx:
    config.available_features.add("python-onnx")
# The 8x8 digits data set of scikit-learn (Debian's python3-sklearn).
try:
    if subprocess.run([config.mp_python, "-c", "import sklearn.datasets"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                      timeout=120).returncode == 0:
        config.available_features.add("python-sklearn")
except Exception:
    pass

# The peers (ONNX Runtime, onnxconverter-common) live in the project's venv.
_peer_python = os.path.join(config.test_source_root, ".venv", "bin", "python")
if os.path.exists(_peer_python):
    config.substitutions.append(("%peer_python", _peer_python))
    try:
        if subprocess.run([_peer_python, "-c", "import onnxruntime, onnx"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          timeout=120).returncode == 0:
            config.available_features.add("onnxruntime")
    except Exception:
        pass
