// culib-fuse-bias-gradients: the sum of dY over every dim but the last
// (a linear layer's bias gradient) is written by the matmul that reads dY
// as B for the weight gradient X^T dY.
// RUN: mp-opt %s --culib-fuse-bias-gradients | FileCheck %s
// Round trip: the printed form parses back to the same IR.
// RUN: mp-opt %s --culib-fuse-bias-gradients | mp-opt | FileCheck %s
// RUN: mp-opt %s --culib-fuse-bias-gradients=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// As a training step lowers a Gemm over [batch, seq, features]: the
// reduction first, then the weight gradient reading views of X and dY.
// The sums' buffer keeps its [1, 1, N] shape and its readers.
// CHECK-LABEL: func.func @linear_backward
// CHECK: %[[DB:.*]] = culib.alloc : memref<1x1x12xf32>
// CHECK-NOT: culib.reduce
// CHECK: culib.matmul ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) bias_grad(%[[DB]]) {compute_type = f32, trans_a = true}
// CHECK: culib.elementwise neg ins(%[[DB]])
// REPORT: remark: culib-fuse-bias-gradients: 1 bias gradient(s) summed by the matmul of their weight gradient
func.func @linear_backward(%x: memref<2x32x24xf32>, %dy: memref<2x32x12xf32>)
    -> (memref<24x12xf32>, memref<1x1x12xf32>) {
  %db = culib.alloc : memref<1x1x12xf32>
  culib.reduce sum ins(%dy) outs(%db) {axes = array<i64: 0, 1>, compute_type = f32} : memref<2x32x12xf32>, memref<1x1x12xf32>
  %x2 = culib.view %x : memref<2x32x24xf32> to memref<64x24xf32>
  %dy2 = culib.view %dy : memref<2x32x12xf32> to memref<64x12xf32>
  %dw = culib.alloc : memref<24x12xf32>
  culib.matmul ins(%x2, %dy2) outs(%dw) {compute_type = f32, trans_a = true} : memref<64x24xf32>, memref<64x12xf32>, memref<24x12xf32>
  %neg = culib.alloc : memref<1x1x12xf32>
  culib.elementwise neg ins(%db) outs(%neg) : memref<1x1x12xf32>, memref<1x1x12xf32>
  return %dw, %neg : memref<24x12xf32>, memref<1x1x12xf32>
}

// The weight gradient first: the sums' buffer moves before it.
// CHECK-LABEL: func.func @matmul_first
// CHECK: %[[DB:.*]] = culib.alloc : memref<12xbf16>
// CHECK-NEXT: culib.matmul ins(%arg0, %arg1) outs(%{{.*}}) bias_grad(%[[DB]])
// CHECK-NOT: culib.reduce
// CHECK: return
func.func @matmul_first(%x: memref<64x24xbf16>, %dy: memref<64x12xbf16>)
    -> (memref<24x12xbf16>, memref<12xbf16>) {
  %dw = culib.alloc : memref<24x12xbf16>
  culib.matmul ins(%x, %dy) outs(%dw) {compute_type = f32, trans_a = true} : memref<64x24xbf16>, memref<64x12xbf16>, memref<24x12xbf16>
  %db = culib.alloc : memref<12xbf16>
  culib.reduce sum ins(%dy) outs(%db) {axes = array<i64: 0>, compute_type = f32} : memref<64x12xbf16>, memref<12xbf16>
  return %dw, %db : memref<24x12xbf16>, memref<12xbf16>
}

// A Gemm with transB = 1 (W [out, in]): dW = dY^T X reads dY as A,
// transposed; the sums are op(A)'s over K.
// CHECK-LABEL: func.func @gemm_weight_gradient
// CHECK-NOT: culib.reduce
// CHECK: culib.matmul ins(%arg0, %arg1) outs(%{{.*}}) bias_grad(%{{.*}}) {bias_grad_of_a = true, compute_type = f32, trans_a = true}
func.func @gemm_weight_gradient(%dy: memref<64x12xf32>, %x: memref<64x24xf32>)
    -> (memref<12x24xf32>, memref<12xf32>) {
  %db = culib.alloc : memref<12xf32>
  culib.reduce sum ins(%dy) outs(%db) {axes = array<i64: 0>, compute_type = f32} : memref<64x12xf32>, memref<12xf32>
  %dw = culib.alloc : memref<12x24xf32>
  culib.matmul ins(%dy, %x) outs(%dw) {compute_type = f32, trans_a = true} : memref<64x12xf32>, memref<64x24xf32>, memref<12x24xf32>
  return %dw, %db : memref<12x24xf32>, memref<12xf32>
}

