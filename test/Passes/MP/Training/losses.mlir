// mp-training's losses. cross-entropy (the default) is softmax cross-entropy
// on the output as logits, or on a class-axis Softmax's input. Its `-probs`
// form takes a non-Softmax output as probabilities: Log then
// NegativeLogLikelihoodLoss (backward: nll_loss_grad, then d log = 1/x), in
// the output's element type (f16 too). mse: ReduceMean((y - label)^2) with a
// float label of the output's shape, task regression. `output` picks the
// output the loss is on; the others are dropped.
// RUN: mp-opt %s -split-input-file --mp-training | FileCheck %s --check-prefix=CE
// RUN: mp-opt %s -split-input-file --mp-training=loss=cross-entropy-probs | FileCheck %s --check-prefix=PROBS
// RUN: mp-opt %s -split-input-file --mp-training=loss=mse | FileCheck %s --check-prefix=MSE
// RUN: mp-opt %s -split-input-file --mp-training="loss=cross-entropy-probs output=y" | FileCheck %s --check-prefix=OUTPUT

// CE-LABEL: func.func @logits(
// CE-SAME: %{{[^:]*}}: tensor<4xi64> {mp.name = "label"}) -> (tensor<f32> {mp.name = "loss"}, tensor<4x3xf32> {mp.name = "y"})
// CE-SAME: task = "classification"
// CE: %[[L:.*]] = mp.gemm
// CE: %[[LOSS:.*]], %{{.*}} = mp.softmax_cross_entropy_loss %[[L]], %{{.*}}, %{{.*}} {reduction = "mean"}
// CE: mp.softmax_cross_entropy_grad %[[L]],
// CE: return %[[LOSS]], %[[L]] :

// PROBS-LABEL: func.func @logits(
// PROBS: %[[P:.*]] = mp.gemm
// PROBS-NEXT: %[[LOGP:.*]] = mp.log %[[P]] : (tensor<4x3xf32>) -> tensor<4x3xf32>
// PROBS-NEXT: %[[NONE:.*]] = mp.none
// PROBS-NEXT: %[[LOSS:.*]] = mp.negative_log_likelihood_loss %[[LOGP]], %{{.*}}, %[[NONE]] {reduction = "mean"} : (tensor<4x3xf32>, tensor<4xi64>, none) -> tensor<f32>
// PROBS-NEXT: %[[SEED:.*]] = mp.constant {mp.loss_seed, value = dense<1.000000e+00> : tensor<f32>}
// PROBS: %[[DLOGP:.*]] = mp.nll_loss_grad %[[LOGP]], %{{.*}}, %[[SEED]], %{{.*}} : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>, none) -> tensor<4x3xf32>
// PROBS-NEXT: %[[DP:.*]] = mp.div %[[DLOGP]], %[[P]]
// PROBS: mp.gemm %{{.*}}, %[[DP]], %{{.*}} {transA = 1 : i64}
// PROBS: return %[[LOSS]], %[[P]] :

// MSE-LABEL: func.func @logits(
// MSE-SAME: %{{[^:]*}}: tensor<4x3xf32> {mp.name = "label"}) -> (tensor<f32> {mp.name = "loss"}, tensor<4x3xf32> {mp.name = "y"})
// MSE-SAME: task = "regression"
// MSE: %[[Y:.*]] = mp.gemm
// MSE-NEXT: %[[D:.*]] = mp.sub %[[Y]], %{{.*}} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// MSE-NEXT: %[[SQ:.*]] = mp.mul %[[D]], %[[D]]
// MSE-NEXT: %[[LOSS:.*]] = mp.reduce_mean %[[SQ]] {keepdims = 0 : i64} : (tensor<4x3xf32>) -> tensor<f32>
// MSE-NEXT: mp.constant {mp.loss_seed, value = dense<1.000000e+00> : tensor<f32>}
// The mean's gradient: the seed spread over the 12 elements, divided by 12.
// MSE: mp.expand %{{.*}} -> tensor<4x3xf32>
// MSE: mp.constant {value = dense<0.0833333358> : tensor<f32>}
// MSE: return %[[LOSS]], %[[Y]] :
func.func @logits(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "y"}) {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  %none = mp.none
  %l = mp.gemm %x, %w, %none : (tensor<4x8xf32>, tensor<8x3xf32>, none) -> tensor<4x3xf32> loc("fc")
  return %l : tensor<4x3xf32>
}

// -----

