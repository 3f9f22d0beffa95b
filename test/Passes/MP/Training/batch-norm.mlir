// mp-training on a conv net with BatchNormalization: the BN switches to
// training mode; its scale and bias are parameters; its running statistics
// are globals (not parameters: no gradient, no update) that the step stores
// through ml_program.global_store. The backward pass uses the training ops:
// pool_grad (global average pool), batch_norm_grad and conv_grad_filter
// (with the conv's explicit pads); no dX for the data input.
// An initializer that several statistics share gives each its own global.
// RUN: mp-opt %s --mp-training -split-input-file | FileCheck %s

// CHECK:      ml_program.global private mutable @conv.weight(dense<1.000000e-01> : tensor<4x3x3x3xf32>) : tensor<4x3x3x3xf32>
// CHECK-NEXT: ml_program.global private mutable @bn.weight(dense<1.000000e+00> : tensor<4xf32>) : tensor<4xf32>
// CHECK-NEXT: ml_program.global private mutable @bn.bias(dense<0.000000e+00> : tensor<4xf32>) : tensor<4xf32>
// CHECK-NEXT: ml_program.global private mutable @fc.weight(dense<1.000000e-01> : tensor<4x5xf32>) : tensor<4x5xf32>
// CHECK-NEXT: ml_program.global private mutable @bn.running_mean(dense<0.000000e+00> : tensor<4xf32>) : tensor<4xf32>
// CHECK-NEXT: ml_program.global private mutable @bn.running_var(dense<1.000000e+00> : tensor<4xf32>) : tensor<4xf32>
// The statistics have no optimizer state.
// CHECK-NEXT: ml_program.global private mutable @conv.weight.step(
// CHECK-NEXT: ml_program.global private mutable @bn.weight.step(
// CHECK-NEXT: ml_program.global private mutable @bn.bias.step(
// CHECK-NEXT: ml_program.global private mutable @fc.weight.step(
// CHECK-NOT:  ml_program.global
// CHECK-LABEL: func.func @conv_bn(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x4x4xf32> {mp.name = "image"}, %[[LBL:[^:]*]]: tensor<2xi64> {mp.name = "label"})
// CHECK-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<2x5xf32> {mp.name = "logits"})
// CHECK-DAG:  %[[W:.*]] = ml_program.global_load @conv.weight : tensor<4x3x3x3xf32>
// CHECK-DAG:  %[[SCALE:.*]] = ml_program.global_load @bn.weight : tensor<4xf32>
// CHECK-DAG:  %[[BIAS:.*]] = ml_program.global_load @bn.bias : tensor<4xf32>
// CHECK-DAG:  %[[MEAN:.*]] = ml_program.global_load @bn.running_mean : tensor<4xf32>
// CHECK-DAG:  %[[VAR:.*]] = ml_program.global_load @bn.running_var : tensor<4xf32>
// CHECK:      %[[C:.*]] = mp.conv %[[X]], %[[W]]
// CHECK-NEXT: %[[Y:.*]], %[[RM:.*]], %[[RV:.*]] = mp.batch_normalization %[[C]], %[[SCALE]], %[[BIAS]], %[[MEAN]], %[[VAR]] {momentum = 0.899999976 : f32, training_mode = 1 : i64}
// CHECK-NEXT: %[[R:.*]] = mp.relu %[[Y]]
// CHECK:      %[[DP:.*]] = mp.pool_grad %[[R]], %{{.*}} {dilations = array<i64: 1, 1>, mode = "avg", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, window = array<i64: 4, 4>} : (tensor<2x4x4x4xf32>, tensor<2x4x1x1xf32>) -> tensor<2x4x4x4xf32>
// CHECK:      %[[DY:.*]] = mp.where %{{.*}}, %[[DP]], %{{.*}}
// CHECK-NEXT: %[[DX:.*]], %[[DSCALE:.*]], %[[DBIAS:.*]] = mp.batch_norm_grad %[[C]], %[[SCALE]], %[[DY]] {epsilon = 9.99999974E-6 : f32} : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NOT:  mp.conv_transpose
// CHECK-NEXT: %[[DW:.*]] = mp.conv_grad_filter %[[X]], %[[DX]] {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x3x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<4x3x3x3xf32>
// CHECK-NEXT: ml_program.global_store @bn.running_mean = %[[RM]] : tensor<4xf32>
// CHECK-NEXT: ml_program.global_store @bn.running_var = %[[RV]] : tensor<4xf32>
// CHECK:      mp.sgd_update %[[DW]], %{{.*}} {{.*}}param = @conv.weight
// CHECK:      mp.sgd_update %[[DSCALE]], %{{.*}} {{.*}}param = @bn.weight
// CHECK:      mp.sgd_update %[[DBIAS]], %{{.*}} {{.*}}param = @bn.bias
// CHECK:      mp.sgd_update %{{.*}}, %{{.*}} {{.*}}param = @fc.weight
// CHECK-NOT:  mp.sgd_update
func.func @conv_bn(%x: tensor<2x3x4x4xf32> {mp.name = "image"}) -> (tensor<2x5xf32> {mp.name = "logits"}) {
  %w = mp.initializer "conv.weight" dense<0.1> : tensor<4x3x3x3xf32>
  %scale = mp.initializer "bn.weight" dense<1.0> : tensor<4xf32>
  %bias = mp.initializer "bn.bias" dense<0.0> : tensor<4xf32>
  %mean = mp.initializer "bn.running_mean" dense<0.0> : tensor<4xf32>
  %var = mp.initializer "bn.running_var" dense<1.0> : tensor<4xf32>
  %fc = mp.initializer "fc.weight" dense<0.1> : tensor<4x5xf32>
  %none = mp.none
  %c = mp.conv %x, %w, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>, none) -> tensor<2x4x4x4xf32> loc("conv")
  %y, %rm, %rv = mp.batch_normalization %c, %scale, %bias, %mean, %var {momentum = 0.9 : f32} : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) loc("bn")
  %r = mp.relu %y : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32> loc("relu")
  %p = mp.global_average_pool %r : (tensor<2x4x4x4xf32>) -> tensor<2x4x1x1xf32> loc("gap")
  %f = mp.flatten %p {axis = 1 : i64} : (tensor<2x4x1x1xf32>) -> tensor<2x4xf32> loc("flatten")
  %l = mp.gemm %f, %fc, %none : (tensor<2x4xf32>, tensor<4x5xf32>, none) -> tensor<2x5xf32> loc("fc")
  return %l : tensor<2x5xf32>
}

