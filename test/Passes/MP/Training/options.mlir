// mp-training's option errors: each is reported on the module (bad values)
// or on the function (names that do not or already exist).
// RUN: not mp-opt %s --mp-training=loss=hinge 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not mp-opt %s --mp-training=optimizer=rmsprop 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: not mp-opt %s --mp-training=lr=0 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not mp-opt %s --mp-training=lr=-0.1 2>&1 | FileCheck %s --check-prefix=LR-NEG
// RUN: not mp-opt %s --mp-training=momentum=-0.9 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not mp-opt %s --mp-training=dampening=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not mp-opt %s --mp-training=weight-decay=-0.01 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not mp-opt %s --mp-training=nesterov=true 2>&1 | FileCheck %s --check-prefix=NESTEROV
// RUN: not mp-opt %s --mp-training="nesterov=true momentum=0.9 dampening=0.1" 2>&1 | FileCheck %s --check-prefix=NESTEROV
// RUN: not mp-opt %s --mp-training=wrt-inputs=true 2>&1 | FileCheck %s --check-prefix=WRT
// RUN: not mp-opt %s --mp-training="optimizer=adam wrt-inputs=true" 2>&1 | FileCheck %s --check-prefix=WRT
// RUN: not mp-opt %s --mp-training=label= 2>&1 | FileCheck %s --check-prefix=LABEL-EMPTY
// RUN: not mp-opt %s --mp-training=label=x 2>&1 | FileCheck %s --check-prefix=LABEL-TAKEN
// RUN: not mp-opt %s --mp-training="frozen=fc.weight,fc.bais" 2>&1 | FileCheck %s --check-prefix=FROZEN
// RUN: not mp-opt %s --mp-training="frozen=fc.weight,fc.bias" 2>&1 | FileCheck %s --check-prefix=ALL-FROZEN
// RUN: not mp-opt %s --mp-training=output=logits 2>&1 | FileCheck %s --check-prefix=OUTPUT
// RUN: not mp-opt %s "--mp-training=data-parallel=true reduce-type=f64" 2>&1 | FileCheck %s --check-prefix=REDUCE-TYPE
// RUN: not mp-opt %s "--mp-training=data-parallel=true bucket-mb=0" 2>&1 | FileCheck %s --check-prefix=BUCKET
// RUN: not mp-opt %s --mp-training=reduce-type=bf16 2>&1 | FileCheck %s --check-prefix=NOT-PARALLEL

// LOSS: options.mlir:0:0: error: mp-training: unknown loss 'hinge' (cross-entropy, cross-entropy-probs or mse)
// OPTIMIZER: options.mlir:0:0: error: mp-training: unknown optimizer 'rmsprop' (sgd, adam, adamw or none)
// LR: options.mlir:0:0: error: mp-training: lr must be positive, got 0.000000e+00
// LR-NEG: options.mlir:0:0: error: mp-training: lr must be positive, got -1.000000e-01
// NEGATIVE: options.mlir:0:0: error: mp-training: momentum, dampening and weight-decay must not be negative
// NESTEROV: options.mlir:0:0: error: mp-training: nesterov needs momentum > 0 and dampening 0 (as torch.optim.SGD)
// WRT: options.mlir:0:0: error: mp-training: wrt-inputs needs optimizer=none
// LABEL-EMPTY: options.mlir:0:0: error: mp-training: label must not be empty
// REDUCE-TYPE: options.mlir:0:0: error: mp-training: reduce-type must be f32, bf16 or f16, got 'f64'
// BUCKET: options.mlir:0:0: error: mp-training: bucket-mb must be positive, got 0.000000e+00
// NOT-PARALLEL: options.mlir:0:0: error: mp-training: reduce-type and bucket-mb need data-parallel=true
// LABEL-TAKEN: options.mlir:[[@LINE+5]]:1: error: mp-training: the model already has an input named 'x' (name the label input otherwise: label=NAME)
// FROZEN: options.mlir:[[@LINE+4]]:1: error: mp-training: frozen initializer 'fc.bais' does not exist
// ALL-FROZEN: options.mlir:[[@LINE+3]]:1: error: mp-training: no trainable parameter reaches the loss (every initializer frozen or scalar?)
// OUTPUT: options.mlir:[[@LINE+2]]:1: error: mp-training: no output named 'logits'

func.func @main(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "probs"}) {
  %w = mp.initializer "fc.weight" dense<0.1> : tensor<8x3xf32>
  %b = mp.initializer "fc.bias" dense<0.0> : tensor<3xf32>
  %l = mp.gemm %x, %w, %b : (tensor<4x8xf32>, tensor<8x3xf32>, tensor<3xf32>) -> tensor<4x3xf32> loc("fc")
  %p = mp.softmax %l {axis = 1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32> loc("softmax")
  return %p : tensor<4x3xf32>
}
