// Every culib op parses, verifies and prints back to a form that parses to
// the same IR.
// RUN: mp-opt %s | FileCheck %s
// RUN: mp-opt %s | mp-opt | FileCheck %s
// RUN: mp-opt %s -mlir-print-op-generic | mp-opt | FileCheck %s

// CHECK-LABEL: func.func @resnet_block
func.func @resnet_block(%x: memref<1x3x8x8xf16>, %out: memref<1x10xf32>) {
  // CHECK: %[[W:.*]] = culib.weight "conv1.weight" dense<1.000000e+00> : tensor<4x3x3x3xf16> : memref<4x3x3x3xf16>
  %w = culib.weight "conv1.weight" dense<1.0> : tensor<4x3x3x3xf16> : memref<4x3x3x3xf16>
  // CHECK: %[[B:.*]] = culib.weight "conv1.bias" dense<0.000000e+00> : tensor<4xf16> : memref<4xf16>
  %b = culib.weight "conv1.bias" dense<0.0> : tensor<4xf16> : memref<4xf16>
  // CHECK: %[[Y:.*]] = culib.alloc {offset = 0 : i64} : memref<1x4x8x8xf16>
  %y = culib.alloc {offset = 0 : i64} : memref<1x4x8x8xf16>
  // CHECK: culib.conv_fwd ins(%{{.*}}, %[[W]]) bias(%[[B]]) outs(%[[Y]]) {activation = #culib.epilogue<relu>, compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf16>, memref<4x3x3x3xf16>, memref<4xf16>, memref<1x4x8x8xf16>
  culib.conv_fwd ins(%x, %w) bias(%b) outs(%y) {activation = #culib.epilogue<relu>, compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf16>, memref<4x3x3x3xf16>, memref<4xf16>, memref<1x4x8x8xf16>
  %s = culib.weight "bn.scale" dense<1.0> : tensor<4xf32> : memref<4xf32>
  %z = culib.alloc {offset = 512 : i64} : memref<1x4x8x8xf16>
  // CHECK: culib.batch_norm_inference ins(%[[Y]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) outs(%{{.*}}) {epsilon = 9.99999974E-6 : f32}
  culib.batch_norm_inference ins(%y, %s, %s, %s, %s) outs(%z) {epsilon = 1.0e-5 : f32} : memref<1x4x8x8xf16>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<1x4x8x8xf16>
  %p = culib.alloc : memref<1x4x4x4xf16>
  %i = culib.alloc : memref<1x4x4x4xi64>
  // CHECK: culib.pool ins(%{{.*}}) outs(%{{.*}}) indices(%{{.*}}) {mode = "max", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>} : memref<1x4x8x8xf16>, memref<1x4x4x4xf16>, memref<1x4x4x4xi64>
  culib.pool ins(%z) outs(%p) indices(%i) {mode = "max", window = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : memref<1x4x8x8xf16>, memref<1x4x4x4xf16>, memref<1x4x4x4xi64>
  %flat = culib.alloc : memref<1x64xf16>
  %fc = culib.weight "fc.weight" dense<0.5> : tensor<10x64xf16> : memref<10x64xf16>
  %fcb = culib.weight "fc.bias" dense<0.5> : tensor<10xf32> : memref<10xf32>
  %logits = culib.alloc : memref<1x10xf32>
  // CHECK: culib.matmul ins(%{{.*}}, %{{.*}}) bias(%{{.*}}) outs(%{{.*}}) {compute_type = f32, epilogue = #culib.epilogue<relu>, trans_b = true} : memref<1x64xf16>, memref<10x64xf16>, memref<10xf32>, memref<1x10xf32>
  culib.matmul ins(%flat, %fc) bias(%fcb) outs(%logits) {compute_type = f32, epilogue = #culib.epilogue<relu>, trans_b = true} : memref<1x64xf16>, memref<10x64xf16>, memref<10xf32>, memref<1x10xf32>
  // CHECK: culib.softmax ins(%{{.*}}) outs(%{{.*}}) {axis = 1 : i64, log = true} : memref<1x10xf32>, memref<1x10xf32>
  culib.softmax ins(%logits) outs(%out) {axis = 1 : i64, log = true} : memref<1x10xf32>, memref<1x10xf32>
  return
}

// Batched matmul with broadcast batch dims, C scaled by beta.
// CHECK-LABEL: func.func @batched
// CHECK: culib.matmul ins(%{{.*}}, %{{.*}}) c(%{{.*}}) outs(%{{.*}}) {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32, compute_type = f32, trans_a = true}
func.func @batched(%a: memref<4x1x8x3xbf16>, %b: memref<5x8x6xbf16>, %c: memref<4x5x3x6xf32>, %d: memref<4x5x3x6xf32>) {
  culib.matmul ins(%a, %b) c(%c) outs(%d) {alpha = 0.5 : f32, beta = 1.0 : f32, compute_type = f32, trans_a = true} : memref<4x1x8x3xbf16>, memref<5x8x6xbf16>, memref<4x5x3x6xf32>, memref<4x5x3x6xf32>
  return
}

// A weight gradient X^T dY that also sums dY's rows: the bias gradient.
// An activation's gradient as the epilogue of dY W^T, with aux.
// CHECK-LABEL: func.func @activation_gradient
// CHECK: culib.matmul ins(%{{.*}}, %{{.*}}) aux(%{{.*}}) outs(%{{.*}}) {compute_type = f32, epilogue = #culib.epilogue<gelu_grad>, trans_b = true} : memref<4x8xbf16>, memref<16x8xbf16>, memref<4x16xbf16>, memref<4x16xbf16>
func.func @activation_gradient(%dy: memref<4x8xbf16>, %w: memref<16x8xbf16>, %x: memref<4x16xbf16>, %dx: memref<4x16xbf16>) {
  culib.matmul ins(%dy, %w) aux(%x) outs(%dx) {compute_type = f32, epilogue = #culib.epilogue<gelu_grad>, trans_b = true} : memref<4x8xbf16>, memref<16x8xbf16>, memref<4x16xbf16>, memref<4x16xbf16>
  return
}

// CHECK-LABEL: func.func @weight_and_bias_gradient
// CHECK: culib.matmul ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) bias_grad(%{{.*}}) {compute_type = f32, trans_a = true} : memref<64x24xbf16>, memref<64x12xbf16>, memref<24x12xbf16>, memref<1x1x12xbf16>
func.func @weight_and_bias_gradient(%x: memref<64x24xbf16>, %dy: memref<64x12xbf16>, %dw: memref<24x12xbf16>, %db: memref<1x1x12xbf16>) {
  culib.matmul ins(%x, %dy) outs(%dw) bias_grad(%db) {compute_type = f32, trans_a = true} : memref<64x24xbf16>, memref<64x12xbf16>, memref<24x12xbf16>, memref<1x1x12xbf16>
  return
}

// Training-mode batch norm and NHWC grouped convolution.
// CHECK-LABEL: func.func @training
// CHECK: culib.batch_norm_training
// CHECK: culib.conv_fwd {{.*}}groups = 2 : i64, layout = #culib.layout<nhwc>
func.func @training(%x: memref<2x3x4x4xf32>, %v: memref<3xf32>, %y: memref<2x3x4x4xf32>, %r1: memref<3xf32>, %r2: memref<3xf32>,
                    %xh: memref<1x6x6x4xf16>, %wh: memref<8x3x3x2xf16>, %yh: memref<1x4x4x8xf16>) {
  culib.batch_norm_training ins(%x, %v, %v, %v, %v) outs(%y, %r1, %r2) {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32} : memref<2x3x4x4xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<2x3x4x4xf32>, memref<3xf32>, memref<3xf32>
  culib.conv_fwd ins(%xh, %wh) outs(%yh) {compute_type = f32, dilations = array<i64: 1, 1>, groups = 2 : i64, layout = #culib.layout<nhwc>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x6x6x4xf16>, memref<8x3x3x2xf16>, memref<1x4x4x8xf16>
  return
}

// Fused attention: Q, K and V as strided views of one projection, a mask
// broadcast with stride 0.
// CHECK-LABEL: func.func @attention
// CHECK: culib.attention ins(%arg0, %arg0, %arg0) mask(%arg1) outs(%arg2) {k_view = array<i64: 6, 18, 3, 36, 1>, mask_view = array<i64: 0, 0, 0, 5, 1>, o_view = array<i64: 0, 6, 3, 12, 1>, q_view = array<i64: 0, 18, 3, 36, 1>, scale = 5.000000e-01 : f32, shape = array<i64: 2, 2, 5, 5, 3, 3>, v_view = array<i64: 12, 18, 3, 36, 1>} : memref<5x2x18xbf16>, memref<5x2x18xbf16>, memref<5x2x18xbf16>, memref<1x5x5xf32>, memref<10x6xbf16>
func.func @attention(%qkv: memref<5x2x18xbf16>, %mask: memref<1x5x5xf32>, %o: memref<10x6xbf16>) {
  culib.attention ins(%qkv, %qkv, %qkv) mask(%mask) outs(%o) {shape = array<i64: 2, 2, 5, 5, 3, 3>, q_view = array<i64: 0, 18, 3, 36, 1>, k_view = array<i64: 6, 18, 3, 36, 1>, v_view = array<i64: 12, 18, 3, 36, 1>, o_view = array<i64: 0, 6, 3, 12, 1>, mask_view = array<i64: 0, 0, 0, 5, 1>, scale = 0.5 : f32} : memref<5x2x18xbf16>, memref<5x2x18xbf16>, memref<5x2x18xbf16>, memref<1x5x5xf32>, memref<10x6xbf16>
  return
}

// A convolution with bias, residual and SiLU.
// CHECK-LABEL: func.func @conv_residual
// CHECK: culib.conv_fwd ins(%arg0, %arg1) bias(%arg2) residual(%arg3) outs(%arg3) {activation = #culib.epilogue<silu>
func.func @conv_residual(%x: memref<1x3x8x8xbf16>, %w: memref<4x3x3x3xbf16>, %b: memref<4xf32>, %y: memref<1x4x6x6xbf16>) {
  culib.conv_fwd ins(%x, %w) bias(%b) residual(%y) outs(%y) {activation = #culib.epilogue<silu>, compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x8x8xbf16>, memref<4x3x3x3xbf16>, memref<4xf32>, memref<1x4x6x6xbf16>, memref<1x4x6x6xbf16>
  return
}

// The activations of both calls: a matmul's SiLU and GELU (tanh) epilogues, a
// convolution's GELU; f16 inputs into an f32 result (a cast folded in).
// CHECK-LABEL: func.func @activations
// CHECK: culib.matmul ins(%arg0, %arg1) outs(%arg2) {compute_type = f32, epilogue = #culib.epilogue<silu>}
// CHECK: culib.matmul ins(%arg0, %arg1) outs(%arg2) {compute_type = f32, epilogue = #culib.epilogue<gelu_tanh>}
// CHECK: culib.conv_fwd ins(%arg3, %arg4) outs(%arg5) {activation = #culib.epilogue<gelu>
func.func @activations(%a: memref<2x3xf16>, %b: memref<3x5xf16>, %d: memref<2x5xf32>, %x: memref<1x3x8x8xf16>, %w: memref<4x3x3x3xf16>, %y: memref<1x4x6x6xf32>) {
  culib.matmul ins(%a, %b) outs(%d) {compute_type = f32, epilogue = #culib.epilogue<silu>} : memref<2x3xf16>, memref<3x5xf16>, memref<2x5xf32>
  culib.matmul ins(%a, %b) outs(%d) {compute_type = f32, epilogue = #culib.epilogue<gelu_tanh>} : memref<2x3xf16>, memref<3x5xf16>, memref<2x5xf32>
  culib.conv_fwd ins(%x, %w) outs(%y) {activation = #culib.epilogue<gelu>, compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf16>, memref<4x3x3x3xf16>, memref<1x4x6x6xf32>
  return
}
