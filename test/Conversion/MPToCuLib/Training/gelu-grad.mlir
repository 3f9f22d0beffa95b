// convert-mp-to-culib: mp.gelu_grad (the gradient rule of mp.gelu) is one
// culib.elementwise, gelu_grad for the exact GELU and gelu_tanh_grad for the
// tanh approximation, reading (dY, X); another `approximate` is refused.
// RUN: mp-opt %s -split-input-file -verify-diagnostics --convert-mp-to-culib | FileCheck %s
// RUN: mp-opt %s -split-input-file -verify-diagnostics --convert-mp-to-culib | mp-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @gelu_grad(
// CHECK-SAME: %[[DY:[^:]*]]: memref<4x8xf32>, %[[X:[^:]*]]: memref<4x8xf32>,
// CHECK-SAME: %[[DYH:[^:]*]]: memref<4x8xbf16>, %[[XH:[^:]*]]: memref<4x8xbf16>)
// CHECK: %[[DX:.*]] = culib.alloc : memref<4x8xf32>
// CHECK: culib.elementwise gelu_grad ins(%[[DY]], %[[X]]) outs(%[[DX]]) : memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>
// CHECK: %[[DXT:.*]] = culib.alloc : memref<4x8xbf16>
// CHECK: culib.elementwise gelu_tanh_grad ins(%[[DYH]], %[[XH]]) outs(%[[DXT]]) : memref<4x8xbf16>, memref<4x8xbf16>, memref<4x8xbf16>
// CHECK: return %[[DX]], %[[DXT]]
func.func @gelu_grad(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %dyh: tensor<4x8xbf16>, %xh: tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %dx = mp.gelu_grad %dy, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dxt = mp.gelu_grad %dyh, %xh {approximate = "tanh"} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %dx, %dxt : tensor<4x8xf32>, tensor<4x8xbf16>
}

// -----

func.func @unknown_form(%dy: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{approximate must be "none" or "tanh", not "sigmoid"}}
  %dx = mp.gelu_grad %dy, %x {approximate = "sigmoid"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %dx : tensor<4xf32>
}
