// A JSON policy file: op-type classes, node names (glob and exact),
// attribute conditions and kept operands.
// RUN: mp-opt %s --mp-autocast=policy-file=%S/Inputs/policy.json --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s
// Options given on the command line override the file's settings.
// RUN: mp-opt %s --mp-autocast="policy-file=%S/Inputs/policy.json target=bf16" | FileCheck %s --check-prefix=BF16

func.func @policy(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %lo: tensor<f32>, %hi: tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: mp.softmax {{.*}}: (tensor<4x8xf16>) -> tensor<4x8xf16> loc("sm")
  %s = mp.softmax %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("sm")
  // CHECK: mp.relu {{.*}}: (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu")
  %r = mp.relu %s : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu")
  // CHECK: mp.matmul {{.*}} -> tensor<4x8xf32> loc("block2/mm")
  %m = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("block2/mm")
  // CHECK: mp.matmul {{.*}} -> tensor<4x8xf16> loc("block2/keep_low")
  %k = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("block2/keep_low")
  // The condition: a Gemm with transB = 1 stays f32, one without goes low.
  // CHECK: mp.gemm {{.*}} -> tensor<4x8xf32> loc("gemm_t")
  %g1 = mp.gemm %x, %w, %b {transB = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("gemm_t")
  // CHECK: mp.gemm {{.*}} -> tensor<4x8xf16> loc("gemm")
  %g2 = mp.gemm %x, %w, %b : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("gemm")
  // Clip's min and max are kept as they are (the file's keep_operands).
  // CHECK: mp.clip %{{.*}}, %arg3, %arg4 : (tensor<4x8xf16>, tensor<f32>, tensor<f32>) -> tensor<4x8xf16> loc("clip")
  %c = mp.clip %g2, %lo, %hi : (tensor<4x8xf32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32> loc("clip")
  %g3 = mp.gemm %c, %w, %b : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("gemm3")
  return %r, %m, %k, %g1, %g3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
// BF16: mp.softmax {{.*}}: (tensor<4x8xbf16>) -> tensor<4x8xbf16>
