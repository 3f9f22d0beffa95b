// culib-fuse-epilogues in training steps: an activation's gradient of a
// matmul's result (dY W^T reaching the activation) -- gelu_grad(t, x),
// gelu_tanh_grad, relu_grad or where(greater(x, 0), t, 0) -- becomes the
// matmul's activation-gradient epilogue, with the activation's forward input
// x as its aux operand; the matmul writes the gradient's output.
// RUN: mp-opt %s --culib-fuse-epilogues | FileCheck %s
// Round trip: the output parses and prints the same.
// RUN: mp-opt %s --culib-fuse-epilogues | mp-opt | FileCheck %s
// RUN: mp-opt %s --culib-fuse-epilogues=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// CHECK-LABEL: func.func @gelu_grad
// CHECK: %[[DX:.*]] = culib.alloc : memref<4x16xf32>
// CHECK-NEXT: culib.matmul ins(%arg0, %{{.*}}) aux(%arg1) outs(%[[DX]]) {compute_type = f32, epilogue = #culib.epilogue<gelu_grad>, trans_b = true}
// CHECK-NOT: culib.elementwise
// CHECK: return %[[DX]]
// REPORT: remark: culib-fuse-epilogues: 1 activation / bias / residual / cast call(s) folded into their convolution or matmul; 256 intermediate bytes no longer written
func.func @gelu_grad(%dy: memref<4x8xf32>, %x: memref<4x16xf32>) -> memref<4x16xf32> {
  %w = culib.weight "w" dense<0.5> : tensor<16x8xf32> : memref<16x8xf32>
  %t = culib.alloc : memref<4x16xf32>
  culib.matmul ins(%dy, %w) outs(%t) {compute_type = f32, trans_b = true} : memref<4x8xf32>, memref<16x8xf32>, memref<4x16xf32>
  %dx = culib.alloc : memref<4x16xf32>
  culib.elementwise gelu_grad ins(%t, %x) outs(%dx) : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>
  return %dx : memref<4x16xf32>
}

// bf16, the tanh form, with a C (a gradient summed in): C comes before the
// activation's derivative, as cuBLASLt's DGELU applies it.
// CHECK-LABEL: func.func @gelu_tanh_grad_with_c
// CHECK: culib.matmul ins(%arg0, %{{.*}}) c(%arg2) aux(%arg1) outs(%[[DX:[^)]*]]) {beta = 1.000000e+00 : f32, compute_type = f32, epilogue = #culib.epilogue<gelu_tanh_grad>}
// CHECK-NOT: culib.elementwise
// CHECK: return %[[DX]]
func.func @gelu_tanh_grad_with_c(%dy: memref<4x8xbf16>, %x: memref<4x16xbf16>, %c: memref<4x16xbf16>) -> memref<4x16xbf16> {
  %w = culib.weight "w" dense<0.5> : tensor<8x16xbf16> : memref<8x16xbf16>
  %t = culib.alloc : memref<4x16xbf16>
  culib.matmul ins(%dy, %w) c(%c) outs(%t) {beta = 1.0 : f32, compute_type = f32} : memref<4x8xbf16>, memref<8x16xbf16>, memref<4x16xbf16>, memref<4x16xbf16>
  %dx = culib.alloc : memref<4x16xbf16>
  culib.elementwise gelu_tanh_grad ins(%t, %x) outs(%dx) : memref<4x16xbf16>, memref<4x16xbf16>, memref<4x16xbf16>
  return %dx : memref<4x16xbf16>
}

// ReLU's gradient as mp-training writes it: where(greater(x, 0), t, 0).
// CHECK-LABEL: func.func @relu_grad_select
// CHECK: culib.matmul ins(%arg0, %{{.*}}) aux(%arg1) outs(%[[DX:[^)]*]]) {compute_type = f32, epilogue = #culib.epilogue<relu_grad>}
// CHECK-NOT: culib.elementwise
// CHECK-NOT: culib.weight "zero"
// CHECK: return %[[DX]]
func.func @relu_grad_select(%dy: memref<4x8xf32>, %x: memref<4x16xf32>) -> memref<4x16xf32> {
  %w = culib.weight "w" dense<0.5> : tensor<8x16xf32> : memref<8x16xf32>
  %zero = culib.weight "zero" dense<0.0> : tensor<f32> : memref<f32>
  %mask = culib.alloc : memref<4x16xi1>
  culib.elementwise greater ins(%x, %zero) outs(%mask) : memref<4x16xf32>, memref<f32>, memref<4x16xi1>
  %t = culib.alloc : memref<4x16xf32>
  culib.matmul ins(%dy, %w) outs(%t) {compute_type = f32} : memref<4x8xf32>, memref<8x16xf32>, memref<4x16xf32>
  %dx = culib.alloc : memref<4x16xf32>
  culib.elementwise where ins(%mask, %t, %zero) outs(%dx) : memref<4x16xi1>, memref<4x16xf32>, memref<f32>, memref<4x16xf32>
  return %dx : memref<4x16xf32>
}

// Not fusable: the matmul has a bias; the product is read by another call
// too; x is written between the matmul and the gradient.
// CHECK-LABEL: func.func @not_fusable
// CHECK-NOT: aux(
// CHECK-COUNT-3: culib.elementwise {{ *}}gelu_grad
func.func @not_fusable(%dy: memref<4x8xf32>, %x: memref<4x16xf32>) -> (memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>) {
  %w = culib.weight "w" dense<0.5> : tensor<8x16xf32> : memref<8x16xf32>
  %bias = culib.weight "bias" dense<0.5> : tensor<16xf32> : memref<16xf32>
  %t1 = culib.alloc : memref<4x16xf32>
  culib.matmul ins(%dy, %w) bias(%bias) outs(%t1) {compute_type = f32} : memref<4x8xf32>, memref<8x16xf32>, memref<16xf32>, memref<4x16xf32>
  %dx1 = culib.alloc : memref<4x16xf32>
  culib.elementwise gelu_grad ins(%t1, %x) outs(%dx1) : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>
  %t2 = culib.alloc : memref<4x16xf32>
  culib.matmul ins(%dy, %w) outs(%t2) {compute_type = f32} : memref<4x8xf32>, memref<8x16xf32>, memref<4x16xf32>
  %dx2 = culib.alloc : memref<4x16xf32>
  culib.elementwise gelu_grad ins(%t2, %x) outs(%dx2) : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>
  %x3 = culib.alloc : memref<4x16xf32>
  %t3 = culib.alloc : memref<4x16xf32>
  culib.matmul ins(%dy, %w) outs(%t3) {compute_type = f32} : memref<4x8xf32>, memref<8x16xf32>, memref<4x16xf32>
  culib.elementwise relu ins(%x) outs(%x3) : memref<4x16xf32>, memref<4x16xf32>
  %dx3 = culib.alloc : memref<4x16xf32>
  culib.elementwise gelu_grad ins(%t3, %x3) outs(%dx3) : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>
  return %dx1, %dx2, %t2, %dx3 : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>
}
