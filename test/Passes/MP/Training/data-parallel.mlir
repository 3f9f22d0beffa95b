// mp-training's data-parallel=true: the parameter gradients are averaged
// over the ranks by mp.all_reduce before the updates read them, in buckets
// of at most bucket-mb megabytes of f32 (an oversized gradient alone), in
// the order the backward pass computes them, each right after its last
// gradient. reduce-type sets what travels. Training-mode batch norms and
// their gradients get mp.sync_ranks (statistics of the global batch).
// mp-loss-scale agrees on the found-inf flag (its maximum over the ranks).
// RUN: mp-opt %s -split-input-file "--mp-training=data-parallel=true bucket-mb=0.0002" | FileCheck %s
// RUN: mp-opt %s -split-input-file "--mp-training=data-parallel=true reduce-type=bf16" | FileCheck %s --check-prefix=BF16
// RUN: mp-opt %s -split-input-file "--mp-training=data-parallel=true" --mp-autocast --mp-master-weights --mp-loss-scale=mode=dynamic | FileCheck %s --check-prefix=SCALED
// Round trip: the custom and generic forms parse back to the same IR.
// RUN: mp-opt %s -split-input-file "--mp-training=data-parallel=true reduce-type=f16" --mp-loss-scale=mode=dynamic > %t.1.mlir
// RUN: mp-opt %t.1.mlir -split-input-file -mlir-print-op-generic | mp-opt -split-input-file > %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// Without data-parallel: no collective.
// RUN: mp-opt %s -split-input-file --mp-training | FileCheck %s --check-prefix=ALONE

// 204 bytes of fc2's gradients fit a bucket of 209 bytes; fc1.weight's 512
// do not, so it goes alone, and so does fc1.bias after it.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME:  attributes {mp.data_parallel
// CHECK:       %[[DW2:.*]] = mp.gemm %{{.*}}, %{{.*}}, %{{.*}} {transA = 1 : i64} : (tensor<4x16xf32>, tensor<4x3xf32>, none) -> tensor<16x3xf32>
// CHECK:       %[[DB2:.*]] = mp.reshape
// CHECK-NEXT:  %[[B1:.*]]:2 = mp.all_reduce %[[DW2]], %[[DB2]] {reduce_type = f32, reduction = "mean"} : (tensor<16x3xf32>, tensor<3xf32>) -> (tensor<16x3xf32>, tensor<3xf32>)
// CHECK:       %[[DW1:.*]] = mp.gemm %{{.*}}, %{{.*}}, %{{.*}} {transA = 1 : i64} : (tensor<4x8xf32>, tensor<4x16xf32>, none) -> tensor<8x16xf32>
// CHECK-NEXT:  %[[B2:.*]] = mp.all_reduce %[[DW1]] {reduce_type = f32, reduction = "mean"} : (tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK:       %[[DB1:.*]] = mp.reshape
// CHECK-NEXT:  %[[B3:.*]] = mp.all_reduce %[[DB1]] {reduce_type = f32, reduction = "mean"} : (tensor<16xf32>) -> tensor<16xf32>
// CHECK-NOT:   mp.all_reduce
// CHECK:       mp.sgd_update %[[B2]], {{.*}}param = @fc1.weight
// CHECK:       mp.sgd_update %[[B3]], {{.*}}param = @fc1.bias
// CHECK:       mp.sgd_update %[[B1]]#0, {{.*}}param = @fc2.weight
// CHECK:       mp.sgd_update %[[B1]]#1, {{.*}}param = @fc2.bias

// The default bucket (25 MB) holds them all, issued after the last one; the
// gradients travel as bf16.
// BF16-LABEL: func.func @mlp(
// BF16:        %{{.*}}:4 = mp.all_reduce %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {reduce_type = bf16, reduction = "mean"}
// BF16-NOT:    mp.all_reduce

// Loss scaling: the gradients are reduced (scaled) first, then unscaled and
// checked, and the flag's maximum over the ranks decides for every rank.
// SCALED-LABEL: func.func @mlp(
// SCALED:       %[[R:.*]]:4 = mp.all_reduce
// SCALED:       %[[FOUND:.*]], %{{.*}}:4 = mp.unscale_check_finite %{{.*}}, %[[R]]#2, %[[R]]#3, %[[R]]#0, %[[R]]#1
// SCALED-NEXT:  %[[AGREED:.*]] = mp.all_reduce %[[FOUND]] {reduce_type = f32, reduction = "max"} : (tensor<1xf32>) -> tensor<1xf32>
// SCALED:       mp.sgd_update %{{.*}}, %[[AGREED]]
// SCALED:       mp.loss_scale_update %[[AGREED]]

// ALONE-NOT: mp.all_reduce
// ALONE-NOT: mp.data_parallel
func.func @mlp(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "logits"}) {
  %w1 = mp.initializer "fc1.weight" dense<0.1> : tensor<8x16xf32>
  %b1 = mp.initializer "fc1.bias" dense<0.0> : tensor<16xf32>
  %w2 = mp.initializer "fc2.weight" dense<0.1> : tensor<16x3xf32>
  %b2 = mp.initializer "fc2.bias" dense<0.0> : tensor<3xf32>
  %h = mp.gemm %x, %w1, %b1 : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("fc1")
  %r = mp.relu %h : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("relu")
  %y = mp.gemm %r, %w2, %b2 : (tensor<4x16xf32>, tensor<16x3xf32>, tensor<3xf32>) -> tensor<4x3xf32> loc("fc2")
  return %y : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @conv_bn(
// CHECK:       mp.batch_normalization {{.*}} {momentum = {{.*}}, mp.sync_ranks, training_mode = 1 : i64}
// CHECK:       mp.batch_norm_grad {{.*}} {epsilon = {{.*}}, mp.sync_ranks}
// BF16-LABEL:  func.func @conv_bn(
// ALONE-LABEL: func.func @conv_bn(
// ALONE-NOT:   mp.sync_ranks
func.func @conv_bn(%x: tensor<2x3x4x4xf32> {mp.name = "image"}) -> (tensor<2x4xf32> {mp.name = "logits"}) {
  %w = mp.initializer "conv.weight" dense<0.1> : tensor<4x3x3x3xf32>
  %s = mp.initializer "bn.weight" dense<1.0> : tensor<4xf32>
  %b = mp.initializer "bn.bias" dense<0.0> : tensor<4xf32>
  %m = mp.initializer "bn.running_mean" dense<0.0> : tensor<4xf32>
  %v = mp.initializer "bn.running_var" dense<1.0> : tensor<4xf32>
  %none = mp.none
  %c = mp.conv %x, %w, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>, none) -> tensor<2x4x4x4xf32> loc("conv")
  %n, %rm, %rv = mp.batch_normalization %c, %s, %b, %m, %v {momentum = 0.9 : f32} : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) loc("bn")
  %g = mp.global_average_pool %n : (tensor<2x4x4x4xf32>) -> tensor<2x4x1x1xf32> loc("gap")
  %f = mp.flatten %g : (tensor<2x4x1x1xf32>) -> tensor<2x4xf32> loc("flatten")
  return %f : tensor<2x4xf32>
}