// -----

// One initializer for both statistics of both BNs: four globals from it, each
// stored by its own BN output (its other use, a reshape, is folded into a
// constant). Scale and bias, shared by the BNs, get one update.
// CHECK:      ml_program.global private mutable @stat(dense<1.000000e+00> : tensor<2xf32>) : tensor<2xf32>
// CHECK-NEXT: ml_program.global private mutable @"stat#1"(dense<1.000000e+00> : tensor<2xf32>) : tensor<2xf32>
// CHECK-NEXT: ml_program.global private mutable @"stat#2"(dense<1.000000e+00> : tensor<2xf32>) : tensor<2xf32>
// CHECK-NEXT: ml_program.global private mutable @"stat#3"(dense<1.000000e+00> : tensor<2xf32>) : tensor<2xf32>
// CHECK-LABEL: func.func @shared_statistics(
// CHECK-DAG:  %[[S0:.*]] = ml_program.global_load @stat :
// CHECK-DAG:  %[[S1:.*]] = ml_program.global_load @"stat#1" :
// CHECK-DAG:  %[[S2:.*]] = ml_program.global_load @"stat#2" :
// CHECK-DAG:  %[[S3:.*]] = ml_program.global_load @"stat#3" :
// CHECK:      %{{.*}}, %[[M1:.*]], %[[V1:.*]] = mp.batch_normalization %{{.*}}, %{{.*}}, %{{.*}}, %[[S0]], %[[S1]] {training_mode = 1 : i64}
// CHECK:      %{{.*}}, %[[M2:.*]], %[[V2:.*]] = mp.batch_normalization %{{.*}}, %{{.*}}, %{{.*}}, %[[S2]], %[[S3]] {training_mode = 1 : i64}
// mp-training folds shape computations first: the reshaped initializer is
// a constant.
// CHECK:      mp.add %{{.*}}, %{{.*}} : (tensor<2x2x3xf32>, tensor<2x1x1xf32>)
// The shared scale and bias get the sum of both BNs' gradients.
// CHECK:      %{{.*}}, %[[DS2:.*]], %[[DB2:.*]] = mp.batch_norm_grad
// CHECK-NEXT: %{{.*}}, %[[DS1:.*]], %[[DB1:.*]] = mp.batch_norm_grad %{{.*}}, %[[SC:.*]], %{{.*}}
// CHECK-NEXT: %[[DS:.*]] = mp.add %[[DS2]], %[[DS1]]
// CHECK-NEXT: %[[DB:.*]] = mp.add %[[DB2]], %[[DB1]]
// CHECK:      ml_program.global_store @stat = %[[M1]]
// CHECK-NEXT: ml_program.global_store @"stat#1" = %[[V1]]
// CHECK-NEXT: ml_program.global_store @"stat#2" = %[[M2]]
// CHECK-NEXT: ml_program.global_store @"stat#3" = %[[V2]]
// CHECK:      mp.sgd_update %[[DS]], %{{.*}} {{.*}}param = @scale
// CHECK:      mp.sgd_update %[[DB]], %{{.*}} {{.*}}param = @bias
func.func @shared_statistics(%x: tensor<2x2x3xf32> {mp.name = "x"}) -> (tensor<2x2x3xf32> {mp.name = "y"}) {
  %scale = mp.initializer "scale" dense<1.0> : tensor<2xf32>
  %bias = mp.initializer "bias" dense<0.0> : tensor<2xf32>
  %stat = mp.initializer "stat" dense<1.0> : tensor<2xf32>
  %y1, %m1, %v1 = mp.batch_normalization %x, %scale, %bias, %stat, %stat : (tensor<2x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x3xf32>, tensor<2xf32>, tensor<2xf32>) loc("bn1")
  %y2, %m2, %v2 = mp.batch_normalization %y1, %scale, %bias, %stat, %stat : (tensor<2x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x3xf32>, tensor<2xf32>, tensor<2xf32>) loc("bn2")
  %shape = mp.constant {value = dense<[2, 1, 1]> : tensor<3xi64>} : () -> tensor<3xi64>
  %s = mp.reshape %stat, %shape : (tensor<2xf32>, tensor<3xi64>) -> tensor<2x1x1xf32> loc("stat_reshape")
  %y = mp.add %y2, %s : (tensor<2x2x3xf32>, tensor<2x1x1xf32>) -> tensor<2x2x3xf32> loc("add")
  return %y : tensor<2x2x3xf32>
}
