// convert-mp-to-culib: each typed op becomes its library call or kernel on
// buffers, with the attributes resolved (defaults, auto_pad, negative axes).
// RUN: mp-opt %s --convert-mp-to-culib | FileCheck %s
// RUN: mp-opt %s --convert-mp-to-culib | mp-opt | FileCheck %s

// CHECK-LABEL: func.func @cnn(
// CHECK-SAME: %[[X:.*]]: memref<1x3x8x8xf16>) -> (memref<1x10xf32>, memref<1x4x2x2xi64>)
func.func @cnn(%x: tensor<1x3x8x8xf16>) -> (tensor<1x10xf32>, tensor<1x4x2x2xi64>) {
  // CHECK: %[[W:.*]] = culib.weight "w" dense<1.000000e+00> : tensor<4x3x3x3xf16> : memref<4x3x3x3xf16>
  %w = mp.initializer "w" dense<1.0> : tensor<4x3x3x3xf16>
  %none = mp.none
  // SAME_UPPER with stride 2: total pad 1 on each dim, the extra at the end.
  // CHECK: %[[C:.*]] = culib.alloc : memref<1x4x4x4xf16>
  // CHECK: culib.conv_fwd ins(%[[X]], %[[W]]) outs(%[[C]]) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>}
  %c = mp.conv %x, %w, %none {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf16>, tensor<4x3x3x3xf16>, none) -> tensor<1x4x4x4xf16>
  // CHECK: culib.elementwise relu ins(%[[C]])
  %r = mp.relu %c : (tensor<1x4x4x4xf16>) -> tensor<1x4x4x4xf16>
  // CHECK: culib.pool ins(%{{.*}}) outs(%{{.*}}) {mode = "avg_include_pad", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, window = array<i64: 3, 3>}
  %a = mp.average_pool %r {count_include_pad = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x4xf16>) -> tensor<1x4x4x4xf16>
  // Max pool whose indices are used writes them.
  // CHECK: %[[MP:.*]] = culib.alloc : memref<1x4x2x2xf16>
  // CHECK: %[[MI:.*]] = culib.alloc : memref<1x4x2x2xi64>
  // CHECK: culib.pool ins(%{{.*}}) outs(%[[MP]]) indices(%[[MI]]) {mode = "max", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>}
  %m, %idx = mp.max_pool %a {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf16>) -> (tensor<1x4x2x2xf16>, tensor<1x4x2x2xi64>)
  // CHECK: culib.pool ins(%[[MP]]) outs(%{{.*}}) {mode = "avg", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, window = array<i64: 2, 2>}
  %g = mp.global_average_pool %m : (tensor<1x4x2x2xf16>) -> tensor<1x4x1x1xf16>
  // CHECK: culib.copy ins(%{{.*}}) outs(%{{.*}}) : memref<1x4x1x1xf16>, memref<1x4xf16>
  %f = mp.flatten %g {axis = 1 : i64} : (tensor<1x4x1x1xf16>) -> tensor<1x4xf16>
  // CHECK: culib.cast ins(%{{.*}}) outs(%{{.*}}) : memref<1x4xf16>, memref<1x4xf32>
  %f32 = mp.cast %f {to = 1 : i64} : (tensor<1x4xf16>) -> tensor<1x4xf32>
  // Gemm with a bias vector: cuBLASLt's bias epilogue (beta stays 0).
  // CHECK: culib.matmul ins(%{{.*}}, %{{.*}}) bias(%{{.*}}) outs(%{{.*}}) {compute_type = f32, trans_b = true}
  %fc = mp.initializer "fc" dense<0.5> : tensor<10x4xf32>
  %fcb = mp.initializer "fcb" dense<0.5> : tensor<10xf32>
  %y = mp.gemm %f32, %fc, %fcb {transB = 1 : i64} : (tensor<1x4xf32>, tensor<10x4xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  // CHECK: culib.softmax ins(%{{.*}}) outs(%[[OUT:.*]]) {axis = 1 : i64, log = true}
  %s = mp.log_softmax %y : (tensor<1x10xf32>) -> tensor<1x10xf32>
  // CHECK: return %[[OUT]], %[[MI]] : memref<1x10xf32>, memref<1x4x2x2xi64>
  return %s, %idx : tensor<1x10xf32>, tensor<1x4x2x2xi64>
}

// CHECK-LABEL: func.func @norms_and_kernels
func.func @norms_and_kernels(%x: tensor<2x3x4xf32>, %v: tensor<3xf32>, %i: tensor<5xi64>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<2x3x1xf32>, tensor<3xf32>, tensor<4x3x2xf32>, tensor<2x6x4xf32>, tensor<5x3x4xf32>, tensor<2x3x4xf32>, tensor<2x12xf32>) {
  // CHECK: culib.batch_norm_training ins({{.*}}) outs({{.*}}) {epsilon = 1.000000e-03 : f32, momentum = 0.899999976 : f32}
  %y, %rm, %rv = mp.batch_normalization %x, %v, %v, %v, %v {epsilon = 1.0e-3 : f32, training_mode = 1 : i64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  // CHECK: culib.reduce mean ins(%{{.*}}) outs(%{{.*}}) {axes = array<i64: 2>, compute_type = f32} : memref<2x3x4xf32>, memref<2x3x1xf32>
  %mean = mp.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  // ReduceSum takes its axes from a constant input.
  // CHECK: culib.reduce sum ins(%{{.*}}) outs(%{{.*}}) {axes = array<i64: 0, 2>, compute_type = f32} : memref<2x3x4xf32>, memref<3xf32>
  %axes = mp.constant {value = dense<[0, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %sum = mp.reduce_sum %x, %axes {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<3xf32>
  // CHECK: culib.transpose ins(%{{.*}}) outs(%{{.*}}) {perm = array<i64: 2, 1, 0>}
  %t = mp.transpose %x : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  // CHECK: culib.concat ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {axis = 1 : i64}
  %cat = mp.concat %x, %x {axis = -2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  // CHECK: culib.gather ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {axis = 0 : i64}
  %g = mp.gather %x, %i : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<5x3x4xf32>
  // Clip without max: the upper bound is +inf.
  // CHECK: %[[INF:.*]] = culib.weight "+inf" dense<0x7F800000> : tensor<f32> : memref<f32>
  // CHECK: culib.elementwise clip ins(%{{.*}}, %{{.*}}, %[[INF]])
  %lo = mp.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %none = mp.none
  %clip = mp.clip %x, %lo, %none : (tensor<2x3x4xf32>, tensor<f32>, none) -> tensor<2x3x4xf32>
  // CHECK: culib.copy ins(%{{.*}}) outs(%{{.*}}) : memref<2x3x4xf32>, memref<2x12xf32>
  %shape = mp.constant {value = dense<[2, 12]> : tensor<2xi64>} : () -> tensor<2xi64>
  %flat = mp.reshape %x, %shape : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  // CHECK-NOT: mp.
  return %y, %rm, %mean, %sum, %t, %cat, %g, %clip, %flat : tensor<2x3x4xf32>, tensor<3xf32>, tensor<2x3x1xf32>, tensor<3xf32>, tensor<4x3x2xf32>, tensor<2x6x4xf32>, tensor<5x3x4xf32>, tensor<2x3x4xf32>, tensor<2x12xf32>
}
