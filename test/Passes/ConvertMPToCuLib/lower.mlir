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
  // CHECK: culib.elementwise "relu" ins(%[[C]])
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

// CHECK-LABEL: func.func @norms_and_kernels
func.func @norms_and_kernels(%x: tensor<2x3x4xf32>, %v: tensor<3xf32>, %i: tensor<5xi64>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<2x3x1xf32>, tensor<3xf32>, tensor<4x3x2xf32>, tensor<2x6x4xf32>, tensor<5x3x4xf32>, tensor<2x3x4xf32>, tensor<2x12xf32>) {
  // CHECK: culib.batch_norm_training ins({{.*}}) outs({{.*}}) {epsilon = 1.000000e-03 : f32, momentum = 0.899999976 : f32}
  %y, %rm, %rv = mp.batch_normalization %x, %v, %v, %v, %v {epsilon = 1.0e-3 : f32, training_mode = 1 : i64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  // CHECK: culib.reduce "mean" ins(%{{.*}}) outs(%{{.*}}) {axes = array<i64: 2>, compute_type = f32} : memref<2x3x4xf32>, memref<2x3x1xf32>
  %mean = mp.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  // ReduceSum takes its axes from a constant input.
  // CHECK: culib.reduce "sum" ins(%{{.*}}) outs(%{{.*}}) {axes = array<i64: 0, 2>, compute_type = f32} : memref<2x3x4xf32>, memref<3xf32>
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
  // CHECK: culib.elementwise "clip" ins(%{{.*}}, %{{.*}}, %[[INF]])
  %lo = mp.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %none = mp.none
  %clip = mp.clip %x, %lo, %none : (tensor<2x3x4xf32>, tensor<f32>, none) -> tensor<2x3x4xf32>
  // CHECK: culib.copy ins(%{{.*}}) outs(%{{.*}}) : memref<2x3x4xf32>, memref<2x12xf32>
  %shape = mp.constant {value = dense<[2, 12]> : tensor<2xi64>} : () -> tensor<2xi64>
  %flat = mp.reshape %x, %shape : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  // CHECK-NOT: mp.
  return %y, %rm, %mean, %sum, %t, %cat, %g, %clip, %flat : tensor<2x3x4xf32>, tensor<3xf32>, tensor<2x3x1xf32>, tensor<3xf32>, tensor<4x3x2xf32>, tensor<2x6x4xf32>, tensor<5x3x4xf32>, tensor<2x3x4xf32>, tensor<2x12xf32>
}

// Gemm with a C that only broadcasts to [M, N]: expanded, then cuBLASLt's C.
// CHECK-LABEL: func.func @gemm_broadcast_c
// CHECK: culib.broadcast ins(%{{.*}}) outs(%[[C:.*]]) : memref<2x1xf32>, memref<2x4xf32>
// CHECK: culib.matmul ins(%{{.*}}, %{{.*}}) c(%[[C]]) outs(%{{.*}}) {beta = 1.000000e+00 : f32, compute_type = f32}
func.func @gemm_broadcast_c(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = mp.gemm %a, %b, %c : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// LpPool: |x|^p, an average pool counting padding times the window size,
// then ^(1/p); the constants are weights of the data's type.
// CHECK-LABEL: func.func @lp_pool
// CHECK: culib.elementwise "abs" ins(%{{.*}}) outs(%[[A:.*]]) : memref<1x2x7x7xf32>, memref<1x2x7x7xf32>
// CHECK: culib.elementwise "pow" ins(%[[A]], %{{.*}}) outs(%[[P:.*]])
// CHECK: culib.pool ins(%[[P]]) outs(%[[M:.*]]) {mode = "avg_include_pad", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, window = array<i64: 3, 3>}
// CHECK: culib.elementwise "mul" ins(%[[M]], %{{.*}}) outs(%[[S:.*]])
// CHECK: culib.elementwise "pow" ins(%[[S]], %{{.*}}) outs(%{{.*}}) : memref<1x2x4x4xf32>, memref<f32>, memref<1x2x4x4xf32>
func.func @lp_pool(%x: tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32> {
  %0 = mp.lp_pool %x {kernel_shape = array<i64: 3, 3>, p = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// Einsum: letters only one operand has are summed first, then one batched
// matmul [batch, left, contracted] x [batch, contracted, right], and a
// transpose into the output's order.
// CHECK-LABEL: func.func @einsum
// CHECK: culib.reduce "sum" {{.*}} {axes = array<i64: 3>, compute_type = f32} : memref<2x3x4x5xf32>, memref<2x3x4xf32>
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
