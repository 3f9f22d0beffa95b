// Initializers and constants are converted at compile time; values beyond
// f16's range are clamped with one warning per tensor naming it and its
// reader; an initializer only f32 ops read stays f32; bf16 needs no clamping.
// RUN: mp-opt %s --mp-autocast -verify-diagnostics | FileCheck %s
// RUN: mp-opt %s --mp-autocast=target=bf16 | FileCheck %s --check-prefix=BF16

// CHECK-LABEL: func.func @clamp(
// The converted weight takes the original's name (no f32 reader is left).
// CHECK: %[[W:.*]] = mp.initializer "w" dense<[6.550400e+04, -6.550400e+04, 1.000000e+00, 0x7C00]> : tensor<4xf16>
// CHECK-NOT: mp.initializer "w"
// CHECK: mp.matmul %{{.*}}, %[[W]]
// BF16-LABEL: func.func @clamp(
// BF16: mp.initializer "w" dense<[9.984000e+04, -1.996800e+05, 1.000000e+00, 0x7F80]> : tensor<4xbf16>
func.func @clamp(%x: tensor<2x4xf32>) -> tensor<2xf32> {
  // expected-warning @+1 {{mp-autocast: clamped 2 of 4 values of 'w' (read by node 'mm') to the f16 range [-65504, 65504]}}
  %w = mp.initializer "w" dense<[1.0e5, -2.0e5, 1.0, 0x7F800000]> : tensor<4xf32>
  %m = mp.matmul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2xf32> loc("mm")
  return %m : tensor<2xf32>
}


// An initializer read by f32 and f16 ops: the f32 original stays and an f16
// copy is added for the matmul; an initializer only the softmax reads stays
// f32; a Constant node is converted too.
// CHECK-LABEL: func.func @shared(
// CHECK-DAG: %[[W:.*]] = mp.initializer "w" dense<5.000000e-01> : tensor<4x4xf32>
// CHECK-DAG: %[[WH:.*]] = mp.initializer "w_f16" dense<5.000000e-01> : tensor<4x4xf16>
// CHECK-DAG: %[[ONLY:.*]] = mp.initializer "only_f32" dense<2.000000e+00> : tensor<4x4xf32>
// CHECK-DAG: %[[C:.*]] = mp.constant {mp.outputs = ["c"], value = dense<2.500000e-01> : tensor<4x4xf16>}
// CHECK: mp.matmul %{{.*}}, %[[WH]]
// CHECK: mp.add %{{.*}}, %[[W]]
// CHECK: mp.mul %{{.*}}, %[[ONLY]]
func.func @shared(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %w = mp.initializer "w" dense<0.5> : tensor<4x4xf32>
  %only = mp.initializer "only_f32" dense<2.0> : tensor<4x4xf32>
  %c = mp.constant {value = dense<0.25> : tensor<4x4xf32>, mp.outputs = ["c"]} : () -> tensor<4x4xf32>
  %m = mp.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("mm")
  %m2 = mp.matmul %m, %c : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("mm2")
  %s = mp.softmax %x {axis = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("softmax")
  %a = mp.add %s, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("add")
  %e = mp.exp %a : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("exp")
  %p = mp.mul %e, %only : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("mul")
  return %m2, %p, %a : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
