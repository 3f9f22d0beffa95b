// An f16 model with BatchNormalization (as onnxconverter-common writes
// them): mp-master-weights keeps scale, bias and running statistics as f32
// globals that the batch norm reads directly (cuDNN takes f32 there), stores
// f32 running statistics, and the batch norm's backward gives f32 scale and
// bias gradients to the updates. The step lowers and runs.
// RUN: mp-opt %s --mp-training="optimizer=sgd lr=0.1" --mp-autocast --mp-master-weights --mp-loss-scale | FileCheck %s
// RUN: mp-opt %s --mp-training="optimizer=sgd lr=0.1" --mp-autocast --mp-master-weights --mp-loss-scale --emit=plan -o %t.mpplan
// RUN: mp-run %t.mpplan --zero-inputs | FileCheck %s --check-prefix=STEP

// CHECK-DAG: ml_program.global private mutable @bn.scale({{.*}}) : tensor<2xf32>
// CHECK-DAG: ml_program.global private mutable @bn.mean({{.*}}) : tensor<2xf32>
// CHECK-DAG: ml_program.global private mutable @bn.var({{.*}}) : tensor<2xf32>
// CHECK-DAG: %[[S:.*]] = ml_program.global_load @bn.scale : tensor<2xf32>
// CHECK-DAG: %[[M:.*]] = ml_program.global_load @bn.mean : tensor<2xf32>
// CHECK: %{{.*}}, %[[RM:.*]], %[[RV:.*]] = mp.batch_normalization %{{.*}}, %[[S]], %{{.*}}, %[[M]], %{{.*}} {training_mode = 1 : i64} : (tensor<4x2x3x3xf16>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2x3x3xf16>, tensor<2xf32>, tensor<2xf32>)
// CHECK: %{{.*}}, %[[DS:.*]], %[[DB:.*]] = mp.batch_norm_grad %{{.*}}, %[[S]], %{{.*}} {{.*}}: (tensor<4x2x3x3xf16>, tensor<2xf32>, tensor<4x2x3x3xf16>) -> (tensor<4x2x3x3xf16>, tensor<2xf32>, tensor<2xf32>)
// CHECK: ml_program.global_store @bn.mean = %[[RM]] : tensor<2xf32>
// CHECK: mp.unscale_check_finite
// CHECK-SAME: %[[DS]]
// CHECK-SAME: %[[DB]]
// STEP: output loss: f16 [] = [0.693{{[0-9]*}}]
// STEP: output skipped: f32 [1] = [0]
func.func @main(%x: tensor<4x1x3x3xf16> {mp.name = "x"}) -> (tensor<4x2xf16> {mp.name = "y"}) {
  %w = mp.initializer "conv.weight" dense<[[[[0.1, -0.2, 0.3], [0.2, 0.1, -0.1], [0.3, 0.2, 0.1]]], [[[-0.1, 0.2, 0.1], [0.1, -0.3, 0.2], [0.2, 0.1, -0.2]]]]> : tensor<2x1x3x3xf16>
  %s = mp.initializer "bn.scale" dense<1.0> : tensor<2xf16>
  %b = mp.initializer "bn.bias" dense<0.0> : tensor<2xf16>
  %m = mp.initializer "bn.mean" dense<0.0> : tensor<2xf16>
  %v = mp.initializer "bn.var" dense<1.0> : tensor<2xf16>
  %none = mp.none
  %c = mp.conv %x, %w, %none {pads = array<i64: 1, 1, 1, 1>, kernel_shape = array<i64: 3, 3>} : (tensor<4x1x3x3xf16>, tensor<2x1x3x3xf16>, none) -> tensor<4x2x3x3xf16> loc("conv")
  %y, %rm, %rv = mp.batch_normalization %c, %s, %b, %m, %v : (tensor<4x2x3x3xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> (tensor<4x2x3x3xf16>, tensor<2xf16>, tensor<2xf16>) loc("bn")
  %r = mp.relu %y : (tensor<4x2x3x3xf16>) -> tensor<4x2x3x3xf16> loc("relu")
  %p = mp.global_average_pool %r : (tensor<4x2x3x3xf16>) -> tensor<4x2x1x1xf16> loc("pool")
  %f = mp.flatten %p {axis = 1 : i64} : (tensor<4x2x1x1xf16>) -> tensor<4x2xf16> loc("flatten")
  return %f : tensor<4x2xf16>
}
