// Every error mp-training reports on a graph it cannot train: each names the
// function, input, output or node (op and ONNX node name) it is about, and
// nothing else is reported. Gradient-rule errors say what the rule does not
// support. Option errors are in options.mlir.
// RUN: not mp-opt %s -split-input-file --allow-unregistered-dialect --mp-training 2>&1 | FileCheck %s --implicit-check-not=error:

// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-training needs a function with one block
func.func @blocks(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  "test.br"()[^bb1] : () -> ()
^bb1:
  return %x : tensor<2x3xf32>
}

// -----

// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-training needs static shapes: input #0 has type 'tensor<?x8xf32>' (fix the batch size on import)
func.func @dynamic_input(%x: tensor<?x8xf32>) -> tensor<?x3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  %r = mp.matmul %x, %w : (tensor<?x8xf32>, tensor<8x3xf32>) -> tensor<?x3xf32> loc("mm")
  return %r : tensor<?x3xf32>
}

// -----

// mp-training infers and folds shapes first: only what stays dynamic (here
// the result of an op it knows nothing of) is an error.
func.func @dynamic_result(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  // CHECK: error: loc("dyn"): mp-training needs static shapes: test.dynamic at node 'dyn' has result type 'tensor<?x8xf32>'
  %d = "test.dynamic"(%x) : (tensor<4x8xf32>) -> tensor<?x8xf32> loc("dyn")
  %r = mp.matmul %d, %w : (tensor<?x8xf32>, tensor<8x3xf32>) -> tensor<?x3xf32> loc("mm")
  %c = mp.cast %r {to = 1 : i64} : (tensor<?x3xf32>) -> tensor<4x3xf32> loc("c")
  return %c : tensor<4x3xf32>
}

// -----

// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-training: the function has no output
func.func @no_output(%x: tensor<4x8xf32>) {
  return
}

// -----

// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-training: output 'classes' is not a floating-point tensor
func.func @integer_output(%x: tensor<4x8xf32>) -> (tensor<4x3xi64> {mp.name = "classes"}) {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  %r = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("mm")
  %c = mp.cast %r {to = 7 : i64} : (tensor<4x3xf32>) -> tensor<4x3xi64> loc("c")
  return %c : tensor<4x3xi64>
}

// -----

// An unnamed output is output<i>.
// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-training: output 'output0' is not a floating-point tensor
func.func @unnamed_integer_output(%x: tensor<4xi64>) -> tensor<4xi64> {
  return %x : tensor<4xi64>
}

// -----

// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-training: output 'loss' is the name of the loss output; rename the model's output
func.func @output_named_loss(%x: tensor<4x8xf32>) -> (tensor<4x3xf32> {mp.name = "loss"}) {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  %r = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("mm")
  return %r : tensor<4x3xf32>
}

// -----

// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-training: the model already has an input named 'label' (name the label input otherwise: label=NAME)
func.func @input_named_label(%x: tensor<4x8xf32> {mp.name = "label"}) -> tensor<4x3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  %r = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("mm")
  return %r : tensor<4x3xf32>
}

// -----

// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-training: cross-entropy needs an output of shape [batch, classes, ...], got 'tensor<3xf32>'
func.func @rank1_output(%x: tensor<8xf32>) -> tensor<3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  %r = mp.matmul %x, %w : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32> loc("mm")
  return %r : tensor<3xf32>
}

// -----

// The first output is the loss's by default: it has no parameter.
// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-training: output 'features' does not depend on any parameter
func.func @no_dependence(%x: tensor<4x8xf32>) -> (tensor<4x8xf32> {mp.name = "features"}, tensor<4x3xf32> {mp.name = "logits"}) {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  %r = mp.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("r")
  %m = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("mm")
  return %r, %m : tensor<4x8xf32>, tensor<4x3xf32>
}

// -----

// Only scalar (one-element) initializers: nothing to train.
// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-training: no trainable parameter reaches the loss (every initializer frozen or scalar?)
func.func @scalar_parameters_only(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %s = mp.initializer "s" dense<2.0> : tensor<f32>
  %b = mp.initializer "b" dense<1.0> : tensor<1xf32>
  %m = mp.mul %x, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32> loc("scale")
  %a = mp.add %m, %b : (tensor<4x3xf32>, tensor<1xf32>) -> tensor<4x3xf32> loc("shift")
  return %a : tensor<4x3xf32>
}

// -----

// Ops without a gradient rule on the way from the parameters to the loss.
func.func @generic_op(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  %r = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("mm")
  // CHECK: error: loc("foo"): mp-training: no gradient rule for mp.onnx_op at node 'foo'
  %c = mp.onnx_op "com.example" "Foo" version 1 (%r) : (tensor<4x3xf32>) -> tensor<4x3xf32> loc("foo")
  return %c : tensor<4x3xf32>
}

// -----