// Reductions that stay: dY changes between the two calls; the sums are
// read before the matmul; the matmul reads dY transposed; the reduction
// is a mean; it keeps a dim other than the last.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: culib.reduce
// CHECK-NOT: bias_grad
// CHECK: return
// REPORT: remark: culib-fuse-bias-gradients: 0 bias gradient(s)
func.func @kept(%x: memref<64x24xf32>, %dy: memref<64x12xf32>, %dyt: memref<12x64xf32>)
    -> (memref<12xf32>, memref<12xf32>, memref<12xf32>, memref<12xf32>, memref<64xf32>,
        memref<24x12xf32>, memref<24x12xf32>, memref<24x12xf32>, memref<24x12xf32>) {
  %t = culib.alloc : memref<64x12xf32>
  culib.elementwise neg ins(%dy) outs(%t) : memref<64x12xf32>, memref<64x12xf32>
  %s1 = culib.alloc : memref<12xf32>
  culib.reduce sum ins(%t) outs(%s1) {axes = array<i64: 0>, compute_type = f32} : memref<64x12xf32>, memref<12xf32>
  culib.elementwise exp ins(%dy) outs(%t) : memref<64x12xf32>, memref<64x12xf32>
  %w1 = culib.alloc : memref<24x12xf32>
  culib.matmul ins(%x, %t) outs(%w1) {compute_type = f32, trans_a = true} : memref<64x24xf32>, memref<64x12xf32>, memref<24x12xf32>
  %s2 = culib.alloc : memref<12xf32>
  culib.reduce sum ins(%dy) outs(%s2) {axes = array<i64: 0>, compute_type = f32} : memref<64x12xf32>, memref<12xf32>
  %r = culib.alloc : memref<12xf32>
  culib.elementwise neg ins(%s2) outs(%r) : memref<12xf32>, memref<12xf32>
  %w2 = culib.alloc : memref<24x12xf32>
  culib.matmul ins(%x, %dy) outs(%w2) {compute_type = f32, trans_a = true} : memref<64x24xf32>, memref<64x12xf32>, memref<24x12xf32>
  %s3 = culib.alloc : memref<12xf32>
  culib.reduce sum ins(%dyt) outs(%s3) {axes = array<i64: 1>, compute_type = f32} : memref<12x64xf32>, memref<12xf32>
  %w3 = culib.alloc : memref<24x12xf32>
  culib.matmul ins(%x, %dyt) outs(%w3) {compute_type = f32, trans_a = true, trans_b = true} : memref<64x24xf32>, memref<12x64xf32>, memref<24x12xf32>
  %s4 = culib.alloc : memref<12xf32>
  culib.reduce mean ins(%dy) outs(%s4) {axes = array<i64: 0>, compute_type = f32} : memref<64x12xf32>, memref<12xf32>
  %s5 = culib.alloc : memref<64xf32>
  culib.reduce sum ins(%dy) outs(%s5) {axes = array<i64: 1>, compute_type = f32} : memref<64x12xf32>, memref<64xf32>
  %w4 = culib.alloc : memref<24x12xf32>
  culib.matmul ins(%x, %dy) outs(%w4) {compute_type = f32, trans_a = true} : memref<64x24xf32>, memref<64x12xf32>, memref<24x12xf32>
  return %s1, %r, %s3, %s4, %s5, %w1, %w2, %w3, %w4 : memref<12xf32>, memref<12xf32>, memref<12xf32>, memref<12xf32>, memref<64xf32>, memref<24x12xf32>, memref<24x12xf32>, memref<24x12xf32>, memref<24x12xf32>
}
