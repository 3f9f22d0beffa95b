// The culib training ops (state buffers, backward calls, loss scaling,
// optimizer steps) parse, verify and print back to a form that parses to the
// same IR, custom and generic, with their optional operands present or not.
// The last cases are rejected by the verifiers (unscale_check_finite's
// gradient/output pairing, f32-only optimizer buffers).
// RUN: mp-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// RUN: mp-opt %s -split-input-file -verify-diagnostics | mp-opt -split-input-file | FileCheck %s
// RUN: mp-opt %s -split-input-file -verify-diagnostics -mlir-print-op-generic | mp-opt -split-input-file | FileCheck %s
// RUN: mp-opt %s -split-input-file -verify-diagnostics | sed '/^\/\/ -----$/d' > %t.1.mlir
// RUN: mp-opt %t.1.mlir > %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir

// CHECK-LABEL: func.func @state_and_backward(
// CHECK-SAME: %[[X:[^:]*]]: memref<2x3x8x8xf16>, %[[DY:[^:]*]]: memref<2x4x8x8xf16>, %[[LOGITS:[^:]*]]: memref<2x5xf32>, %[[LABELS:[^:]*]]: memref<2xi64>, %[[DLOSS:[^:]*]]: memref<f32>)
func.func @state_and_backward(%x: memref<2x3x8x8xf16>, %dy: memref<2x4x8x8xf16>, %logits: memref<2x5xf32>, %labels: memref<2xi64>, %dloss: memref<f32>) {
  // CHECK: %[[W:.*]] = culib.state "conv.weight" dense<5.000000e-01> : tensor<4x3x3x3xf16> : memref<4x3x3x3xf16>
  %w = culib.state "conv.weight" dense<0.5> : tensor<4x3x3x3xf16> : memref<4x3x3x3xf16>
  // CHECK: %[[STEP:.*]] = culib.state "conv.weight.step" dense<0> : tensor<1xi64> : memref<1xi64>
  %step = culib.state "conv.weight.step" dense<0> : tensor<1xi64> : memref<1xi64>
  // Two states with equal values are two buffers (not CSE'd).
  // CHECK: culib.state "a" dense<0.000000e+00> : tensor<4xf32> : memref<4xf32>
  // CHECK: culib.state "b" dense<0.000000e+00> : tensor<4xf32> : memref<4xf32>
  %a = culib.state "a" dense<0.0> : tensor<4xf32> : memref<4xf32>
  %b = culib.state "b" dense<0.0> : tensor<4xf32> : memref<4xf32>
  %dw = culib.alloc : memref<4x3x3x3xf16>
  // The default groups (1) is not printed.
  // CHECK: culib.conv_bwd_filter ins(%[[X]], %[[DY]]) outs(%[[DW:.*]]) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : memref<2x3x8x8xf16>, memref<2x4x8x8xf16>, memref<4x3x3x3xf16>
  culib.conv_bwd_filter ins(%x, %dy) outs(%dw) {compute_type = f32, dilations = array<i64: 1, 1>, groups = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : memref<2x3x8x8xf16>, memref<2x4x8x8xf16>, memref<4x3x3x3xf16>
  // A grouped, dilated convolution (4 -> 4 channels in 2 groups).
  %dwg = culib.alloc : memref<4x2x3x3xf16>
  // CHECK: culib.conv_bwd_filter ins(%[[DY]], %[[DY]]) outs(%{{.*}}) {compute_type = f16, dilations = array<i64: 2, 2>, groups = 2 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : memref<2x4x8x8xf16>, memref<2x4x8x8xf16>, memref<4x2x3x3xf16>
  culib.conv_bwd_filter ins(%dy, %dy) outs(%dwg) {compute_type = f16, dilations = array<i64: 2, 2>, groups = 2 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : memref<2x4x8x8xf16>, memref<2x4x8x8xf16>, memref<4x2x3x3xf16>
  %p = culib.alloc : memref<2x4x4x4xf16>
  %dp = culib.alloc : memref<2x4x8x8xf16>
  // CHECK: culib.pool_bwd ins(%[[DY]], %{{.*}}) outs(%{{.*}}) {dilations = array<i64: 1, 1>, mode = "max", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>} : memref<2x4x8x8xf16>, memref<2x4x4x4xf16>, memref<2x4x8x8xf16>
  culib.pool_bwd ins(%dy, %p) outs(%dp) {mode = "max", window = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : memref<2x4x8x8xf16>, memref<2x4x4x4xf16>, memref<2x4x8x8xf16>
  %scale = culib.state "bn.weight" dense<1.0> : tensor<4xf32> : memref<4xf32>
  %dx = culib.alloc : memref<2x4x8x8xf16>
  %dscale = culib.alloc : memref<4xf32>
  %dbias = culib.alloc : memref<4xf32>
  // CHECK: culib.batch_norm_bwd ins(%[[DY]], %{{.*}}, %{{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}}) {epsilon = 9.99999974E-6 : f32} : memref<2x4x8x8xf16>, memref<4xf32>, memref<2x4x8x8xf16>, memref<2x4x8x8xf16>, memref<4xf32>, memref<4xf32>
  culib.batch_norm_bwd ins(%dy, %scale, %dp) outs(%dx, %dscale, %dbias) {epsilon = 1.0e-5 : f32} : memref<2x4x8x8xf16>, memref<4xf32>, memref<2x4x8x8xf16>, memref<2x4x8x8xf16>, memref<4xf32>, memref<4xf32>
  %dlogits = culib.alloc : memref<2x5xf32>
  %cw = culib.weight "class_weights" dense<1.0> : tensor<5xf32> : memref<5xf32>
  // CHECK: culib.softmax_cross_entropy_grad ins(%[[LOGITS]], %[[LABELS]], %[[DLOSS]]) outs(%{{.*}}) {reduction = #culib.loss_reduction<mean>} : memref<2x5xf32>, memref<2xi64>, memref<f32>, memref<2x5xf32>
  culib.softmax_cross_entropy_grad ins(%logits, %labels, %dloss) outs(%dlogits) {reduction = #culib.loss_reduction<mean>} : memref<2x5xf32>, memref<2xi64>, memref<f32>, memref<2x5xf32>
  // CHECK: culib.softmax_cross_entropy_grad ins(%[[LOGITS]], %[[LABELS]], %[[DLOSS]]) weights(%{{.*}}) outs(%{{.*}}) {ignore_index = -100 : i64, reduction = #culib.loss_reduction<sum>} : memref<2x5xf32>, memref<2xi64>, memref<f32>, memref<5xf32>, memref<2x5xf32>
  culib.softmax_cross_entropy_grad ins(%logits, %labels, %dloss) weights(%cw) outs(%dlogits) {ignore_index = -100 : i64, reduction = #culib.loss_reduction<sum>} : memref<2x5xf32>, memref<2xi64>, memref<f32>, memref<5xf32>, memref<2x5xf32>
  // CHECK: culib.nll_loss_grad ins(%[[LOGITS]], %[[LABELS]], %[[DLOSS]]) outs(%{{.*}}) {reduction = #culib.loss_reduction<mean>} : memref<2x5xf32>, memref<2xi64>, memref<f32>, memref<2x5xf32>
  culib.nll_loss_grad ins(%logits, %labels, %dloss) outs(%dlogits) {reduction = #culib.loss_reduction<mean>} : memref<2x5xf32>, memref<2xi64>, memref<f32>, memref<2x5xf32>
  // CHECK: culib.nll_loss_grad ins(%[[LOGITS]], %[[LABELS]], %[[DLOSS]]) weight(%{{.*}}) outs(%{{.*}}) {ignore_index = 0 : i64, reduction = #culib.loss_reduction<none>}
  culib.nll_loss_grad ins(%logits, %labels, %dloss) weight(%cw) outs(%dlogits) {ignore_index = 0 : i64, reduction = #culib.loss_reduction<none>} : memref<2x5xf32>, memref<2xi64>, memref<f32>, memref<5xf32>, memref<2x5xf32>
  return
}

// CHECK-LABEL: func.func @lstm_backward(
func.func @lstm_backward(%x: memref<5x2x3xf32>, %w: memref<1x16x3xf32>, %r: memref<1x16x4xf32>, %b: memref<1x32xf32>, %h0: memref<1x2x4xf32>, %c0: memref<1x2x4xf32>, %dy: memref<5x1x2x4xf32>, %dyh: memref<1x2x4xf32>, %dyc: memref<1x2x4xf32>) {
  %dx = culib.alloc : memref<5x2x3xf32>
  %dw = culib.alloc : memref<1x16x3xf32>
  %dr = culib.alloc : memref<1x16x4xf32>
  %db = culib.alloc : memref<1x32xf32>
  %dh0 = culib.alloc : memref<1x2x4xf32>
  %dc0 = culib.alloc : memref<1x2x4xf32>
  // Everything optional present.
  // CHECK: culib.lstm_bwd ins(%{{.*}}, %{{.*}}, %{{.*}}) b(%{{.*}}) initial_h(%{{.*}}) initial_c(%{{.*}}) dy(%{{.*}}) dy_h(%{{.*}}) dy_c(%{{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}}) db(%{{.*}}) dinitial_h(%{{.*}}) dinitial_c(%{{.*}}) {direction = "forward", hidden_size = 4 : i64} : memref<5x2x3xf32>, memref<1x16x3xf32>, memref<1x16x4xf32>, memref<1x32xf32>, memref<1x2x4xf32>, memref<1x2x4xf32>, memref<5x1x2x4xf32>, memref<1x2x4xf32>, memref<1x2x4xf32>, memref<5x2x3xf32>, memref<1x16x3xf32>, memref<1x16x4xf32>, memref<1x32xf32>, memref<1x2x4xf32>, memref<1x2x4xf32>
  culib.lstm_bwd ins(%x, %w, %r) b(%b) initial_h(%h0) initial_c(%c0) dy(%dy) dy_h(%dyh) dy_c(%dyc) outs(%dx, %dw, %dr) db(%db) dinitial_h(%dh0) dinitial_c(%dc0) {direction = "forward", hidden_size = 4 : i64} : memref<5x2x3xf32>, memref<1x16x3xf32>, memref<1x16x4xf32>, memref<1x32xf32>, memref<1x2x4xf32>, memref<1x2x4xf32>, memref<5x1x2x4xf32>, memref<1x2x4xf32>, memref<1x2x4xf32>, memref<5x2x3xf32>, memref<1x16x3xf32>, memref<1x16x4xf32>, memref<1x32xf32>, memref<1x2x4xf32>, memref<1x2x4xf32>
  // Only the last hidden state has a gradient; no bias, no initial states.
  // CHECK: culib.lstm_bwd ins(%{{.*}}, %{{.*}}, %{{.*}}) dy_h(%{{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}}) {direction = "reverse", hidden_size = 4 : i64} : memref<5x2x3xf32>, memref<1x16x3xf32>, memref<1x16x4xf32>, memref<1x2x4xf32>, memref<5x2x3xf32>, memref<1x16x3xf32>, memref<1x16x4xf32>
  culib.lstm_bwd ins(%x, %w, %r) dy_h(%dyh) outs(%dx, %dw, %dr) {direction = "reverse", hidden_size = 4 : i64} : memref<5x2x3xf32>, memref<1x16x3xf32>, memref<1x16x4xf32>, memref<1x2x4xf32>, memref<5x2x3xf32>, memref<1x16x3xf32>, memref<1x16x4xf32>
  return
}

// CHECK-LABEL: func.func @loss_scaling_and_optimizers(
// CHECK-SAME: %[[G16:[^:]*]]: memref<4x8xf16>, %[[G32:[^:]*]]: memref<8xf32>)
func.func @loss_scaling_and_optimizers(%g16: memref<4x8xf16>, %g32: memref<8xf32>) {
  // CHECK: %[[SCALE:.*]] = culib.state "loss_scale" dense<6.553600e+04> : tensor<f32> : memref<f32>
  %scale = culib.state "loss_scale" dense<65536.0> : tensor<f32> : memref<f32>
  // CHECK: %[[TRACKER:.*]] = culib.state "loss_scale.growth_tracker" dense<0> : tensor<1xi64> : memref<1xi64>
  %tracker = culib.state "loss_scale.growth_tracker" dense<0> : tensor<1xi64> : memref<1xi64>
  %found = culib.alloc : memref<1xf32>
  %u16 = culib.alloc : memref<4x8xf32>
  %u32 = culib.alloc : memref<8xf32>
  // f16 and f32 gradients, unscaled into f32 with one flag.
  // CHECK: culib.unscale_check_finite ins(%[[SCALE]], %[[G16]], %[[G32]]) outs(%[[FOUND:.*]], %[[U16:.*]], %[[U32:.*]]) : memref<f32>, memref<4x8xf16>, memref<8xf32> -> memref<1xf32>, memref<4x8xf32>, memref<8xf32>
  culib.unscale_check_finite ins(%scale, %g16, %g32) outs(%found, %u16, %u32) : memref<f32>, memref<4x8xf16>, memref<8xf32> -> memref<1xf32>, memref<4x8xf32>, memref<8xf32>
  // CHECK: culib.loss_scale_update ins(%[[FOUND]]) outs(%[[SCALE]], %[[TRACKER]]) {backoff_factor = 5.000000e-01 : f32, growth_factor = 2.000000e+00 : f32, growth_interval = 2000 : i64} : memref<1xf32>, memref<f32>, memref<1xi64>
  culib.loss_scale_update ins(%found) outs(%scale, %tracker) {backoff_factor = 0.5 : f32, growth_factor = 2.0 : f32, growth_interval = 2000 : i64} : memref<1xf32>, memref<f32>, memref<1xi64>
  %p1 = culib.state "p1" dense<1.0> : tensor<4x8xf32> : memref<4x8xf32>
  %m1 = culib.state "p1.momentum" dense<0.0> : tensor<4x8xf32> : memref<4x8xf32>
  %s1 = culib.state "p1.step" dense<0> : tensor<1xi64> : memref<1xi64>
  // CHECK: culib.sgd_step ins(%[[U16]]) found_inf(%[[FOUND]]) outs(%{{.*}}) momentum_buffer(%{{.*}}) step(%{{.*}}) {dampening = 0.000000e+00 : f32, lr = 0.00999999977 : f32, momentum = 0.899999976 : f32, nesterov = true, weight_decay = 9.99999974E-5 : f32} : memref<4x8xf32>, memref<1xf32>, memref<4x8xf32>, memref<4x8xf32>, memref<1xi64>
  culib.sgd_step ins(%u16) found_inf(%found) outs(%p1) momentum_buffer(%m1) step(%s1) {dampening = 0.0 : f32, lr = 0.01 : f32, momentum = 0.9 : f32, nesterov = true, weight_decay = 1.0e-4 : f32} : memref<4x8xf32>, memref<1xf32>, memref<4x8xf32>, memref<4x8xf32>, memref<1xi64>
  // Plain SGD: no flag, no momentum buffer.
  // CHECK: culib.sgd_step ins(%[[U16]]) outs(%{{.*}}) step(%{{.*}}) {dampening = 0.000000e+00 : f32, lr = 1.000000e-01 : f32, momentum = 0.000000e+00 : f32, nesterov = false, weight_decay = 0.000000e+00 : f32} : memref<4x8xf32>, memref<4x8xf32>, memref<1xi64>
  culib.sgd_step ins(%u16) outs(%p1) step(%s1) {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.0 : f32, nesterov = false, weight_decay = 0.0 : f32} : memref<4x8xf32>, memref<4x8xf32>, memref<1xi64>
  %p2 = culib.state "p2" dense<1.0> : tensor<8xf32> : memref<8xf32>
  %ea = culib.state "p2.exp_avg" dense<0.0> : tensor<8xf32> : memref<8xf32>
  %eas = culib.state "p2.exp_avg_sq" dense<0.0> : tensor<8xf32> : memref<8xf32>
  %s2 = culib.state "p2.step" dense<0> : tensor<1xi64> : memref<1xi64>
  // CHECK: culib.adam_step ins(%[[U32]]) found_inf(%[[FOUND]]) outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {beta1 = 0.899999976 : f32, beta2 = 9.990000e-01 : f32, decoupled_weight_decay = true, eps = 9.99999993E-9 : f32, lr = 1.000000e-03 : f32, weight_decay = 0.00999999977 : f32} : memref<8xf32>, memref<1xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<1xi64>
  culib.adam_step ins(%u32) found_inf(%found) outs(%p2, %ea, %eas, %s2) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, decoupled_weight_decay = true, eps = 1.0e-8 : f32, lr = 0.001 : f32, weight_decay = 0.01 : f32} : memref<8xf32>, memref<1xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<1xi64>
  // CHECK: culib.adam_step ins(%[[G32]]) outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{{.*}}decoupled_weight_decay = false{{.*}}} : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<1xi64>
  culib.adam_step ins(%g32) outs(%p2, %ea, %eas, %s2) {beta1 = 0.9 : f32, beta2 = 0.999 : f32, decoupled_weight_decay = false, eps = 1.0e-8 : f32, lr = 0.001 : f32, weight_decay = 0.0 : f32} : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<1xi64>
  return
}


// A data-parallel step's collectives and synchronised batch norms.
// CHECK-LABEL: func.func @data_parallel(
func.func @data_parallel(%g1: memref<4x8xf32>, %g2: memref<8xbf16>, %r1: memref<4x8xf32>, %r2: memref<8xbf16>, %x: memref<2x8x3x3xf32>, %s: memref<8xf32>, %y: memref<2x8x3x3xf32>, %rm: memref<8xf32>, %rv: memref<8xf32>) {
  // CHECK: culib.all_reduce <mean> ins(%{{.*}}, %{{.*}}) outs(%{{.*}}, %{{.*}}) {reduce_type = bf16} : memref<4x8xf32>, memref<8xbf16> -> memref<4x8xf32>, memref<8xbf16>
  culib.all_reduce <mean> ins(%g1, %g2) outs(%r1, %r2) {reduce_type = bf16} : memref<4x8xf32>, memref<8xbf16> -> memref<4x8xf32>, memref<8xbf16>
  // CHECK: culib.batch_norm_training {{.*}}sync_ranks
  culib.batch_norm_training ins(%x, %s, %s, %rm, %rv) outs(%y, %rm, %rv) {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32, sync_ranks} : memref<2x8x3x3xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<2x8x3x3xf32>, memref<8xf32>, memref<8xf32>
  // CHECK: culib.batch_norm_bwd {{.*}}sync_ranks
  culib.batch_norm_bwd ins(%x, %s, %y) outs(%y, %rm, %rv) {epsilon = 1.0e-5 : f32, sync_ranks} : memref<2x8x3x3xf32>, memref<8xf32>, memref<2x8x3x3xf32>, memref<2x8x3x3xf32>, memref<8xf32>, memref<8xf32>
  return
}

// -----

func.func @unscale_count_mismatch(%s: memref<f32>, %g: memref<4xf32>, %f: memref<1xf32>, %u: memref<4xf32>) {
  // expected-error @+1 {{'culib.unscale_check_finite' op needs as many unscaled outputs as gradients (and at least one), got 2 and 1}}
  culib.unscale_check_finite ins(%s, %g, %g) outs(%f, %u) : memref<f32>, memref<4xf32>, memref<4xf32> -> memref<1xf32>, memref<4xf32>
  return
}

// -----

func.func @unscale_nothing(%s: memref<f32>, %f: memref<1xf32>) {
  // expected-error @+1 {{'culib.unscale_check_finite' op needs as many unscaled outputs as gradients (and at least one), got 0 and 0}}
  "culib.unscale_check_finite"(%s, %f) <{operandSegmentSizes = array<i32: 1, 0, 1, 0>}> : (memref<f32>, memref<1xf32>) -> ()
  return
}

// -----

func.func @unscale_shape_mismatch(%s: memref<f32>, %g: memref<4x2xf16>, %f: memref<1xf32>, %u: memref<8xf32>) {
  // expected-error @+1 {{'culib.unscale_check_finite' op unscaled buffer 'memref<8xf32>' does not have the shape of 'memref<4x2xf16>'}}
  culib.unscale_check_finite ins(%s, %g) outs(%f, %u) : memref<f32>, memref<4x2xf16> -> memref<1xf32>, memref<8xf32>
  return
}

// -----

func.func @unscale_into_f16(%s: memref<f32>, %g: memref<4xf16>, %f: memref<1xf32>, %u: memref<4xf16>) {
  // expected-error @+1 {{'culib.unscale_check_finite' op operand #3 must be variadic of memref of 32-bit float values}}
  culib.unscale_check_finite ins(%s, %g) outs(%f, %u) : memref<f32>, memref<4xf16> -> memref<1xf32>, memref<4xf16>
  return
}

// -----

func.func @sgd_f16_parameter(%g: memref<4xf32>, %p: memref<4xf16>, %step: memref<1xi64>) {
  // expected-error @+1 {{'culib.sgd_step' op operand #1 must be memref of 32-bit float values, but got 'memref<4xf16>'}}
  culib.sgd_step ins(%g) outs(%p) step(%step) {dampening = 0.0 : f32, lr = 0.1 : f32, momentum = 0.0 : f32, nesterov = false, weight_decay = 0.0 : f32} : memref<4xf32>, memref<4xf16>, memref<1xi64>
  return
}

