// mp-loss-scale after mp-training optimizer=none: there is no update to
// skip, so the grad:<name> outputs (parameters and, with wrt-inputs, inputs)
// are what is unscaled, with one finite check; they return the unscaled f32
// gradients, and `skipped` says whether any is not finite.
// RUN: mp-opt %s --mp-training="optimizer=none wrt-inputs=true" --mp-loss-scale=mode=dynamic | FileCheck %s
// RUN: mp-opt %s --mp-training="optimizer=none" --mp-loss-scale=mode=static | FileCheck %s --check-prefix=STATIC

// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<4x3xf32> {mp.name = "logits"}, tensor<8x16xf32> {mp.name = "grad:fc1.weight"}, tensor<16x3xf32> {mp.name = "grad:fc2.weight"}, tensor<4x8xf32> {mp.name = "grad:x"}, tensor<1xf32> {mp.name = "skipped"}, tensor<f32> {mp.name = "loss_scale"})
// CHECK:      %[[SCALE:.*]] = ml_program.global_load @loss_scale
// CHECK:      %[[FOUND:.*]], %[[U:.*]]:3 = mp.unscale_check_finite %[[SCALE]], %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<8x16xf32>, tensor<16x3xf32>, tensor<4x8xf32>) -> (tensor<1xf32>, tensor<8x16xf32>, tensor<16x3xf32>, tensor<4x8xf32>)
// CHECK-NEXT: mp.loss_scale_update %[[FOUND]]
// CHECK-NEXT: return %{{.*}}, %{{.*}}, %[[U]]#0, %[[U]]#1, %[[U]]#2, %[[FOUND]], %[[SCALE]] :

// STATIC: %[[SCALE:.*]] = mp.constant {value = dense<6.553600e+04> : tensor<f32>}
// STATIC: %[[FOUND:.*]], %[[U:.*]]:2 = mp.unscale_check_finite %[[SCALE]], %{{.*}}, %{{.*}} :
// STATIC-NEXT: return %{{.*}}, %{{.*}}, %[[U]]#0, %[[U]]#1, %[[FOUND]], %[[SCALE]] :
func.func @mlp(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "logits"}) {
  %w1 = mp.initializer "fc1.weight" dense<0.1> : tensor<8x16xf32>
  %w2 = mp.initializer "fc2.weight" dense<0.2> : tensor<16x3xf32>
  %h = mp.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc1")
  %r = mp.relu %h : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("relu")
  %l = mp.matmul %r, %w2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32> loc("fc2")
  return %l : tensor<4x3xf32>
}
