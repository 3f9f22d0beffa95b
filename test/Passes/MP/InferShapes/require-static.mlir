// With require-static, each op result that is still not a tensor of static
// shape after inference is an error (none results excepted), and the pass
// fails. Results that inference makes static are fine.
// RUN: mp-opt %s -split-input-file --mp-infer-shapes="require-static=true" -verify-diagnostics
// RUN: mp-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(mp-infer-shapes{require-static=true}))' -verify-diagnostics

func.func @all_static(%x: tensor<2x3xf32>) -> tensor<*xf32> {
  %none = mp.none
  %c = mp.clip %x, %none, %none : (tensor<2x3xf32>, none, none) -> tensor<*xf32>
  %r = mp.relu %c : (tensor<*xf32>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

func.func @dynamic_batch(%x: tensor<?x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{result #0 has type 'tensor<?x3xf32>', which is not a tensor of static shape}}
  %r = mp.relu %x : (tensor<?x3xf32>) -> tensor<?x3xf32>
  // expected-error @+1 {{result #0 has type 'tensor<?x3xf32>', which is not a tensor of static shape}}
  %e = mp.exp %r : (tensor<?x3xf32>) -> tensor<*xf32>
  return %e : tensor<*xf32>
}

// -----

// Every offending result of an op is reported, with its index.
func.func @second_result(%x: tensor<1x1x4x?xf32>) {
  // expected-error @+2 {{result #0 has type 'tensor<1x1x2x?xf32>', which is not a tensor of static shape}}
  // expected-error @+1 {{result #1 has type 'tensor<1x1x2x?xi64>', which is not a tensor of static shape}}
  %p:2 = mp.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x4x?xf32>) -> (tensor<*xf32>, tensor<*xi64>)
  return
}

// -----

// Unranked and unknown results, also those of generic ops and of ops inside
// their regions.
func.func @unranked(%x: tensor<*xf32>, %c: tensor<i1>) {
  // expected-error @+1 {{result #0 has type 'tensor<*xf32>', which is not a tensor of static shape}}
  %r = mp.relu %x : (tensor<*xf32>) -> tensor<*xf32>
  // expected-error @+1 {{result #0 has type '!mp.unknown', which is not a tensor of static shape}}
  %g = mp.onnx_op "com.example" "Op" version 1 (%c) {region_names = ["body"]} subgraphs {
    // expected-error @+1 {{result #0 has type 'tensor<*xf32>', which is not a tensor of static shape}}
    %n = mp.neg %x : (tensor<*xf32>) -> tensor<*xf32>
    mp.yield %n : tensor<*xf32>
  } : (tensor<i1>) -> !mp.unknown
  return
}

// -----

// An error that only shows once the operands are refined is reported at the
// op and fails the pass.
func.func @inference_error(%x: tensor<2x3xf32>, %y: tensor<4x3xf32>) {
  %r = mp.relu %x : (tensor<2x3xf32>) -> tensor<*xf32>
  // expected-error @+1 {{ONNX Add: operand shapes are not broadcastable: tensor<2x3xf32>, tensor<4x3xf32>}}
  %a = mp.add %r, %y : (tensor<*xf32>, tensor<4x3xf32>) -> tensor<*xf32>
  return
}
