// convert-mp-to-culib: mp.layer_norm_grad (the gradient rule of
// LayerNormalization with f32 statistics) is one culib.layer_norm_grad
// reading (dY, X, scale, Mean, InvStdDev); dBias is written only where it is
// read. Statistics that are not f32 are refused.
// RUN: mp-opt %s -split-input-file -verify-diagnostics --convert-mp-to-culib | FileCheck %s
// RUN: mp-opt %s -split-input-file -verify-diagnostics --convert-mp-to-culib | mp-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @layer_norm_grad(
// CHECK-SAME: %[[DY:[^:]*]]: memref<2x3x8xf32>, %[[X:[^:]*]]: memref<2x3x8xf32>, %[[S:[^:]*]]: memref<8xf32>, %[[M:[^:]*]]: memref<2x3x1xf32>, %[[I:[^:]*]]: memref<2x3x1xf32>)
// CHECK: %[[DX:.*]] = culib.alloc : memref<2x3x8xf32>
// CHECK: %[[DS:.*]] = culib.alloc : memref<8xf32>
// CHECK: %[[DB:.*]] = culib.alloc : memref<8xf32>
// CHECK: culib.layer_norm_grad ins(%[[DY]], %[[X]], %[[S]], %[[M]], %[[I]]) outs(%[[DX]], %[[DS]]) dbias(%[[DB]]) {axis = 2 : i64}
// CHECK: return %[[DX]], %[[DS]], %[[DB]]
// Without a bias: no dbias.
// CHECK-LABEL: func.func @no_bias(
// CHECK: culib.layer_norm_grad ins({{.*}}) outs(%{{.*}}, %{{.*}}) {axis = 1 : i64}
func.func @layer_norm_grad(%dy: tensor<2x3x8xf32>, %x: tensor<2x3x8xf32>, %s: tensor<8xf32>, %m: tensor<2x3x1xf32>, %i: tensor<2x3x1xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %ds, %db = mp.layer_norm_grad %dy, %x, %s, %m, %i {axis = 2 : i64} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx, %ds, %db : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>
}
func.func @no_bias(%dy: tensor<2x3x8xbf16>, %x: tensor<2x3x8xbf16>, %s: tensor<3x8xbf16>, %m: tensor<2x1x1xf32>, %i: tensor<2x1x1xf32>) -> (tensor<2x3x8xbf16>, tensor<3x8xbf16>) {
  %dx, %ds, %db = mp.layer_norm_grad %dy, %x, %s, %m, %i {axis = 1 : i64} : (tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<3x8xbf16>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> (tensor<2x3x8xbf16>, tensor<3x8xbf16>, tensor<3x8xbf16>)
  return %dx, %ds : tensor<2x3x8xbf16>, tensor<3x8xbf16>
}

// -----

func.func @f16_statistics(%dy: tensor<2x8xf32>, %x: tensor<2x8xf32>, %s: tensor<8xf32>, %m: tensor<2x1xf16>, %i: tensor<2x1xf16>) -> tensor<2x8xf32> {
  // expected-error @+1 {{the statistics must be f32, got 'tensor<2x1xf16>'}}
  %dx, %ds, %db = mp.layer_norm_grad %dy, %x, %s, %m, %i {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<2x1xf16>, tensor<2x1xf16>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx : tensor<2x8xf32>
}
