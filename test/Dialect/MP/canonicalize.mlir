// mp ops are pure: unused ones go, identical constants (mp.none) are merged,
// used ones stay. Initializers are not constants to the folder: canonicalize
// leaves even same-name duplicates alone, CSE merges identical ones. (Initializers with
// different names: see canonicalize-initializers.mlir.)
// RUN: mp-opt %s --canonicalize | FileCheck %s
// RUN: mp-opt %s --cse | FileCheck %s --check-prefix=CSE

// CHECK-LABEL: func.func @pure
// CHECK-SAME: (%[[X:.*]]: tensor<2xf32>)
// CHECK-NEXT: %[[NONE:.*]] = mp.none
// CHECK-NEXT: %[[C:.*]] = mp.constant {value_ints = array<i64: 1, 2, 3>} : () -> tensor<3xi64>
// CHECK-NEXT: %[[W:.*]] = mp.initializer "w" dense<1.000000e+00> : tensor<2xf32>
// CHECK-NEXT: %[[W2:.*]] = mp.initializer "w" dense<1.000000e+00> : tensor<2xf32>
// CHECK-NEXT: %[[A:.*]] = mp.clip %[[X]], %[[NONE]], %[[NONE]]
// CHECK-NEXT: %[[B:.*]] = mp.add %[[W]], %[[W2]]
// CHECK-NEXT: return %[[A]], %[[C]], %[[B]]
// CSE-LABEL: func.func @pure
// CSE: %[[NONE:.*]] = mp.none
// CSE-NOT: mp.none
// CSE: %[[W:.*]] = mp.initializer "w"
// CSE-NOT: mp.initializer "w"
// CSE: mp.clip %{{.*}}, %[[NONE]], %[[NONE]]
// CSE: mp.add %[[W]], %[[W]]
func.func @pure(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<3xi64>, tensor<2xf32>) {
  %n1 = mp.none
  %n2 = mp.none
  %c = mp.constant {value_ints = array<i64: 1, 2, 3>} : () -> tensor<3xi64>
  %w = mp.initializer "w" dense<1.0> : tensor<2xf32>
  %w2 = mp.initializer "w" dense<1.0> : tensor<2xf32>
  %unused = mp.initializer "unused" dense<2.0> : tensor<2xf32>
  %dead = mp.relu %x : (tensor<2xf32>) -> tensor<2xf32>
  %a = mp.clip %x, %n1, %n2 : (tensor<2xf32>, none, none) -> tensor<2xf32>
  %b = mp.add %w, %w2 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %a, %c, %b : tensor<2xf32>, tensor<3xi64>, tensor<2xf32>
}

// The generic op is not known to be pure: it stays even when unused.
// CHECK-LABEL: func.func @generic_kept
// CHECK: mp.onnx_op "com.example" "Print" version 1
func.func @generic_kept(%x: tensor<2xf32>) {
  %0 = mp.onnx_op "com.example" "Print" version 1 (%x) : (tensor<2xf32>) -> tensor<2xf32>
  return
}