func.func @top_k(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<8x6xf32>
  %k = mp.constant {value = dense<3> : tensor<1xi64>} : () -> tensor<1xi64>
  %r = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32> loc("mm")
  // CHECK: error: loc("top"): mp-training: no gradient rule for mp.top_k at node 'top'
  %v, %i = mp.top_k %r, %k {axis = 1 : i64} : (tensor<4x6xf32>, tensor<1xi64>) -> (tensor<4x3xf32>, tensor<4x3xi64>) loc("top")
  return %v : tensor<4x3xf32>
}

// -----

// An op without a rule off the gradient path is fine; this one is not.
// CHECK-NOT: error:
func.func @unnamed_op(%x: tensor<4x8xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  %k = mp.constant {value = dense<3> : tensor<1xi64>} : () -> tensor<1xi64>
  %v0, %i0 = mp.top_k %y, %k {axis = 1 : i64} : (tensor<4x3xf32>, tensor<1xi64>) -> (tensor<4x3xf32>, tensor<4x3xi64>) loc("top_of_input")
  %r = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("mm")
  %s = mp.add %r, %v0 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc("add")
  // CHECK: error: mp-training: no gradient rule for mp.top_k (unnamed node)
  %v, %i = mp.top_k %s, %k {axis = 1 : i64} : (tensor<4x3xf32>, tensor<1xi64>) -> (tensor<4x3xf32>, tensor<4x3xi64>)
  return %v : tensor<4x3xf32>
}

// -----

// Errors of the gradient rules name the op and node, then say what is not
// supported.
func.func @gather_axis1(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<8x6xf32>
  %idx = mp.constant {value = dense<[0, 1, 2]> : tensor<3xi64>} : () -> tensor<3xi64>
  %r = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32> loc("mm")
  // CHECK: error: loc("cols"): mp-training: cannot differentiate mp.gather at node 'cols': gradient of Gather is supported along axis 0 (embeddings), got axis 1
  %g = mp.gather %r, %idx {axis = 1 : i64} : (tensor<4x6xf32>, tensor<3xi64>) -> tensor<4x3xf32> loc("cols")
  return %g : tensor<4x3xf32>
}

// -----

func.func @matmul_1d(%x: tensor<8xf32>) -> tensor<1x3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<8x3xf32>
  // CHECK: error: loc("mm"): mp-training: cannot differentiate mp.matmul at node 'mm': gradient of MatMul with 1-D operands is not supported
  %r = mp.matmul %x, %w : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32> loc("mm")
  %shape = mp.constant {value = dense<[1, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %y = mp.reshape %r, %shape : (tensor<3xf32>, tensor<2xi64>) -> tensor<1x3xf32> loc("reshape")
  return %y : tensor<1x3xf32>
}

// -----

func.func @reduce_sum_axes_input(%x: tensor<4x3xf32>, %axes: tensor<1xi64>) -> tensor<4x1xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<4x3xf32>
  %m = mp.mul %x, %w : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc("mul")
  // CHECK: error: loc("sum"): mp-training: cannot differentiate mp.reduce_sum at node 'sum': gradient of ReduceSum needs constant axes
  %r = mp.reduce_sum %m, %axes {keepdims = 1 : i64} : (tensor<4x3xf32>, tensor<1xi64>) -> tensor<4x1xf32> loc("sum")
  return %r : tensor<4x1xf32>
}

// -----

