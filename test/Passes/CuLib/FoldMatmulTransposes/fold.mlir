// culib-fold-matmul-transposes: a transpose of the last two dims read only
// by matmuls becomes their trans_a / trans_b flag.
// RUN: mp-opt %s --culib-fold-matmul-transposes | FileCheck %s
// Round trip: the printed form parses back to the same IR.
// RUN: mp-opt %s --culib-fold-matmul-transposes | mp-opt | FileCheck %s
// RUN: mp-opt %s --culib-fold-matmul-transposes=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// A training step's input gradient dY * W^T (the weight transposed), and a
// batched A^T read by two matmuls, one of which already transposes B: the
// flags flip, the transposes and their buffers go.
// CHECK-LABEL: func.func @folded
// CHECK-NOT: culib.transpose
// CHECK: culib.matmul ins(%arg0, %[[W:.*]]) outs(%{{.*}}) {compute_type = f32, trans_b = true}
// CHECK: culib.matmul ins(%arg1, %arg2) outs(%{{.*}}) {compute_type = f32, trans_a = true}
// CHECK: culib.matmul ins(%arg1, %arg2) outs(%{{.*}}) {compute_type = f32, trans_a = true}
// CHECK-NOT: trans_b
// CHECK: return
// REPORT: remark: culib-fold-matmul-transposes: 3 transpose call(s) folded into 4 matmul operand(s); 280 bytes no longer written
func.func @folded(%dy: memref<4x8xf32>, %a: memref<2x3x5xf32>, %b: memref<2x3x4xf32>)
    -> (memref<4x2xf32>, memref<2x5x4xf32>, memref<2x5x4xf32>) {
  %w = culib.weight "w" dense<1.0> : tensor<2x8xf32> : memref<2x8xf32>
  %wt = culib.alloc : memref<8x2xf32>
  culib.transpose ins(%w) outs(%wt) {perm = array<i64: 1, 0>} : memref<2x8xf32>, memref<8x2xf32>
  %dx = culib.alloc : memref<4x2xf32>
  culib.matmul ins(%dy, %wt) outs(%dx) {compute_type = f32} : memref<4x8xf32>, memref<8x2xf32>, memref<4x2xf32>
  %at = culib.alloc : memref<2x5x3xf32>
  culib.transpose ins(%a) outs(%at) {perm = array<i64: 0, 2, 1>} : memref<2x3x5xf32>, memref<2x5x3xf32>
  %bt = culib.alloc : memref<2x4x3xf32>
  culib.transpose ins(%b) outs(%bt) {perm = array<i64: 0, 2, 1>} : memref<2x3x4xf32>, memref<2x4x3xf32>
  %y1 = culib.alloc : memref<2x5x4xf32>
  culib.matmul ins(%at, %b) outs(%y1) {compute_type = f32} : memref<2x5x3xf32>, memref<2x3x4xf32>, memref<2x5x4xf32>
  %y2 = culib.alloc : memref<2x5x4xf32>
  culib.matmul ins(%at, %bt) outs(%y2) {compute_type = f32, trans_b = true} : memref<2x5x3xf32>, memref<2x4x3xf32>, memref<2x5x4xf32>
  return %dx, %y1, %y2 : memref<4x2xf32>, memref<2x5x4xf32>, memref<2x5x4xf32>
}

// Transposes that stay: another call reads the result; the input changes
// between the transpose and the matmul; the perm moves a batch dim; the
// result is the matmul's C.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: culib.transpose
// CHECK-NOT: trans_a
// CHECK-NOT: trans_b
// CHECK: return
// REPORT: remark: culib-fold-matmul-transposes: 0 transpose call(s) folded into 0 matmul operand(s); 0 bytes no longer written
func.func @kept(%x: memref<4x4xf32>, %y: memref<2x3x4xf32>)
    -> (memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<3x2x2xf32>, memref<4x4xf32>) {
  %t1 = culib.alloc : memref<4x4xf32>
  culib.transpose ins(%x) outs(%t1) {perm = array<i64: 1, 0>} : memref<4x4xf32>, memref<4x4xf32>
  %m1 = culib.alloc : memref<4x4xf32>
  culib.matmul ins(%t1, %x) outs(%m1) {compute_type = f32} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  %n1 = culib.alloc : memref<4x4xf32>
  culib.elementwise neg ins(%t1) outs(%n1) : memref<4x4xf32>, memref<4x4xf32>
  %s = culib.alloc : memref<4x4xf32>
  culib.elementwise neg ins(%x) outs(%s) : memref<4x4xf32>, memref<4x4xf32>
  %t2 = culib.alloc : memref<4x4xf32>
  culib.transpose ins(%s) outs(%t2) {perm = array<i64: 1, 0>} : memref<4x4xf32>, memref<4x4xf32>
  culib.elementwise exp ins(%x) outs(%s) : memref<4x4xf32>, memref<4x4xf32>
  %m2 = culib.alloc : memref<4x4xf32>
  culib.matmul ins(%t2, %s) outs(%m2) {compute_type = f32} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  %t3 = culib.alloc : memref<3x2x4xf32>
  culib.transpose ins(%y) outs(%t3) {perm = array<i64: 1, 0, 2>} : memref<2x3x4xf32>, memref<3x2x4xf32>
  %w = culib.weight "w" dense<1.0> : tensor<4x2xf32> : memref<4x2xf32>
  %m3 = culib.alloc : memref<3x2x2xf32>
  culib.matmul ins(%t3, %w) outs(%m3) {compute_type = f32} : memref<3x2x4xf32>, memref<4x2xf32>, memref<3x2x2xf32>
  %t4 = culib.alloc : memref<4x4xf32>
  culib.transpose ins(%x) outs(%t4) {perm = array<i64: 1, 0>} : memref<4x4xf32>, memref<4x4xf32>
  %m4 = culib.alloc : memref<4x4xf32>
  culib.matmul ins(%x, %x) c(%t4) outs(%m4) {beta = 1.0 : f32, compute_type = f32} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>
  return %m1, %n1, %m2, %m3, %m4 : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>, memref<3x2x2xf32>, memref<4x4xf32>
}
