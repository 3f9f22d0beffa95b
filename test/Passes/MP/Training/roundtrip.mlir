// The training step mp-training builds (globals, training ops, mp.training
// attribute, loss seed) prints in a form that parses back to the same IR,
// custom and generic, with and without locations; also after
// mp-loss-scale. The models cover conv/BN/max-pool, LSTM and embedding
// (Gather) gradients.
// RUN: mp-opt %s -split-input-file --mp-training="momentum=0.9 nesterov=true" > %t.1.mlir
// RUN: mp-opt %t.1.mlir -split-input-file > %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// RUN: mp-opt %t.1.mlir -split-input-file -mlir-print-op-generic | mp-opt -split-input-file > %t.3.mlir
// RUN: diff %t.1.mlir %t.3.mlir
// RUN: FileCheck %s --input-file=%t.2.mlir --check-prefix=SGD
// RUN: mp-opt %s -split-input-file --mp-training="loss=cross-entropy-probs optimizer=adamw" --mp-loss-scale=mode=dynamic --mlir-print-debuginfo > %t.4.mlir
// RUN: mp-opt %t.4.mlir -split-input-file --mlir-print-debuginfo > %t.5.mlir
// RUN: diff %t.4.mlir %t.5.mlir
// RUN: FileCheck %s --input-file=%t.5.mlir --check-prefix=ADAM
// RUN: mp-opt %s -split-input-file --mp-training=optimizer=none | mp-opt -split-input-file | FileCheck %s --check-prefix=NONE

// SGD: ml_program.global private mutable @conv.weight.momentum(
// SGD-LABEL: func.func @conv_bn_pool(
// SGD-SAME: attributes {mp.training = {
// SGD: mp.constant {mp.loss_seed,
// SGD: mp.softmax_cross_entropy_grad
// SGD: mp.pool_grad {{.*}}mode = "max"
// SGD: mp.batch_norm_grad
// SGD: mp.conv_grad_filter
// SGD: ml_program.global_store @bn.running_mean
// SGD: mp.sgd_update {{.*}}momentum_buffer = @conv.weight.momentum, nesterov = true
// SGD-LABEL: func.func @lstm(
// SGD: mp.lstm_grad
// SGD-LABEL: func.func @embedding(
// SGD: mp.scatter_nd {{.*}}reduction = "add"
// SGD: mp.sgd_update {{.*}}param = @embedding.weight

// ADAM: ml_program.global private mutable @loss_scale(dense<6.553600e+04> : tensor<f32>) : tensor<f32> loc(
// ADAM-LABEL: func.func @conv_bn_pool(
// ADAM: mp.unscale_check_finite
// ADAM: mp.adam_update {{.*}}decoupled_weight_decay = true
// ADAM: mp.loss_scale_update
// ADAM-LABEL: func.func @lstm(
// ADAM: mp.nll_loss_grad
// ADAM-LABEL: func.func @embedding(

// NONE-LABEL: func.func @conv_bn_pool(
// NONE-SAME: {mp.name = "grad:conv.weight"}
// NONE-LABEL: func.func @lstm(
// NONE-SAME: {mp.name = "grad:W"}, {{.*}}{mp.name = "grad:R"}, {{.*}}{mp.name = "grad:B"}
// NONE-LABEL: func.func @embedding(
// NONE-SAME: {mp.name = "grad:embedding.weight"}

func.func @conv_bn_pool(%x: tensor<2x3x6x6xf32> {mp.name = "image"}) -> (tensor<2x5xf32> {mp.name = "probs"}) {
  %w = mp.initializer "conv.weight" dense<0.1> : tensor<4x3x3x3xf32>
  %scale = mp.initializer "bn.weight" dense<1.0> : tensor<4xf32>
  %bias = mp.initializer "bn.bias" dense<0.0> : tensor<4xf32>
  %mean = mp.initializer "bn.running_mean" dense<0.0> : tensor<4xf32>
  %var = mp.initializer "bn.running_var" dense<1.0> : tensor<4xf32>
  %fc = mp.initializer "fc.weight" dense<0.1> : tensor<5x36xf32>
  %fcb = mp.initializer "fc.bias" dense<0.0> : tensor<5xf32>
  %none = mp.none
  %c = mp.conv %x, %w, %none {auto_pad = "SAME_UPPER"} : (tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>, none) -> tensor<2x4x6x6xf32> loc("conv")
  %y, %rm, %rv = mp.batch_normalization %c, %scale, %bias, %mean, %var : (tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>) loc("bn")
  %r = mp.relu %y : (tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32> loc("relu")
  %p, %i = mp.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x4x6x6xf32>) -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xi64>) loc("pool")
  %f = mp.flatten %p {axis = 1 : i64} : (tensor<2x4x3x3xf32>) -> tensor<2x36xf32> loc("flatten")
  %l = mp.gemm %f, %fc, %fcb {transB = 1 : i64} : (tensor<2x36xf32>, tensor<5x36xf32>, tensor<5xf32>) -> tensor<2x5xf32> loc("fc")
  %s = mp.softmax %l {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("softmax")
  return %s : tensor<2x5xf32>
}

// -----

func.func @lstm(%x: tensor<5x2x3xf32> {mp.name = "seq"}) -> (tensor<2x4xf32> {mp.name = "h"}) {
  %w = mp.initializer "W" dense<0.1> : tensor<1x16x3xf32>
  %r = mp.initializer "R" dense<0.1> : tensor<1x16x4xf32>
  %b = mp.initializer "B" dense<0.0> : tensor<1x32xf32>
  %none = mp.none
  %y, %yh, %yc = mp.lstm %x, %w, %r, %b, %none, %none, %none, %none {hidden_size = 4 : i64} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, none, none, none, none) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) loc("lstm")
  %shape = mp.constant {value = dense<[2, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
  %h = mp.reshape %yh, %shape : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("reshape")
  return %h : tensor<2x4xf32>
}

// -----

func.func @embedding(%ids: tensor<2x3xi64> {mp.name = "ids"}) -> (tensor<2x4xf32> {mp.name = "logits"}) {
  %table = mp.initializer "embedding.weight" dense<0.1> : tensor<10x8xf32>
  %w = mp.initializer "head.weight" dense<0.1> : tensor<8x4xf32>
  %e = mp.gather %table, %ids {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32> loc("embed")
  %m = mp.reduce_mean %e {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x8xf32>) -> tensor<2x8xf32> loc("pool")
  %l = mp.matmul %m, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32> loc("head")
  return %l : tensor<2x4xf32>
}
