// Initializers are named weights: canonicalization must not merge two
// initializers with different names (or doc strings, or input_index, which
// makes one an overridable graph input) just because their values are equal,
// nor an initializer with an mp.constant of the same value.
//
// RUN: mp-opt %s --canonicalize | FileCheck %s
// RUN: mp-opt %s --cse | FileCheck %s

// CHECK-LABEL: func.func @named
// CHECK-DAG: %[[W:.*]] = mp.initializer "w" dense<1.000000e+00> : tensor<2xf32>
// CHECK-DAG: %[[V:.*]] = mp.initializer "v" dense<1.000000e+00> : tensor<2xf32>
// CHECK-DAG: %[[G:.*]] = mp.initializer "graph_input" dense<1.000000e+00> : tensor<2xf32> {input_index = 1 : i64}
// CHECK-DAG: %[[C:.*]] = mp.constant {value = dense<1.000000e+00> : tensor<2xf32>} : () -> tensor<2xf32>
// CHECK: mp.add %[[W]], %[[V]]
// CHECK: mp.add %[[G]], %[[C]]
func.func @named(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %w = mp.initializer "w" dense<1.0> : tensor<2xf32>
  %v = mp.initializer "v" dense<1.0> : tensor<2xf32>
  %g = mp.initializer "graph_input" dense<1.0> : tensor<2xf32> {input_index = 1 : i64}
  %c = mp.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %a = mp.add %w, %v : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %b = mp.add %g, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %a, %b : tensor<2xf32>, tensor<2xf32>
}
