// convert-mp-to-culib on a training step: every ml_program global the
// function uses becomes a culib.state buffer at the function's start (with
// the global's initial value; the globals themselves go); loads are the state
// buffers; sgd_update / adam_update / loss_scale_update become sgd_step /
// adam_step / loss_scale_update writing their state buffers in place (with
// found_inf when given); a global_store copies into the state; a returned
// state (the loaded loss scale) is copied out after the updates. The
// backward ops lower to their library calls: conv_grad_filter's compute type
// is mp.accumulation_type when set (else f32), the optional operands and
// results of the loss gradients and lstm_grad appear only when present.
// A global that does not exist is an error.
// RUN: mp-opt %s -split-input-file -verify-diagnostics --convert-mp-to-culib | FileCheck %s
// RUN: mp-opt %s -split-input-file -verify-diagnostics --convert-mp-to-culib | mp-opt -split-input-file | FileCheck %s

// CHECK-NOT: ml_program
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[X:[^:]*]]: memref<2x3x8x8xf16> {mp.name = "x"}, %[[DY:[^:]*]]: memref<2x4x8x8xf16> {mp.name = "dy"}, %[[MEAN:[^:]*]]: memref<4xf32> {mp.name = "mean"})
// CHECK-SAME: -> (memref<1xf32> {mp.name = "skipped"}, memref<f32> {mp.name = "loss_scale"})
// CHECK-NEXT: %[[SCALE:.*]] = culib.state "loss_scale" dense<6.553600e+04> : tensor<f32> : memref<f32>
// CHECK-NEXT: %[[W:.*]] = culib.state "conv.weight" dense<5.000000e-01> : tensor<4x3x3x3xf32> : memref<4x3x3x3xf32>
// CHECK-NEXT: %[[BNW:.*]] = culib.state "bn.weight" dense<1.000000e+00> : tensor<4xf32> : memref<4xf32>
// CHECK-NEXT: %[[RM:.*]] = culib.state "bn.running_mean" dense<0.000000e+00> : tensor<4xf32> : memref<4xf32>
// CHECK-NEXT: %[[MOM:.*]] = culib.state "conv.weight.momentum" dense<0.000000e+00> : tensor<4x3x3x3xf32> : memref<4x3x3x3xf32>
// CHECK-NEXT: %[[WSTEP:.*]] = culib.state "conv.weight.step" dense<0> : tensor<1xi64> : memref<1xi64>
// CHECK-NEXT: %[[EA:.*]] = culib.state "bn.weight.exp_avg" dense<0.000000e+00> : tensor<4xf32> : memref<4xf32>
// CHECK-NEXT: %[[EAS:.*]] = culib.state "bn.weight.exp_avg_sq" dense<0.000000e+00> : tensor<4xf32> : memref<4xf32>
// CHECK-NEXT: %[[BSTEP:.*]] = culib.state "bn.weight.step" dense<0> : tensor<1xi64> : memref<1xi64>
// CHECK-NEXT: %[[TRACKER:.*]] = culib.state "loss_scale.growth_tracker" dense<0> : tensor<1xi64> : memref<1xi64>
// CHECK-NOT:  culib.state
// The cast of the loaded weight reads the state buffer.
// CHECK:      culib.cast ins(%[[W]]) outs(%{{.*}}) : memref<4x3x3x3xf32>, memref<4x3x3x3xf16>
// CHECK:      %[[DW16:.*]] = culib.alloc : memref<4x3x3x3xf16>
// CHECK-NEXT: culib.conv_bwd_filter ins(%[[X]], %[[DY]]) outs(%[[DW16]]) {compute_type = f16, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : memref<2x3x8x8xf16>, memref<2x4x8x8xf16>, memref<4x3x3x3xf16>
// CHECK:      culib.conv_bwd_filter ins(%[[X]], %[[DY]]) outs(%{{.*}}) {compute_type = f32, dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : memref<2x3x8x8xf16>, memref<2x4x8x8xf16>, memref<4x3x3x3xf16>
// CHECK:      culib.cast ins(%[[DY]]) outs(%[[DYF:.*]]) : memref<2x4x8x8xf16>, memref<2x4x8x8xf32>
// CHECK-NEXT: %[[DX:.*]] = culib.alloc : memref<2x4x8x8xf32>
// CHECK-NEXT: %[[DSCALE:.*]] = culib.alloc : memref<4xf32>
// CHECK-NEXT: %[[DBIAS:.*]] = culib.alloc : memref<4xf32>
// CHECK-NEXT: culib.batch_norm_bwd ins(%[[DYF]], %[[BNW]], %[[DYF]]) outs(%[[DX]], %[[DSCALE]], %[[DBIAS]]) {epsilon = 9.99999974E-6 : f32}
// CHECK-NEXT: %[[FOUND:.*]] = culib.alloc : memref<1xf32>
// CHECK-NEXT: %[[U0:.*]] = culib.alloc : memref<4x3x3x3xf32>
// CHECK-NEXT: %[[U1:.*]] = culib.alloc : memref<4xf32>
// CHECK-NEXT: culib.unscale_check_finite ins(%[[SCALE]], %[[DW16]], %[[DSCALE]]) outs(%[[FOUND]], %[[U0]], %[[U1]]) : memref<f32>, memref<4x3x3x3xf16>, memref<4xf32> -> memref<1xf32>, memref<4x3x3x3xf32>, memref<4xf32>
// CHECK-NEXT: culib.copy ins(%[[MEAN]]) outs(%[[RM]]) : memref<4xf32>, memref<4xf32>
// CHECK-NEXT: culib.sgd_step ins(%[[U0]]) found_inf(%[[FOUND]]) outs(%[[W]]) momentum_buffer(%[[MOM]]) step(%[[WSTEP]]) {dampening = 0.000000e+00 : f32, lr = 1.000000e-01 : f32, momentum = 0.899999976 : f32, nesterov = true, weight_decay = 0.000000e+00 : f32} : memref<4x3x3x3xf32>, memref<1xf32>, memref<4x3x3x3xf32>, memref<4x3x3x3xf32>, memref<1xi64>
// CHECK-NEXT: culib.adam_step ins(%[[U1]]) found_inf(%[[FOUND]]) outs(%[[BNW]], %[[EA]], %[[EAS]], %[[BSTEP]]) {beta1 = 0.899999976 : f32, beta2 = 9.990000e-01 : f32, decoupled_weight_decay = true, eps = 9.99999993E-9 : f32, lr = 1.000000e-03 : f32, weight_decay = 0.00999999977 : f32} : memref<4xf32>, memref<1xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<1xi64>
// Without found_inf (no loss scaling) the step has no flag.
// CHECK-NEXT: culib.sgd_step ins(%[[U1]]) outs(%[[BNW]]) step(%[[BSTEP]]) {dampening = 0.000000e+00 : f32, lr = 5.000000e-01 : f32, momentum = 0.000000e+00 : f32, nesterov = false, weight_decay = 0.000000e+00 : f32} : memref<4xf32>, memref<4xf32>, memref<1xi64>
// CHECK-NEXT: culib.loss_scale_update ins(%[[FOUND]]) outs(%[[SCALE]], %[[TRACKER]]) {backoff_factor = 5.000000e-01 : f32, growth_factor = 2.000000e+00 : f32, growth_interval = 2000 : i64} : memref<1xf32>, memref<f32>, memref<1xi64>
// The returned scale is a copy made after the update, not the state itself.
// CHECK-NEXT: %[[OUT:.*]] = culib.alloc : memref<f32>
// CHECK-NEXT: culib.copy ins(%[[SCALE]]) outs(%[[OUT]]) : memref<f32>, memref<f32>
// CHECK-NEXT: return %[[FOUND]], %[[OUT]] : memref<1xf32>, memref<f32>
module {
  ml_program.global private mutable @conv.weight(dense<0.5> : tensor<4x3x3x3xf32>) : tensor<4x3x3x3xf32>
  ml_program.global private mutable @conv.weight.momentum(dense<0.0> : tensor<4x3x3x3xf32>) : tensor<4x3x3x3xf32>
  ml_program.global private mutable @conv.weight.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
  ml_program.global private mutable @bn.weight(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
  ml_program.global private mutable @bn.weight.exp_avg(dense<0.0> : tensor<4xf32>) : tensor<4xf32>
  ml_program.global private mutable @bn.weight.exp_avg_sq(dense<0.0> : tensor<4xf32>) : tensor<4xf32>
  ml_program.global private mutable @bn.weight.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
  ml_program.global private mutable @bn.running_mean(dense<0.0> : tensor<4xf32>) : tensor<4xf32>
  ml_program.global private mutable @loss_scale(dense<65536.0> : tensor<f32>) : tensor<f32>
  ml_program.global private mutable @loss_scale.growth_tracker(dense<0> : tensor<1xi64>) : tensor<1xi64>
  // An unused global gets no state buffer.
  ml_program.global private mutable @unused(dense<0.0> : tensor<4xf32>) : tensor<4xf32>
  func.func @step(%x: tensor<2x3x8x8xf16> {mp.name = "x"}, %dy: tensor<2x4x8x8xf16> {mp.name = "dy"}, %mean: tensor<4xf32> {mp.name = "mean"}) -> (tensor<1xf32> {mp.name = "skipped"}, tensor<f32> {mp.name = "loss_scale"}) {
    %scale = ml_program.global_load @loss_scale : tensor<f32>
    %w = ml_program.global_load @conv.weight : tensor<4x3x3x3xf32>
    %bnw = ml_program.global_load @bn.weight : tensor<4xf32>
    %w16 = mp.cast %w {to = 10 : i64} : (tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf16> loc("w/f16")
    %dw16 = mp.conv_grad_filter %x, %dy {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, mp.accumulation_type = f16} : (tensor<2x3x8x8xf16>, tensor<2x4x8x8xf16>) -> tensor<4x3x3x3xf16> loc("conv/grad")
    %dwb = mp.conv_grad_filter %x, %dy {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x3x8x8xf16>, tensor<2x4x8x8xf16>) -> tensor<4x3x3x3xf16> loc("conv2/grad")
    %dyf = mp.cast %dy {to = 1 : i64} : (tensor<2x4x8x8xf16>) -> tensor<2x4x8x8xf32>
    %dx, %dscale, %dbias = mp.batch_norm_grad %dyf, %bnw, %dyf {epsilon = 1.0e-5 : f32} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>) loc("bn/grad")
    %found, %u:2 = mp.unscale_check_finite %scale, %dw16, %dscale : (tensor<f32>, tensor<4x3x3x3xf16>, tensor<4xf32>) -> (tensor<1xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) loc("unscale")
    ml_program.global_store @bn.running_mean = %mean : tensor<4xf32> loc("bn")
    mp.sgd_update %u#0, %found {lr = 0.1 : f32, momentum = 0.9 : f32, momentum_buffer = @conv.weight.momentum, param = @conv.weight, step = @conv.weight.step, nesterov = true} : (tensor<4x3x3x3xf32>, tensor<1xf32>) -> () loc("sgd")
    mp.adam_update %u#1, %found {lr = 0.001 : f32, param = @bn.weight, exp_avg = @bn.weight.exp_avg, exp_avg_sq = @bn.weight.exp_avg_sq, step = @bn.weight.step, decoupled_weight_decay = true, weight_decay = 0.01 : f32} : (tensor<4xf32>, tensor<1xf32>) -> () loc("adam")
    %none = mp.none
    mp.sgd_update %u#1, %none {lr = 0.5 : f32, param = @bn.weight, step = @bn.weight.step} : (tensor<4xf32>, none) -> () loc("sgd2")
    mp.loss_scale_update %found {backoff_factor = 5.000000e-01 : f32, growth_factor = 2.000000e+00 : f32, growth_interval = 2000 : i64, growth_tracker = @loss_scale.growth_tracker, scale = @loss_scale} : (tensor<1xf32>) -> () loc("scale_update")
    return %found, %scale : tensor<1xf32>, tensor<f32>
  }
}

// -----

// CHECK-LABEL: func.func @backward_calls(
// CHECK-SAME: %[[X:[^:]*]]: memref<2x4x8x8xf32>, %[[DY:[^:]*]]: memref<2x4x4x4xf32>, %[[S:[^:]*]]: memref<2x5xf32>, %[[L:[^:]*]]: memref<2xi64>, %[[DL:[^:]*]]: memref<f32>, %[[CW:[^:]*]]: memref<5xf32>)
// CHECK:      culib.pool_bwd ins(%[[X]], %[[DY]]) outs(%{{.*}}) {dilations = array<i64: 1, 1>, mode = "max", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>} : memref<2x4x8x8xf32>, memref<2x4x4x4xf32>, memref<2x4x8x8xf32>
// CHECK:      culib.pool_bwd ins(%[[X]], %[[DY]]) outs(%{{.*}}) {dilations = array<i64: 1, 1>, mode = "avg_include_pad", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, window = array<i64: 3, 3>}
// CHECK:      culib.softmax_cross_entropy_grad ins(%[[S]], %[[L]], %[[DL]]) weights(%[[CW]]) outs(%{{.*}}) {ignore_index = -1 : i64, reduction = #culib.loss_reduction<sum>} : memref<2x5xf32>, memref<2xi64>, memref<f32>, memref<5xf32>, memref<2x5xf32>
// CHECK:      culib.nll_loss_grad ins(%[[S]], %[[L]], %[[DL]]) outs(%{{.*}}) {reduction = #culib.loss_reduction<mean>} : memref<2x5xf32>, memref<2xi64>, memref<f32>, memref<2x5xf32>
// CHECK-NOT:  mp.
func.func @backward_calls(%x: tensor<2x4x8x8xf32>, %dy: tensor<2x4x4x4xf32>, %scores: tensor<2x5xf32>, %labels: tensor<2xi64>, %dloss: tensor<f32>, %cw: tensor<5xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x5xf32>, tensor<2x5xf32>) {
  %dmax = mp.pool_grad %x, %dy {dilations = array<i64: 1, 1>, mode = "max", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32> loc("maxpool/grad")
  %davg = mp.pool_grad %x, %dy {dilations = array<i64: 1, 1>, mode = "avg_include_pad", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, window = array<i64: 3, 3>} : (tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32> loc("avgpool/grad")
  %none = mp.none
  %ds = mp.softmax_cross_entropy_grad %scores, %labels, %dloss, %cw {ignore_index = -1 : i64, reduction = "sum"} : (tensor<2x5xf32>, tensor<2xi64>, tensor<f32>, tensor<5xf32>) -> tensor<2x5xf32> loc("loss/grad")
  %dn = mp.nll_loss_grad %scores, %labels, %dloss, %none : (tensor<2x5xf32>, tensor<2xi64>, tensor<f32>, none) -> tensor<2x5xf32> loc("nll/grad")
  return %dmax, %davg, %ds, %dn : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x5xf32>, tensor<2x5xf32>
}

// -----

// lstm_grad without initial states and with only dY_h: those operands and
// the dInitial_h/dInitial_c results have no buffers.
// CHECK-LABEL: func.func @lstm(
// CHECK-SAME: %[[X:[^:]*]]: memref<5x2x3xf32>, %[[W:[^:]*]]: memref<1x16x3xf32>, %[[R:[^:]*]]: memref<1x16x4xf32>, %[[B:[^:]*]]: memref<1x32xf32>, %[[DYH:[^:]*]]: memref<1x2x4xf32>)
// CHECK-NEXT: %[[DX:.*]] = culib.alloc : memref<5x2x3xf32>
// CHECK-NEXT: %[[DW:.*]] = culib.alloc : memref<1x16x3xf32>
// CHECK-NEXT: %[[DR:.*]] = culib.alloc : memref<1x16x4xf32>
// CHECK-NEXT: %[[DB:.*]] = culib.alloc : memref<1x32xf32>
// CHECK-NEXT: culib.lstm_bwd ins(%[[X]], %[[W]], %[[R]]) b(%[[B]]) dy_h(%[[DYH]]) outs(%[[DX]], %[[DW]], %[[DR]]) db(%[[DB]]) {direction = "forward", hidden_size = 4 : i64}
// CHECK-NEXT: return %[[DX]], %[[DW]], %[[DR]], %[[DB]] :
func.func @lstm(%x: tensor<5x2x3xf32>, %w: tensor<1x16x3xf32>, %r: tensor<1x16x4xf32>, %b: tensor<1x32xf32>, %dyh: tensor<1x2x4xf32>) -> (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>) {
  %none = mp.none
  %dX, %dW, %dR, %dB, %dh0, %dc0 = mp.lstm_grad %x, %w, %r, %b, %none, %none, %none, %dyh, %none {direction = "forward", hidden_size = 4 : i64} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, none, none, none, tensor<1x2x4xf32>, none) -> (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, none, none) loc("lstm/grad")
  return %dX, %dW, %dR, %dB : tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>
}

// -----

func.func @missing_global(%g: tensor<4xf32>) {
  %none = mp.none
  // expected-error @+2 {{cannot lower: global @w must exist with a static tensor type and an initial value}}
  // expected-error @+1 {{cannot lower: global @w.step must exist with a static tensor type and an initial value}}
  mp.sgd_update %g, %none {lr = 0.1 : f32, param = @w, step = @w.step} : (tensor<4xf32>, none) -> ()
  return
}
