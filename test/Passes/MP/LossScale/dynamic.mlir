// mp-loss-scale mode=dynamic (what mode=auto, the default, does for an f16
// step; auto.mlir) after mp-training: the scale is a
// global (initially 65536) with an i64 growth tracker; the backward pass
// starts from the scale's load instead of the marked seed; one
// unscale_check_finite over all the gradients goes before the first update,
// whose found_inf every update takes; loss_scale_update (with the options)
// follows the last update; the step returns `skipped` and `loss_scale` too,
// and mp.training names them. The options set the initial scale, the growth
// interval and the factors. An f16 loss gets the scale cast to f16.
// RUN: mp-opt %s -split-input-file --mp-training --mp-loss-scale=mode=dynamic | FileCheck %s
// RUN: mp-opt %s -split-input-file --mp-training=optimizer=adam --mp-loss-scale="mode=dynamic init-scale=1024 interval=100 growth-factor=4 backoff-factor=0.25" | FileCheck %s --check-prefix=OPTIONS
// RUN: mp-opt %s -split-input-file --mp-training --mp-loss-scale=mode=dynamic | mp-opt -split-input-file | FileCheck %s

// CHECK:      ml_program.global private mutable @fc2.weight.step(
// CHECK-NEXT: ml_program.global private mutable @loss_scale(dense<6.553600e+04> : tensor<f32>) : tensor<f32>
// CHECK-NEXT: ml_program.global private mutable @loss_scale.growth_tracker(dense<0> : tensor<1xi64>) : tensor<1xi64>
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<4x3xf32> {mp.name = "logits"}, tensor<1xf32> {mp.name = "skipped"}, tensor<f32> {mp.name = "loss_scale"})
// CHECK-SAME: attributes {mp.loss_scaled = "dynamic", mp.training = {data_input = "x", label_input = "label", loss_output = "loss", prediction_output = "logits", scale_output = "loss_scale", skipped_output = "skipped", task = "classification"}}
// CHECK-NOT:  mp.loss_seed
// CHECK:      %[[LOSS:[^,]*]], %{{.*}} = mp.softmax_cross_entropy_loss
// CHECK-NEXT: %[[SCALE:.*]] = ml_program.global_load @loss_scale : tensor<f32>
// CHECK:      mp.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %[[SCALE]], %{{.*}}
// CHECK:      %[[DW2:.*]] = mp.gemm %{{.*}} {transA = 1 : i64} : (tensor<4x16xf32>, tensor<4x3xf32>, none) -> tensor<16x3xf32>
// CHECK:      %[[DW1:.*]] = mp.gemm %{{.*}} {transA = 1 : i64} : (tensor<4x8xf32>, tensor<4x16xf32>, none) -> tensor<8x16xf32>
// CHECK-NEXT: %[[FOUND:.*]], %[[UNSCALED:.*]]:2 = mp.unscale_check_finite %[[SCALE]], %[[DW1]], %[[DW2]] : (tensor<f32>, tensor<8x16xf32>, tensor<16x3xf32>) -> (tensor<1xf32>, tensor<8x16xf32>, tensor<16x3xf32>)
// CHECK-NEXT: mp.sgd_update %[[UNSCALED]]#0, %[[FOUND]] {lr = 0.00999999977 : f32, param = @fc1.weight, step = @fc1.weight.step} : (tensor<8x16xf32>, tensor<1xf32>) -> ()
// CHECK-NEXT: mp.sgd_update %[[UNSCALED]]#1, %[[FOUND]] {lr = 0.00999999977 : f32, param = @fc2.weight, step = @fc2.weight.step} : (tensor<16x3xf32>, tensor<1xf32>) -> ()
// CHECK-NEXT: mp.loss_scale_update %[[FOUND]] {backoff_factor = 5.000000e-01 : f32, growth_factor = 2.000000e+00 : f32, growth_interval = 2000 : i64, growth_tracker = @loss_scale.growth_tracker, scale = @loss_scale} : (tensor<1xf32>) -> ()
// CHECK-NEXT: return %[[LOSS]], %{{.*}}, %[[FOUND]], %[[SCALE]] : tensor<f32>, tensor<4x3xf32>, tensor<1xf32>, tensor<f32>
// CHECK-NOT:  mp.unscale_check_finite

// OPTIONS:      ml_program.global private mutable @loss_scale(dense<1.024000e+03> : tensor<f32>) : tensor<f32>
// OPTIONS-LABEL: func.func @mlp(
// OPTIONS:      %[[FOUND:.*]], %[[UNSCALED:.*]]:2 = mp.unscale_check_finite
// OPTIONS-NEXT: mp.adam_update %[[UNSCALED]]#0, %[[FOUND]] {{.*}}param = @fc1.weight
// OPTIONS-NEXT: mp.adam_update %[[UNSCALED]]#1, %[[FOUND]] {{.*}}param = @fc2.weight
// OPTIONS-NEXT: mp.loss_scale_update %[[FOUND]] {backoff_factor = 2.500000e-01 : f32, growth_factor = 4.000000e+00 : f32, growth_interval = 100 : i64, growth_tracker = @loss_scale.growth_tracker, scale = @loss_scale}
func.func @mlp(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "logits"}) {
  %w1 = mp.initializer "fc1.weight" dense<0.1> : tensor<8x16xf32>
  %w2 = mp.initializer "fc2.weight" dense<0.2> : tensor<16x3xf32>
  %h = mp.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc1")
  %r = mp.relu %h : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("relu")
  %l = mp.matmul %r, %w2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32> loc("fc2")
  return %l : tensor<4x3xf32>
}

// -----

// f16 model: the seed is the f32 scale cast to f16; the gradients reach the
// unscaling in f32; the scale and the flag stay f32.
// CHECK-LABEL: func.func @f16(
// CHECK-SAME: -> (tensor<f16> {mp.name = "loss"}, tensor<4x3xf16> {mp.name = "y"}, tensor<1xf32> {mp.name = "skipped"}, tensor<f32> {mp.name = "loss_scale"})
// CHECK:      %[[SCALE:.*]] = ml_program.global_load @loss_scale : tensor<f32>
// CHECK-NEXT: %[[SEED:.*]] = mp.cast %[[SCALE]] {to = 10 : i64} : (tensor<f32>) -> tensor<f16>
// CHECK:      mp.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %[[SEED]], %{{.*}} : (tensor<4x3xf16>, tensor<4xi64>, tensor<f16>, none) -> tensor<4x3xf16>
// CHECK:      %[[G:.*]] = mp.cast %{{.*}} {to = 1 : i64} : (tensor<8x3xf16>) -> tensor<8x3xf32>
// CHECK-NEXT: %[[FOUND:.*]], %[[UNSCALED:.*]] = mp.unscale_check_finite %[[SCALE]], %[[G]] : (tensor<f32>, tensor<8x3xf32>) -> (tensor<1xf32>, tensor<8x3xf32>)
// CHECK-NEXT: mp.sgd_update %[[UNSCALED]], %[[FOUND]]
// CHECK-NEXT: mp.loss_scale_update %[[FOUND]]
func.func @f16(%x: tensor<4x8xf16> {mp.name = "x"}) -> (tensor<4x3xf16> {mp.name = "y"}) {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf16>
  %l = mp.matmul %x, %w : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf16> loc("fc")
  return %l : tensor<4x3xf16>
}
