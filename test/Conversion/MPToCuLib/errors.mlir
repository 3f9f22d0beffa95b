// convert-mp-to-culib reports every node it cannot lower, by ONNX node name,
// and changes nothing.
// RUN: not mp-opt %s -split-input-file --convert-mp-to-culib 2>&1 | FileCheck %s

func.func @generic(%x: tensor<2xf32>) -> tensor<2xf32> {
  // CHECK: error: {{.*}}cannot lower com.example::Foo at node 'foo1': it has no typed op
  %0 = mp.onnx_op "com.example" "Foo" version 1 (%x) : (tensor<2xf32>) -> tensor<2xf32> loc("foo1")
  return %0 : tensor<2xf32>
}

// -----

func.func @no_lowering(%x: tensor<2x3xf32>) -> tensor<2x?xi64> {
  // CHECK: error: {{.*}}cannot lower mp.non_zero at node 'nz': no culib lowering yet
  %0 = mp.non_zero %x : (tensor<2x3xf32>) -> tensor<2x?xi64> loc("nz")
  return %0 : tensor<2x?xi64>
}

// -----

// Sizes known only at run time: one message, however many outputs.
func.func @split_sizes(%x: tensor<4x3xf32>, %sizes: tensor<3xi64>) -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>) {
  // CHECK: error: {{.*}}cannot lower mp.split at node 's': the split sizes must be known at compile time{{$}}
  %0:3 = mp.split %x, %sizes : (tensor<4x3xf32>, tensor<3xi64>) -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>) loc("s")
  return %0#0, %0#1, %0#2 : tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>
}

// -----

// The dynamic argument is the problem; the op that reads it is not reported
// again.
func.func @dynamic(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // CHECK-NOT: mp.relu
  // CHECK: error: {{.*}}cannot lower @dynamic: argument #0 has type 'tensor<?x3xf32>', which is not a static tensor
  %0 = mp.relu %x : (tensor<?x3xf32>) -> tensor<?x3xf32> loc("r")
  return %0 : tensor<?x3xf32>
}

// -----

// CHECK: error: {{.*}}cannot lower @args: argument #0 has type 'tensor<*xf32>', which is not a static tensor
func.func @args(%x: tensor<*xf32>) {
  return
}

// -----

// An ONNX input with symbolic dims: the error names the dim_params to bind,
// without the function printed with it (it sits at the function, not on it).
// CHECK: error: {{.*}}cannot lower @symbolic: argument #0 'input' has type 'tensor<?x3x?xf32>', which is not a static tensor of numbers, bool or a narrow type (plans need static shapes; bind batch=N, seq=N with --dim-param)
// CHECK-NOT: see current operation
func.func @symbolic(%x: tensor<?x3x?xf32> {mp.name = "input", mp.dim_params = ["batch", "", "seq"]}) {
  return
}

// -----

func.func @strings(%x: tensor<2xf32>) -> tensor<2x!mp.string> {
  // CHECK: error: {{.*}}cannot lower mp.cast at node 'to_text': element type '!mp.string' has no runtime buffers (numbers, bool and the narrow types only)
  %0 = mp.cast %x {to = 8 : i64} : (tensor<2xf32>) -> tensor<2x!mp.string> loc("to_text")
  return %0 : tensor<2x!mp.string>
}

// -----

func.func @bn_f16_statistics_training(%x: tensor<1x2x3xf16>, %s: tensor<2xf16>) -> tensor<1x2x3xf16> {
  // CHECK: error: {{.*}}cannot lower mp.batch_normalization at node 'bn': in training mode, scale, bias and statistics must be f32, got 'tensor<2xf16>'
  %y, %m, %v = mp.batch_normalization %x, %s, %s, %s, %s {training_mode = 1 : i64} : (tensor<1x2x3xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>) -> (tensor<1x2x3xf16>, tensor<2xf16>, tensor<2xf16>) loc("bn")
  return %y : tensor<1x2x3xf16>
}

// Nothing else is reported.
// CHECK-NOT: error:

// -----

// One problem, one message: the ops downstream of the generic op, whose
// operands are unranked, are not reported again (nor crash the matmul's
// lowering rule, which reads its operands' ranks).
func.func @downstream(%x: tensor<2x2xf32>) -> tensor<*xf32> {
  // CHECK: error: {{.*}}cannot lower com.example::Bar at node 'bar': it has no typed op
  // CHECK-NOT: error
  %0 = mp.onnx_op "com.example" "Bar" version 1 (%x) : (tensor<2x2xf32>) -> tensor<*xf32> loc("bar")
  %1 = mp.matmul %0, %0 : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32> loc("mm")
  %2 = mp.relu %1 : (tensor<*xf32>) -> tensor<*xf32> loc("r")
  return %2 : tensor<*xf32>
}