func.func @batch_norm_statistics_used(%x: tensor<2x4x3xf32>) -> tensor<2x4x3xf32> {
  %scale = mp.initializer "scale" dense<1.0> : tensor<4xf32>
  %bias = mp.initializer "bias" dense<0.0> : tensor<4xf32>
  %mean = mp.initializer "mean" dense<0.0> : tensor<4xf32>
  %var = mp.initializer "var" dense<1.0> : tensor<4xf32>
  // CHECK: error: loc("bn"): mp-training: cannot differentiate mp.batch_normalization at node 'bn': the running statistics of BatchNormalization have no gradient
  %y, %rm, %rv = mp.batch_normalization %x, %scale, %bias, %mean, %var : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>) loc("bn")
  %shape = mp.constant {value = dense<[4, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %m = mp.reshape %rm, %shape : (tensor<4xf32>, tensor<2xi64>) -> tensor<4x1xf32> loc("reshape")
  %o = mp.add %y, %m : (tensor<2x4x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32> loc("add")
  return %o : tensor<2x4x3xf32>
}

// -----

func.func @softmax_cross_entropy_log_prob(%x: tensor<4x3xf32>, %labels: tensor<4xi64>) -> tensor<4x3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<4x3xf32>
  %none = mp.none
  %m = mp.mul %x, %w : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc("mul")
  // CHECK: error: loc("sce"): mp-training: cannot differentiate mp.softmax_cross_entropy_loss at node 'sce': the log_prob output of SoftmaxCrossEntropyLoss has no gradient rule; use LogSoftmax
  %loss, %logp = mp.softmax_cross_entropy_loss %m, %labels, %none : (tensor<4x3xf32>, tensor<4xi64>, none) -> (tensor<f32>, tensor<4x3xf32>) loc("sce")
  return %logp : tensor<4x3xf32>
}

// -----

func.func @lstm_clip(%x: tensor<5x2x3xf32>) -> tensor<2x4xf32> {
  %w = mp.initializer "W" dense<0.1> : tensor<1x16x3xf32>
  %r = mp.initializer "R" dense<0.1> : tensor<1x16x4xf32>
  %none = mp.none
  // CHECK: error: loc("lstm"): mp-training: cannot differentiate mp.lstm at node 'lstm': gradient of LSTM supports layout 0 with the default activations, no clip and no input_forget
  %y, %yh, %yc = mp.lstm %x, %w, %r, %none, %none, %none, %none, %none {clip = 1.0 : f32, hidden_size = 4 : i64} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, none, none, none, none, none) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) loc("lstm")
  %shape = mp.constant {value = dense<[2, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
  %h = mp.reshape %yh, %shape : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("reshape")
  return %h : tensor<2x4xf32>
}

// -----

func.func @lstm_without_hidden_size(%x: tensor<5x2x3xf32>) -> tensor<2x4xf32> {
  %w = mp.initializer "W" dense<0.1> : tensor<1x16x3xf32>
  %r = mp.initializer "R" dense<0.1> : tensor<1x16x4xf32>
  %none = mp.none
  // CHECK: error: loc("lstm"): mp-training: cannot differentiate mp.lstm at node 'lstm': gradient of LSTM needs hidden_size
  %y, %yh, %yc = mp.lstm %x, %w, %r, %none, %none, %none, %none, %none : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, none, none, none, none, none) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) loc("lstm")
  %shape = mp.constant {value = dense<[2, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
  %h = mp.reshape %yh, %shape : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("reshape")
  return %h : tensor<2x4xf32>
}

// -----

func.func @lstm_sequence_lens(%x: tensor<5x2x3xf32>, %lens: tensor<2xi32>) -> tensor<2x4xf32> {
  %w = mp.initializer "W" dense<0.1> : tensor<1x16x3xf32>
  %r = mp.initializer "R" dense<0.1> : tensor<1x16x4xf32>
  %none = mp.none
  // CHECK: error: loc("lstm"): mp-training: cannot differentiate mp.lstm at node 'lstm': gradient of LSTM with sequence_lens or peepholes is not supported
  %y, %yh, %yc = mp.lstm %x, %w, %r, %none, %lens, %none, %none, %none {hidden_size = 4 : i64} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, none, tensor<2xi32>, none, none, none) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) loc("lstm")
  %shape = mp.constant {value = dense<[2, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
  %h = mp.reshape %yh, %shape : (tensor<1x2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("reshape")
  return %h : tensor<2x4xf32>
}

// -----

func.func @slice_step2(%x: tensor<4x6xf32>) -> tensor<4x3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<4x6xf32>
  %m = mp.mul %x, %w : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32> loc("mul")
  %starts = mp.constant {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %ends = mp.constant {value = dense<[6]> : tensor<1xi64>} : () -> tensor<1xi64>
  %axes = mp.constant {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %steps = mp.constant {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
  // CHECK: error: loc("every_other"): mp-training: cannot differentiate mp.slice at node 'every_other': gradient of Slice supports step 1 only, got 2
  %s = mp.slice %m, %starts, %ends, %axes, %steps : (tensor<4x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x3xf32> loc("every_other")
  return %s : tensor<4x3xf32>
}

// -----

func.func @slice_starts_input(%x: tensor<4x6xf32>, %starts: tensor<1xi64>) -> tensor<4x3xf32> {
  %w = mp.initializer "w" dense<0.1> : tensor<4x6xf32>
  %m = mp.mul %x, %w : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32> loc("mul")
  %ends = mp.constant {value = dense<[3]> : tensor<1xi64>} : () -> tensor<1xi64>
  %axes = mp.constant {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %none = mp.none
  // CHECK: error: loc("window"): mp-training: cannot differentiate mp.slice at node 'window': gradient of Slice needs constant starts, axes and steps
  %s = mp.slice %m, %starts, %ends, %axes, %none : (tensor<4x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<4x3xf32> loc("window")
  return %s : tensor<4x3xf32>
}

// -----

// Running statistics must be initializers (they become globals).
func.func @statistics_from_inputs(%x: tensor<2x4x3xf32>, %mean: tensor<4xf32>, %var: tensor<4xf32>) -> tensor<2x4x3xf32> {
  %scale = mp.initializer "scale" dense<1.0> : tensor<4xf32>
  %bias = mp.initializer "bias" dense<0.0> : tensor<4xf32>
  // CHECK: error: loc("bn"): mp-training: the statistics of mp.batch_normalization at node 'bn' must be initializers
  %y, %rm, %rv = mp.batch_normalization %x, %scale, %bias, %mean, %var : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>) loc("bn")
  return %y : tensor<2x4x3xf32>
}

// -----

// CHECK: errors.mlir:[[@LINE+1]]:1: error: mp-training needs exactly one function, the module has 2
module {
  func.func @first(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
    return %x : tensor<4x3xf32>
  }
  func.func @second(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
    return %x : tensor<4x3xf32>
  }
}
