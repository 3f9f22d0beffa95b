// convert-mp-to-culib, library calls: Gemm and MatMul become cuBLASLt
// matmuls (alpha, beta, C, broadcast batches, the recorded accumulation type
// as the compute type); Einsum reductions, one batched matmul and a
// transpose.
// RUN: mp-opt %s --convert-mp-to-culib | FileCheck %s
// RUN: mp-opt %s --convert-mp-to-culib | mp-opt | FileCheck %s

// CHECK-LABEL: func.func @gemm_c_and_matmul
func.func @gemm_c_and_matmul(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<2x4xf32>,
                             %p: tensor<5x2x3xbf16>, %q: tensor<3x6xbf16>) -> (tensor<2x4xf32>, tensor<5x2x6xbf16>) {
  // A full C is scaled by beta.
  // CHECK: culib.matmul ins(%{{.*}}, %{{.*}}) c(%{{.*}}) outs(%{{.*}}) {alpha = 2.000000e+00 : f32, beta = 5.000000e-01 : f32, compute_type = f32}
  %y = mp.gemm %a, %b, %c {alpha = 2.0 : f32, beta = 0.5 : f32} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // 16-bit matmul accumulates in f32; B broadcasts over the batch.
  // CHECK: culib.matmul ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {compute_type = f32} : memref<5x2x3xbf16>, memref<3x6xbf16>, memref<5x2x6xbf16>
  %z = mp.matmul %p, %q : (tensor<5x2x3xbf16>, tensor<3x6xbf16>) -> tensor<5x2x6xbf16>
  return %y, %z : tensor<2x4xf32>, tensor<5x2x6xbf16>
}

// Gemm with a C that only broadcasts to [M, N]: expanded, then cuBLASLt's C.
// CHECK-LABEL: func.func @gemm_broadcast_c
// CHECK: culib.broadcast ins(%{{.*}}) outs(%[[C:.*]]) : memref<2x1xf32>, memref<2x4xf32>
// CHECK: culib.matmul ins(%{{.*}}, %{{.*}}) c(%[[C]]) outs(%{{.*}}) {beta = 1.000000e+00 : f32, compute_type = f32}
func.func @gemm_broadcast_c(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = mp.gemm %a, %b, %c : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// Einsum: letters only one operand has are summed first, then one batched
// matmul [batch, left, contracted] x [batch, contracted, right], and a
// transpose into the output's order.
// CHECK-LABEL: func.func @einsum
// CHECK: culib.reduce sum {{.*}} {axes = array<i64: 3>, compute_type = f32} : memref<2x3x4x5xf32>, memref<2x3x4xf32>
// CHECK-NEXT: culib.alloc
// CHECK-NEXT: culib.matmul ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {compute_type = f32} : memref<2x3x4xf32>, memref<2x4x6xf32>, memref<2x3x6xf32>
// CHECK: culib.transpose {{.*}} outs(%[[E:.*]]) {perm = array<i64: 0, 2, 1>} : memref<2x3x6xf32>, memref<2x6x3xf32>
// CHECK-NEXT: return %[[E]]
func.func @einsum(%a: tensor<2x3x4x5xf32>, %b: tensor<2x4x6xf32>) -> tensor<2x6x3xf32> {
  %0 = mp.einsum %a, %b {equation = "bijz,bjk->bki"} : (tensor<2x3x4x5xf32>, tensor<2x4x6xf32>) -> tensor<2x6x3xf32>
  return %0 : tensor<2x6x3xf32>
}

// The accumulation type recorded on the op (mp-autocast writes f32) becomes
// the call's compute type; here f16, which differs from the default f32.
// CHECK-LABEL: func.func @recorded_accumulation(
// CHECK: culib.matmul {{.*}}{compute_type = f16}
func.func @recorded_accumulation(%a: tensor<4x8xf16>, %b: tensor<8x4xf16>) -> tensor<4x4xf16> {
  %m = mp.matmul %a, %b {mp.accumulation_type = f16} : (tensor<4x8xf16>, tensor<8x4xf16>) -> tensor<4x4xf16>
  return %m : tensor<4x4xf16>
}
