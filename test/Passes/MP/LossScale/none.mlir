// mp-loss-scale mode=none changes nothing: the step (loss seed of 1, no
// scale, no finite check, its outputs) is the one mp-training built, and a
// module without a training step is accepted as it is.
// RUN: mp-opt %s --mp-training > %t.trained.mlir
// RUN: mp-opt %s --mp-training --mp-loss-scale=mode=none > %t.none.mlir
// RUN: diff %t.trained.mlir %t.none.mlir
// RUN: mp-opt %s --mp-loss-scale=mode=none | FileCheck %s --check-prefix=UNTRAINED
// RUN: FileCheck %s --input-file=%t.none.mlir

// CHECK-NOT: loss_scale
// CHECK:     mp.constant {mp.loss_seed, value = dense<1.000000e+00> : tensor<f32>}
// CHECK-NOT: mp.unscale_check_finite
// CHECK-NOT: loss_scale

// UNTRAINED: func.func @mlp(%{{[^:]*}}: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "logits"}) {
// UNTRAINED-NEXT: mp.initializer "fc1.weight"
func.func @mlp(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "logits"}) {
  %w1 = mp.initializer "fc1.weight" dense<0.1> : tensor<8x16xf32>
  %w2 = mp.initializer "fc2.weight" dense<0.2> : tensor<16x3xf32>
  %h = mp.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc1")
  %r = mp.relu %h : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("relu")
  %l = mp.matmul %r, %w2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32> loc("fc2")
  return %l : tensor<4x3xf32>
}
