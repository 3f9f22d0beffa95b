// Levels, per-op-type and per-node overrides, bf16, I/O types.
// RUN: mp-opt %s --mp-autocast --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=DEFAULT
// RUN: mp-opt %s --mp-autocast=level=tensor-cores-only --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=TCO
// RUN: mp-opt %s --mp-autocast=level=unsafe-force-all --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=FORCE
// RUN: mp-opt %s --mp-autocast=target=bf16 --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=BF16
// RUN: mp-opt %s --mp-autocast="deny=MatMul allow=Softmax" --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=BYTYPE
// RUN: mp-opt %s --mp-autocast="deny-nodes=mm2" --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=BYNAME
// RUN: mp-opt %s --mp-autocast="deny-nodes=layer1/*" --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=BYGLOB
// RUN: mp-opt %s --mp-autocast="deny-nodes=layer1/* allow-nodes=layer1/mm1" --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=EXACTWINS
// RUN: mp-opt %s --mp-autocast=keep-io-types=false --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=IO
// RUN: mp-opt %s --mp-autocast-pipeline="level=tensor-cores-only target=bf16" --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=PIPELINE

func.func @mlp(%x: tensor<4x8xf32> {mp.name = "x"}, %w: tensor<8x8xf32> {mp.name = "w"}) -> tensor<4x8xf32> {
  %m1 = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("layer1/mm1")
  %a = mp.add %m1, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("layer1/add")
  %m2 = mp.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm2")
  %s = mp.softmax %m2 {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("softmax")
  return %s : tensor<4x8xf32>
}

// DEFAULT: mp.matmul {{.*}} -> tensor<4x8xf16> loc("layer1/mm1")
// DEFAULT: mp.add {{.*}}: (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16> loc("layer1/add")
// DEFAULT: mp.matmul {{.*}} -> tensor<4x8xf16> loc("mm2")
// DEFAULT: mp.softmax {{.*}}: (tensor<4x8xf32>) -> tensor<4x8xf32> loc("softmax")

// tensor-cores-only: only the matmuls; the add between them stays f32.
// TCO: mp.matmul {{.*}} -> tensor<4x8xf16> loc("layer1/mm1")
// TCO: mp.add {{.*}}: (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("layer1/add")
// TCO: mp.matmul {{.*}} -> tensor<4x8xf16> loc("mm2")

// unsafe-force-all: even the softmax.
// FORCE: mp.softmax {{.*}}: (tensor<4x8xf16>) -> tensor<4x8xf16> loc("softmax")

// BF16: mp.cast %arg0 {mp.outputs = ["x/bf16"], to = 16 : i64} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// BF16: mp.matmul {{.*}} -> tensor<4x8xbf16> loc("layer1/mm1")
// BF16: mp.softmax {{.*}}: (tensor<4x8xf32>) -> tensor<4x8xf32> loc("softmax")

// BYTYPE: mp.matmul {{.*}} -> tensor<4x8xf32> loc("layer1/mm1")
// BYTYPE: mp.add {{.*}} -> tensor<4x8xf32> loc("layer1/add")
// BYTYPE: mp.matmul {{.*}} -> tensor<4x8xf32> loc("mm2")
// BYTYPE: mp.softmax {{.*}}: (tensor<4x8xf16>) -> tensor<4x8xf16> loc("softmax")

// BYNAME: mp.matmul {{.*}} -> tensor<4x8xf16> loc("layer1/mm1")
// BYNAME: mp.add {{.*}} -> tensor<4x8xf16> loc("layer1/add")
// BYNAME: mp.matmul {{.*}}: (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm2")

// BYGLOB: mp.matmul {{.*}}: (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("layer1/mm1")
// BYGLOB: mp.add {{.*}} -> tensor<4x8xf32> loc("layer1/add")
// BYGLOB: mp.matmul {{.*}} -> tensor<4x8xf16> loc("mm2")

// An exact name beats a glob.
// EXACTWINS: mp.matmul {{.*}} -> tensor<4x8xf16> loc("layer1/mm1")
// EXACTWINS: mp.add {{.*}} -> tensor<4x8xf32> loc("layer1/add")

// keep-io-types=false: the input becomes f16 (one function signature
// change, no input cast); the output keeps what the softmax produces.
// IO: func.func @mlp(%arg0: tensor<4x8xf16> {mp.name = "x"}{{.*}}, %arg1: tensor<8x8xf16> {mp.name = "w"}{{.*}}) -> tensor<4x8xf32>
// IO-NOT: to = 10

// PIPELINE: mp.matmul {{.*}} -> tensor<4x8xbf16> loc("layer1/mm1")
// PIPELINE: mp.add {{.*}}: (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("layer1/add")

// An op the deployment target has no f16 kernel for (policy file key
// no_low_precision_kernel) stays f32 although its class is allow.
// RUN: mp-opt %s --mp-autocast=policy-file=%S/Inputs/no-kernel.json --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=NOKERNEL
// NOKERNEL: mp.matmul {{.*}}: (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("layer1/mm1")
