// mp-loss-scale mode=static: the scale is a constant (init-scale), with no
// global and no loss_scale_update; the gradients are still unscaled with a
// finite check, updates are skipped on overflow, and the step returns
// `skipped` and `loss_scale` (the constant).
// RUN: mp-opt %s --mp-training --mp-loss-scale=mode=static | FileCheck %s
// RUN: mp-opt %s --mp-training --mp-loss-scale="mode=static init-scale=128" | FileCheck %s --check-prefix=SCALE128

// CHECK:     ml_program.global private mutable @fc2.weight.step(
// CHECK-NOT: ml_program.global
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<4x3xf32> {mp.name = "logits"}, tensor<1xf32> {mp.name = "skipped"}, tensor<f32> {mp.name = "loss_scale"})
// CHECK-SAME: attributes {mp.loss_scaled = "static", mp.training = {{{.*}}scale_output = "loss_scale", skipped_output = "skipped"
// CHECK-NOT:  mp.loss_seed
// CHECK:      %[[SCALE:.*]] = mp.constant {value = dense<6.553600e+04> : tensor<f32>} : () -> tensor<f32>
// CHECK:      mp.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %[[SCALE]], %{{.*}}
// CHECK:      %[[FOUND:.*]], %[[UNSCALED:.*]]:2 = mp.unscale_check_finite %[[SCALE]], %{{.*}}, %{{.*}} :
// CHECK-NEXT: mp.sgd_update %[[UNSCALED]]#0, %[[FOUND]] {{.*}}param = @fc1.weight
// CHECK-NEXT: mp.sgd_update %[[UNSCALED]]#1, %[[FOUND]] {{.*}}param = @fc2.weight
// CHECK-NOT:  mp.loss_scale_update
// CHECK-NEXT: return %{{.*}}, %{{.*}}, %[[FOUND]], %[[SCALE]] : tensor<f32>, tensor<4x3xf32>, tensor<1xf32>, tensor<f32>

// SCALE128: mp.constant {value = dense<1.280000e+02> : tensor<f32>} : () -> tensor<f32>
// SCALE128-NOT: mp.loss_scale_update
func.func @mlp(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "logits"}) {
  %w1 = mp.initializer "fc1.weight" dense<0.1> : tensor<8x16xf32>
  %w2 = mp.initializer "fc2.weight" dense<0.2> : tensor<16x3xf32>
  %h = mp.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc1")
  %r = mp.relu %h : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("relu")
  %l = mp.matmul %r, %w2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32> loc("fc2")
  return %l : tensor<4x3xf32>
}
