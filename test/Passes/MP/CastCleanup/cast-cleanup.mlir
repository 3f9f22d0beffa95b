// mp-cast-cleanup: one cast per (value, type); exact round trips fold, lossy
// ones stay.
// RUN: mp-opt %s --mp-cast-cleanup --split-input-file | FileCheck %s
// RUN: mp-opt %s --mp-cast-cleanup --split-input-file | mp-opt --split-input-file | FileCheck %s

// f16 -> f32 -> f16 is exact: the value itself.
// CHECK-LABEL: func.func @exact_round_trip(
// CHECK-SAME: %[[X:.*]]: tensor<4xf16>)
// CHECK-NOT: mp.cast
// CHECK: return %[[X]]
func.func @exact_round_trip(%x: tensor<4xf16>) -> tensor<4xf16> {
  %a = mp.cast %x {to = 1 : i64} : (tensor<4xf16>) -> tensor<4xf32>
  %b = mp.cast %a {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
  return %b : tensor<4xf16>
}

// -----

// f32 -> f16 -> f32 loses precision: both casts stay.
// CHECK-LABEL: func.func @lossy_round_trip(
// CHECK: %[[A:.*]] = mp.cast %arg0 {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
// CHECK: %[[B:.*]] = mp.cast %[[A]] {to = 1 : i64} : (tensor<4xf16>) -> tensor<4xf32>
// CHECK: return %[[B]]
func.func @lossy_round_trip(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mp.cast %x {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
  %b = mp.cast %a {to = 1 : i64} : (tensor<4xf16>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// Chains through an exact widening shorten to one cast: bf16 -> f32 -> f64
// is bf16 -> f64, f16 -> f32 -> bf16 is f16 -> bf16 (still a rounding cast).
// CHECK-LABEL: func.func @chains(
// CHECK: %[[D:.*]] = mp.cast %arg0 {to = 11 : i64} : (tensor<4xbf16>) -> tensor<4xf64>
// CHECK: %[[B:.*]] = mp.cast %arg1 {to = 16 : i64} : (tensor<4xf16>) -> tensor<4xbf16>
// CHECK: return %[[D]], %[[B]]
func.func @chains(%x: tensor<4xbf16>, %h: tensor<4xf16>) -> (tensor<4xf64>, tensor<4xbf16>) {
  %a = mp.cast %x {to = 1 : i64} : (tensor<4xbf16>) -> tensor<4xf32>
  %b = mp.cast %a {to = 11 : i64} : (tensor<4xf32>) -> tensor<4xf64>
  %c = mp.cast %h {to = 1 : i64} : (tensor<4xf16>) -> tensor<4xf32>
  %d = mp.cast %c {to = 16 : i64} : (tensor<4xf32>) -> tensor<4xbf16>
  return %b, %d : tensor<4xf64>, tensor<4xbf16>
}

// -----

// A cast to the type the value has is the value.
// CHECK-LABEL: func.func @identity(
// CHECK-NOT: mp.cast
func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mp.cast %x {to = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// Two casts of one value to one type: the dominating one serves both, also
// inside a subgraph.
// CHECK-LABEL: func.func @duplicates(
// CHECK-COUNT-1: mp.cast
// CHECK-NOT: mp.cast
func.func @duplicates(%x: tensor<4xf32>, %c: tensor<i1>) -> (tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) {
  %a = mp.cast %x {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
  %b = mp.cast %x {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
  %y = mp.onnx_op "" "If" version 13 (%c) {region_names = ["then_branch", "else_branch"]} subgraphs {
    %d = mp.cast %x {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
    mp.yield %d : tensor<4xf16>
  }, {
    mp.yield %a : tensor<4xf16>
  } : (tensor<i1>) -> tensor<4xf16>
  return %a, %b, %y : tensor<4xf16>, tensor<4xf16>, tensor<4xf16>
}