// A Softmax on the class axis (-1 of a rank-2 output): both cross-entropies
// take its input, exactly; mse is on the probabilities.
// CE-LABEL: func.func @softmax_last_axis(
// CE: %[[L:.*]] = mp.gemm
// CE-NEXT: %[[P:.*]] = mp.softmax %[[L]] {axis = -1 : i64}
// CE: mp.softmax_cross_entropy_loss %[[L]],
// PROBS-LABEL: func.func @softmax_last_axis(
// PROBS-NOT: mp.log
// PROBS: %[[L:.*]] = mp.gemm
// PROBS: mp.softmax_cross_entropy_loss %[[L]],
// PROBS-NOT: mp.negative_log_likelihood_loss
// PROBS: return
// MSE-LABEL: func.func @softmax_last_axis(
// MSE: %[[P:.*]] = mp.softmax
// MSE-NEXT: mp.sub %[[P]], %{{.*}}
func.func @softmax_last_axis(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "y"}) {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  %none = mp.none
  %l = mp.gemm %x, %w, %none : (tensor<4x8xf32>, tensor<8x3xf32>, none) -> tensor<4x3xf32> loc("fc")
  %p = mp.softmax %l {axis = -1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32> loc("softmax")
  return %p : tensor<4x3xf32>
}

// -----

// An f16 model: the loss and its seed are f16.
// CE-LABEL: func.func @f16(
// CE-SAME: -> (tensor<f16> {mp.name = "loss"}, tensor<4x3xf16> {mp.name = "y"})
// CE: mp.softmax_cross_entropy_loss {{.*}} -> (tensor<f16>, tensor<4x3xf16>)
// CE: mp.constant {mp.loss_seed, value = dense<1.000000e+00> : tensor<f16>}
// PROBS-LABEL: func.func @f16(
// PROBS: mp.log %{{.*}} : (tensor<4x3xf16>) -> tensor<4x3xf16>
// PROBS: mp.negative_log_likelihood_loss {{.*}} : (tensor<4x3xf16>, tensor<4xi64>, none) -> tensor<f16>
// PROBS: mp.constant {mp.loss_seed, value = dense<1.000000e+00> : tensor<f16>}
// PROBS: mp.nll_loss_grad {{.*}} : (tensor<4x3xf16>, tensor<4xi64>, tensor<f16>, none) -> tensor<4x3xf16>
// The optimizer updates f32: the f16 gradient is cast.
// PROBS: %[[G:.*]] = mp.cast %{{.*}} {to = 1 : i64} : (tensor<8x3xf16>) -> tensor<8x3xf32>
// PROBS: mp.sgd_update %[[G]], {{.*}}param = @w
// MSE-LABEL: func.func @f16(
// MSE-SAME: %{{[^:]*}}: tensor<4x3xf16> {mp.name = "label"}) -> (tensor<f16> {mp.name = "loss"}
// MSE: mp.reduce_mean %{{.*}} {keepdims = 0 : i64} : (tensor<4x3xf16>) -> tensor<f16>
func.func @f16(%x: tensor<4x8xf16> {mp.name = "x"}) -> (tensor<4x3xf16> {mp.name = "y"}) {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf16>
  %none = mp.none
  %l = mp.gemm %x, %w, %none : (tensor<4x8xf16>, tensor<8x3xf16>, none) -> tensor<4x3xf16> loc("fc")
  %p = mp.sigmoid %l : (tensor<4x3xf16>) -> tensor<4x3xf16> loc("sigmoid")
  return %p : tensor<4x3xf16>
}

// -----

// The first output by default; `output=y` the second.
// CE-LABEL: func.func @two_outputs(
// CE-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<4x3xf32> {mp.name = "scores"})
// CE-SAME: prediction_output = "scores"
// OUTPUT-LABEL: func.func @two_outputs(
// OUTPUT-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<4x3xf32> {mp.name = "y"})
// OUTPUT-SAME: prediction_output = "y"
// OUTPUT: %[[P:.*]] = mp.sigmoid
// OUTPUT-NEXT: mp.log %[[P]]
// OUTPUT: return %{{.*}}, %[[P]] : tensor<f32>, tensor<4x3xf32>
func.func @two_outputs(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "scores"}, tensor<4x3xf32> {mp.name = "y"}) {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  %none = mp.none
  %l = mp.gemm %x, %w, %none : (tensor<4x8xf32>, tensor<8x3xf32>, none) -> tensor<4x3xf32> loc("fc")
  %p = mp.sigmoid %l : (tensor<4x3xf32>) -> tensor<4x3xf32> loc("sigmoid")
  return %l, %p : tensor<4x3xf32>, tensor<4x3xf32>
}
