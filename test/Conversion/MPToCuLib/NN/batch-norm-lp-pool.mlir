// convert-mp-to-culib, NN ops: 16-bit batch-norm statistics widened to f32
// in inference; LpPool as |x|^p, an average pool and ^(1/p).
// RUN: mp-opt %s --convert-mp-to-culib | FileCheck %s
// RUN: mp-opt %s --convert-mp-to-culib | mp-opt | FileCheck %s

// In inference, 16-bit scale, bias and statistics (as onnxconverter-common
// writes them) are widened to f32 for cuDNN; the data stays f16.
// CHECK-LABEL: func.func @batch_norm_f16_statistics
func.func @batch_norm_f16_statistics(%x: tensor<1x2x3xf16>, %s: tensor<2xf16>, %b: tensor<2xf32>, %mean: tensor<2xf16>, %var: tensor<2xf16>) -> tensor<1x2x3xf16> {
  // CHECK: %[[S:.*]] = culib.alloc : memref<2xf32>
  // CHECK-NEXT: culib.cast ins(%arg1) outs(%[[S]]) : memref<2xf16>, memref<2xf32>
  // CHECK: %[[M:.*]] = culib.alloc : memref<2xf32>
  // CHECK-NEXT: culib.cast ins(%arg3) outs(%[[M]]) : memref<2xf16>, memref<2xf32>
  // CHECK: %[[V:.*]] = culib.alloc : memref<2xf32>
  // CHECK-NEXT: culib.cast ins(%arg4) outs(%[[V]]) : memref<2xf16>, memref<2xf32>
  // CHECK: culib.batch_norm_inference ins(%arg0, %[[S]], %arg2, %[[M]], %[[V]]) outs(%{{.*}}) {{.*}} : memref<1x2x3xf16>, memref<2xf32>, memref<2xf32>, memref<2xf32>, memref<2xf32>, memref<1x2x3xf16>
  %y, %m, %v = mp.batch_normalization %x, %s, %b, %mean, %var : (tensor<1x2x3xf16>, tensor<2xf16>, tensor<2xf32>, tensor<2xf16>, tensor<2xf16>) -> (tensor<1x2x3xf16>, tensor<2xf16>, tensor<2xf16>)
  return %y : tensor<1x2x3xf16>
}

// LpPool: |x|^p, an average pool counting padding times the window size,
// then ^(1/p); the constants are weights of the data's type.
// CHECK-LABEL: func.func @lp_pool
// CHECK: culib.elementwise abs ins(%{{.*}}) outs(%[[A:.*]]) : memref<1x2x7x7xf32>, memref<1x2x7x7xf32>
// CHECK: culib.elementwise pow ins(%[[A]], %{{.*}}) outs(%[[P:.*]])
// CHECK: culib.pool ins(%[[P]]) outs(%[[M:.*]]) {mode = "avg_include_pad", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, window = array<i64: 3, 3>}
// CHECK: culib.elementwise mul ins(%[[M]], %{{.*}}) outs(%[[S:.*]])
// CHECK: culib.elementwise pow ins(%[[S]], %{{.*}}) outs(%{{.*}}) : memref<1x2x4x4xf32>, memref<f32>, memref<1x2x4x4xf32>
func.func @lp_pool(%x: tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32> {
  %0 = mp.lp_pool %x {kernel_shape = array<i64: 3, 3>, p = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}
