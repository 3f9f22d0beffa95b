// mp-loss-scale's errors: bad options (on the module), a module without a
// training step, a step loss-scaled twice (with any mode), a step without
// gradients to unscale, and a loss seed that is not a scalar.
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale=mode=adaptive 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale=init-scale=0 2>&1 | FileCheck %s --check-prefix=FACTORS
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale=init-scale=-8 2>&1 | FileCheck %s --check-prefix=FACTORS
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale=init-scale=inf 2>&1 | FileCheck %s --check-prefix=FACTORS
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale=growth-factor=1 2>&1 | FileCheck %s --check-prefix=FACTORS
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale=backoff-factor=1 2>&1 | FileCheck %s --check-prefix=FACTORS
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale=backoff-factor=0 2>&1 | FileCheck %s --check-prefix=FACTORS
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale=interval=0 2>&1 | FileCheck %s --check-prefix=FACTORS
// Bad factors are errors with mode=none too.
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale="mode=none growth-factor=0.5" 2>&1 | FileCheck %s --check-prefix=FACTORS
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-loss-scale 2>&1 | FileCheck %s --check-prefix=UNTRAINED
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale=mode=dynamic --mp-loss-scale 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale=mode=static --mp-loss-scale=mode=dynamic 2>&1 | FileCheck %s --check-prefix=TWICE-STATIC
// RUN: not mp-opt %s -split-input-file --mp-loss-scale=mode=dynamic 2>&1 | FileCheck %s --implicit-check-not=error:

// MODE: mlp.mlir:0:0: error: mp-loss-scale: unknown mode 'adaptive' (auto, dynamic, static or none)
// FACTORS: mlp.mlir:0:0: error: mp-loss-scale: need init-scale > 0, growth-factor > 1, 0 < backoff-factor < 1 and interval >= 1
// UNTRAINED: mlp.mlir:0:0: error: mp-loss-scale: no training step (run mp-training first)
// TWICE: mlp.mlir:2:1: error: mp-loss-scale: @mlp is already loss-scaled (mode "dynamic")
// TWICE-STATIC: mlp.mlir:2:1: error: mp-loss-scale: @mlp is already loss-scaled (mode "static")

// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-loss-scale: the step has no gradients to unscale
func.func @no_gradients(%x: tensor<4xf32>) -> (tensor<4xf32> {mp.name = "y"}) {
  %seed = mp.constant {mp.loss_seed, value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %y = mp.mul %x, %seed : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @seed_not_scalar(%x: tensor<4xf32>) -> (tensor<4xf32> {mp.name = "grad:x"}) {
  // CHECK: errors.mlir:[[@LINE+1]]:11: error: mp-loss-scale: the loss seed must be a scalar, got 'tensor<1xf32>'
  %seed = mp.constant {mp.loss_seed, value = dense<1.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %y = mp.mul %x, %seed : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
