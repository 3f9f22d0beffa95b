// culib-fuse-norms: a decomposed layer norm (mean, deviation, its square,
// mean, + eps, sqrt, divide, scale, bias) becomes one culib.layer_norm
// writing the chain's output, and a decomposed RMS norm (square, mean,
// + eps, sqrt, reciprocal and multiply or divide, scale) one
// culib.rms_norm, and GroupNorm as torch exports it (reshape, instance
// norm with unit scale and zero bias, reshape back, scale, bias) one
// culib.group_norm, and a softmax of a scaled or masked input one
// culib.scaled_softmax; their intermediates and constants go.
// RUN: mp-opt %s --culib-fuse-norms | FileCheck %s
// Round trip: the output parses and prints the same.
// RUN: mp-opt %s --culib-fuse-norms | mp-opt | FileCheck %s
// RUN: mp-opt %s --culib-fuse-norms=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// CHECK-LABEL: func.func @layer_norm
// CHECK-DAG: %[[S:.*]] = culib.weight "scale"
// CHECK-DAG: %[[B:.*]] = culib.weight "bias"
// CHECK: %[[Y:.*]] = culib.alloc : memref<2x3x8xf32>
// CHECK-NEXT: culib.layer_norm ins(%arg0, %[[S]]) bias(%[[B]]) outs(%[[Y]]) {axis = 2 : i64, epsilon = 9.99999974E-6 : f32}
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: culib.weight "two"
// REPORT: remark: culib-fuse-norms: 1 decomposed layer norm(s), 0 RMS norm(s), 0 group norm(s) and 0 scaled or masked softmax(es) made one call each, 0 batch norm(s) before an elementwise function made a scale and shift; 864 intermediate bytes no longer written
func.func @layer_norm(%x: memref<2x3x8xf32>) -> memref<2x3x8xf32> {
  %two = culib.weight "two" dense<2.0> : tensor<f32> : memref<f32>
  %eps = culib.weight "eps" dense<1.0e-5> : tensor<f32> : memref<f32>
  %scale = culib.weight "scale" dense<1.5> : tensor<8xf32> : memref<8xf32>
  %bias = culib.weight "bias" dense<0.5> : tensor<8xf32> : memref<8xf32>
  %m = culib.alloc : memref<2x3x1xf32>
  culib.reduce mean ins(%x) outs(%m) {axes = array<i64: 2>, compute_type = f32} : memref<2x3x8xf32>, memref<2x3x1xf32>
  %d = culib.alloc : memref<2x3x8xf32>
  culib.elementwise sub ins(%x, %m) outs(%d) : memref<2x3x8xf32>, memref<2x3x1xf32>, memref<2x3x8xf32>
  %p = culib.alloc : memref<2x3x8xf32>
  culib.elementwise pow ins(%d, %two) outs(%p) : memref<2x3x8xf32>, memref<f32>, memref<2x3x8xf32>
  %v = culib.alloc : memref<2x3x1xf32>
  culib.reduce mean ins(%p) outs(%v) {axes = array<i64: 2>, compute_type = f32} : memref<2x3x8xf32>, memref<2x3x1xf32>
  %ve = culib.alloc : memref<2x3x1xf32>
  culib.elementwise add ins(%v, %eps) outs(%ve) : memref<2x3x1xf32>, memref<f32>, memref<2x3x1xf32>
  %s = culib.alloc : memref<2x3x1xf32>
  culib.elementwise sqrt ins(%ve) outs(%s) : memref<2x3x1xf32>, memref<2x3x1xf32>
  %n = culib.alloc : memref<2x3x8xf32>
  culib.elementwise div ins(%d, %s) outs(%n) : memref<2x3x8xf32>, memref<2x3x1xf32>, memref<2x3x8xf32>
  %sc = culib.alloc : memref<2x3x8xf32>
  culib.elementwise mul ins(%n, %scale) outs(%sc) : memref<2x3x8xf32>, memref<8xf32>, memref<2x3x8xf32>
  %y = culib.alloc : memref<2x3x8xf32>
  culib.elementwise add ins(%sc, %bias) outs(%y) : memref<2x3x8xf32>, memref<8xf32>, memref<2x3x8xf32>
  return %y : memref<2x3x8xf32>
}

// Over the last two dims, the square as d * d, scale first in the mul and
// no bias: the call has none.
// CHECK-LABEL: func.func @two_dims_no_bias
// CHECK: culib.layer_norm ins(%arg0, %{{.*}}) outs(%{{.*}}) {axis = 1 : i64, epsilon = 9.99450683E-4 : f32} : memref<4x3x8xbf16>, memref<3x8xbf16>, memref<4x3x8xbf16>
// CHECK-NOT: culib.elementwise
// CHECK-NOT: culib.reduce
// REPORT: remark: culib-fuse-norms: 1 decomposed layer norm(s)
func.func @two_dims_no_bias(%x: memref<4x3x8xbf16>) -> memref<4x3x8xbf16> {
  %eps = culib.weight "eps" dense<1.0e-3> : tensor<1xbf16> : memref<1xbf16>
  %scale = culib.weight "scale" dense<1.5> : tensor<3x8xbf16> : memref<3x8xbf16>
  %m = culib.alloc : memref<4x1x1xbf16>
  culib.reduce mean ins(%x) outs(%m) {axes = array<i64: 1, 2>, compute_type = f32} : memref<4x3x8xbf16>, memref<4x1x1xbf16>
  %d = culib.alloc : memref<4x3x8xbf16>
  culib.elementwise sub ins(%x, %m) outs(%d) : memref<4x3x8xbf16>, memref<4x1x1xbf16>, memref<4x3x8xbf16>
  %p = culib.alloc : memref<4x3x8xbf16>
  culib.elementwise mul ins(%d, %d) outs(%p) : memref<4x3x8xbf16>, memref<4x3x8xbf16>, memref<4x3x8xbf16>
  %v = culib.alloc : memref<4x1x1xbf16>
  culib.reduce mean ins(%p) outs(%v) {axes = array<i64: 2, 1>, compute_type = f32} : memref<4x3x8xbf16>, memref<4x1x1xbf16>
  %ve = culib.alloc : memref<4x1x1xbf16>
  culib.elementwise add ins(%eps, %v) outs(%ve) : memref<1xbf16>, memref<4x1x1xbf16>, memref<4x1x1xbf16>
  %s = culib.alloc : memref<4x1x1xbf16>
  culib.elementwise sqrt ins(%ve) outs(%s) : memref<4x1x1xbf16>, memref<4x1x1xbf16>
  %n = culib.alloc : memref<4x3x8xbf16>
  culib.elementwise div ins(%d, %s) outs(%n) : memref<4x3x8xbf16>, memref<4x1x1xbf16>, memref<4x3x8xbf16>
  %y = culib.alloc : memref<4x3x8xbf16>
  culib.elementwise mul ins(%scale, %n) outs(%y) : memref<3x8xbf16>, memref<4x3x8xbf16>, memref<4x3x8xbf16>
  return %y : memref<4x3x8xbf16>
}

// Not fusable: the deviation is read elsewhere too (a training step keeps
// it), the mean is over a leading dim, eps is not a constant.
// CHECK-LABEL: func.func @not_fusable
// CHECK-NOT: culib.layer_norm
// CHECK-LABEL: func.func @eps_not_constant
// CHECK-NOT: culib.layer_norm
// REPORT: remark: culib-fuse-norms: 0 decomposed layer norm(s)
// REPORT: remark: culib-fuse-norms: 0 decomposed layer norm(s)
func.func @not_fusable(%x: memref<2x8xf32>) -> (memref<2x8xf32>, memref<2x8xf32>, memref<2x8xf32>) {
  %two = culib.weight "two" dense<2.0> : tensor<f32> : memref<f32>
  %eps = culib.weight "eps" dense<1.0e-5> : tensor<f32> : memref<f32>
  %scale = culib.weight "scale" dense<1.5> : tensor<8xf32> : memref<8xf32>
  %m = culib.alloc : memref<2x1xf32>
  culib.reduce mean ins(%x) outs(%m) {axes = array<i64: 1>, compute_type = f32} : memref<2x8xf32>, memref<2x1xf32>
  %d = culib.alloc : memref<2x8xf32>
  culib.elementwise sub ins(%x, %m) outs(%d) : memref<2x8xf32>, memref<2x1xf32>, memref<2x8xf32>
  %p = culib.alloc : memref<2x8xf32>
  culib.elementwise pow ins(%d, %two) outs(%p) : memref<2x8xf32>, memref<f32>, memref<2x8xf32>
  %v = culib.alloc : memref<2x1xf32>
  culib.reduce mean ins(%p) outs(%v) {axes = array<i64: 1>, compute_type = f32} : memref<2x8xf32>, memref<2x1xf32>
  %ve = culib.alloc : memref<2x1xf32>
  culib.elementwise add ins(%v, %eps) outs(%ve) : memref<2x1xf32>, memref<f32>, memref<2x1xf32>
  %s = culib.alloc : memref<2x1xf32>
  culib.elementwise sqrt ins(%ve) outs(%s) : memref<2x1xf32>, memref<2x1xf32>
  %n = culib.alloc : memref<2x8xf32>
  culib.elementwise div ins(%d, %s) outs(%n) : memref<2x8xf32>, memref<2x1xf32>, memref<2x8xf32>
  %y = culib.alloc : memref<2x8xf32>
  culib.elementwise mul ins(%n, %scale) outs(%y) : memref<2x8xf32>, memref<8xf32>, memref<2x8xf32>
  // A second chain, over dim 0.
  %m0 = culib.alloc : memref<1x8xf32>
  culib.reduce mean ins(%x) outs(%m0) {axes = array<i64: 0>, compute_type = f32} : memref<2x8xf32>, memref<1x8xf32>
  %d0 = culib.alloc : memref<2x8xf32>
  culib.elementwise sub ins(%x, %m0) outs(%d0) : memref<2x8xf32>, memref<1x8xf32>, memref<2x8xf32>
  %p0 = culib.alloc : memref<2x8xf32>
  culib.elementwise mul ins(%d0, %d0) outs(%p0) : memref<2x8xf32>, memref<2x8xf32>, memref<2x8xf32>
  %v0 = culib.alloc : memref<1x8xf32>
  culib.reduce mean ins(%p0) outs(%v0) {axes = array<i64: 0>, compute_type = f32} : memref<2x8xf32>, memref<1x8xf32>
  %ve0 = culib.alloc : memref<1x8xf32>
  culib.elementwise add ins(%v0, %eps) outs(%ve0) : memref<1x8xf32>, memref<f32>, memref<1x8xf32>
  %s0 = culib.alloc : memref<1x8xf32>
  culib.elementwise sqrt ins(%ve0) outs(%s0) : memref<1x8xf32>, memref<1x8xf32>
  %n0 = culib.alloc : memref<2x8xf32>
  culib.elementwise div ins(%d0, %s0) outs(%n0) : memref<2x8xf32>, memref<1x8xf32>, memref<2x8xf32>
  %y0 = culib.alloc : memref<2x8xf32>
  culib.elementwise mul ins(%n0, %scale) outs(%y0) : memref<2x8xf32>, memref<8xf32>, memref<2x8xf32>
  return %y, %d, %y0 : memref<2x8xf32>, memref<2x8xf32>, memref<2x8xf32>
}

func.func @eps_not_constant(%x: memref<2x8xf32>, %eps: memref<f32>) -> memref<2x8xf32> {
  %scale = culib.weight "scale" dense<1.5> : tensor<8xf32> : memref<8xf32>
  %m = culib.alloc : memref<2x1xf32>
  culib.reduce mean ins(%x) outs(%m) {axes = array<i64: 1>, compute_type = f32} : memref<2x8xf32>, memref<2x1xf32>
  %d = culib.alloc : memref<2x8xf32>
  culib.elementwise sub ins(%x, %m) outs(%d) : memref<2x8xf32>, memref<2x1xf32>, memref<2x8xf32>
  %p = culib.alloc : memref<2x8xf32>
  culib.elementwise mul ins(%d, %d) outs(%p) : memref<2x8xf32>, memref<2x8xf32>, memref<2x8xf32>
  %v = culib.alloc : memref<2x1xf32>
  culib.reduce mean ins(%p) outs(%v) {axes = array<i64: 1>, compute_type = f32} : memref<2x8xf32>, memref<2x1xf32>
  %ve = culib.alloc : memref<2x1xf32>
  culib.elementwise add ins(%v, %eps) outs(%ve) : memref<2x1xf32>, memref<f32>, memref<2x1xf32>
  %s = culib.alloc : memref<2x1xf32>
  culib.elementwise sqrt ins(%ve) outs(%s) : memref<2x1xf32>, memref<2x1xf32>
  %n = culib.alloc : memref<2x8xf32>
  culib.elementwise div ins(%d, %s) outs(%n) : memref<2x8xf32>, memref<2x1xf32>, memref<2x8xf32>
  %y = culib.alloc : memref<2x8xf32>
  culib.elementwise mul ins(%n, %scale) outs(%y) : memref<2x8xf32>, memref<8xf32>, memref<2x8xf32>
  return %y : memref<2x8xf32>
}

// RMSNorm as torch exports it: x * (1 / sqrt(mean(x^2) + eps)), then the
// weight times that: one culib.rms_norm; the constants go.
// CHECK-LABEL: func.func @rms_norm
// CHECK-DAG: %[[S:.*]] = culib.weight "weight"
// CHECK: %[[Y:.*]] = culib.alloc : memref<2x3x8xf32>
// CHECK-NEXT: culib.rms_norm ins(%arg0, %[[S]]) outs(%[[Y]]) {axis = 2 : i64, epsilon = 9.99999997E-7 : f32} : memref<2x3x8xf32>, memref<8xf32>, memref<2x3x8xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: culib.weight "two"
// REPORT: remark: culib-fuse-norms: 0 decomposed layer norm(s), 1 RMS norm(s), 0 group norm(s) and 0 scaled or masked softmax(es) made one call each, 0 batch norm(s) before an elementwise function made a scale and shift; 480 intermediate bytes no longer written
func.func @rms_norm(%x: memref<2x3x8xf32>) -> memref<2x3x8xf32> {
  %two = culib.weight "two" dense<2.0> : tensor<f32> : memref<f32>
  %eps = culib.weight "eps" dense<1.0e-6> : tensor<f32> : memref<f32>
  %weight = culib.weight "weight" dense<1.5> : tensor<8xf32> : memref<8xf32>
  %p = culib.alloc : memref<2x3x8xf32>
  culib.elementwise pow ins(%x, %two) outs(%p) : memref<2x3x8xf32>, memref<f32>, memref<2x3x8xf32>
  %v = culib.alloc : memref<2x3x1xf32>
  culib.reduce mean ins(%p) outs(%v) {axes = array<i64: 2>, compute_type = f32} : memref<2x3x8xf32>, memref<2x3x1xf32>
  %ve = culib.alloc : memref<2x3x1xf32>
  culib.elementwise add ins(%v, %eps) outs(%ve) : memref<2x3x1xf32>, memref<f32>, memref<2x3x1xf32>
  %s = culib.alloc : memref<2x3x1xf32>
  culib.elementwise sqrt ins(%ve) outs(%s) : memref<2x3x1xf32>, memref<2x3x1xf32>
  %r = culib.alloc : memref<2x3x1xf32>
  culib.elementwise reciprocal ins(%s) outs(%r) : memref<2x3x1xf32>, memref<2x3x1xf32>
  %n = culib.alloc : memref<2x3x8xf32>
  culib.elementwise mul ins(%x, %r) outs(%n) : memref<2x3x8xf32>, memref<2x3x1xf32>, memref<2x3x8xf32>
  %y = culib.alloc : memref<2x3x8xf32>
  culib.elementwise mul ins(%weight, %n) outs(%y) : memref<8xf32>, memref<2x3x8xf32>, memref<2x3x8xf32>
  return %y : memref<2x3x8xf32>
}

// The square as x * x, a division by the root, the scale second, f16.
// CHECK-LABEL: func.func @rms_norm_div
// CHECK: culib.rms_norm ins(%arg0, %{{.*}}) outs(%{{.*}}) {axis = 1 : i64, epsilon = {{.*}} : f32} : memref<4x16xf16>, memref<16xf16>, memref<4x16xf16>
// CHECK-NOT: culib.elementwise
// CHECK-NOT: culib.reduce
// REPORT: remark: culib-fuse-norms: 0 decomposed layer norm(s), 1 RMS norm(s)
func.func @rms_norm_div(%x: memref<4x16xf16>) -> memref<4x16xf16> {
  %eps = culib.weight "eps" dense<1.0e-5> : tensor<1xf16> : memref<1xf16>
  %weight = culib.weight "weight" dense<0.5> : tensor<16xf16> : memref<16xf16>
  %p = culib.alloc : memref<4x16xf16>
  culib.elementwise mul ins(%x, %x) outs(%p) : memref<4x16xf16>, memref<4x16xf16>, memref<4x16xf16>
  %v = culib.alloc : memref<4x1xf16>
  culib.reduce mean ins(%p) outs(%v) {axes = array<i64: 1>, compute_type = f32} : memref<4x16xf16>, memref<4x1xf16>
  %ve = culib.alloc : memref<4x1xf16>
  culib.elementwise add ins(%eps, %v) outs(%ve) : memref<1xf16>, memref<4x1xf16>, memref<4x1xf16>
  %s = culib.alloc : memref<4x1xf16>
  culib.elementwise sqrt ins(%ve) outs(%s) : memref<4x1xf16>, memref<4x1xf16>
  %n = culib.alloc : memref<4x16xf16>
  culib.elementwise div ins(%x, %s) outs(%n) : memref<4x16xf16>, memref<4x1xf16>, memref<4x16xf16>
  %y = culib.alloc : memref<4x16xf16>
  culib.elementwise mul ins(%n, %weight) outs(%y) : memref<4x16xf16>, memref<16xf16>, memref<4x16xf16>
  return %y : memref<4x16xf16>
}

// Not fusable: the root mean square read elsewhere too (a training step
// keeps it for the gradient), and a root of something else than x's
// squares.
// CHECK-LABEL: func.func @rms_not_fusable
// CHECK-NOT: culib.rms_norm
// CHECK: return
// REPORT: remark: culib-fuse-norms: 0 decomposed layer norm(s), 0 RMS norm(s)
func.func @rms_not_fusable(%x: memref<4x16xf32>, %z: memref<4x16xf32>) -> (memref<4x16xf32>, memref<4x1xf32>, memref<4x16xf32>) {
  %eps = culib.weight "eps" dense<1.0e-5> : tensor<1xf32> : memref<1xf32>
  %weight = culib.weight "weight" dense<0.5> : tensor<16xf32> : memref<16xf32>
  %p = culib.alloc : memref<4x16xf32>
  culib.elementwise mul ins(%x, %x) outs(%p) : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>
  %v = culib.alloc : memref<4x1xf32>
  culib.reduce mean ins(%p) outs(%v) {axes = array<i64: 1>, compute_type = f32} : memref<4x16xf32>, memref<4x1xf32>
  %ve = culib.alloc : memref<4x1xf32>
  culib.elementwise add ins(%eps, %v) outs(%ve) : memref<1xf32>, memref<4x1xf32>, memref<4x1xf32>
  %s = culib.alloc : memref<4x1xf32>
  culib.elementwise sqrt ins(%ve) outs(%s) : memref<4x1xf32>, memref<4x1xf32>
  %n = culib.alloc : memref<4x16xf32>
  culib.elementwise div ins(%x, %s) outs(%n) : memref<4x16xf32>, memref<4x1xf32>, memref<4x16xf32>
  %y = culib.alloc : memref<4x16xf32>
  culib.elementwise mul ins(%n, %weight) outs(%y) : memref<4x16xf32>, memref<16xf32>, memref<4x16xf32>
  %p2 = culib.alloc : memref<4x16xf32>
  culib.elementwise mul ins(%z, %z) outs(%p2) : memref<4x16xf32>, memref<4x16xf32>, memref<4x16xf32>
  %v2 = culib.alloc : memref<4x1xf32>
  culib.reduce mean ins(%p2) outs(%v2) {axes = array<i64: 1>, compute_type = f32} : memref<4x16xf32>, memref<4x1xf32>
  %ve2 = culib.alloc : memref<4x1xf32>
  culib.elementwise add ins(%eps, %v2) outs(%ve2) : memref<1xf32>, memref<4x1xf32>, memref<4x1xf32>
  %s2 = culib.alloc : memref<4x1xf32>
  culib.elementwise sqrt ins(%ve2) outs(%s2) : memref<4x1xf32>, memref<4x1xf32>
  %n2 = culib.alloc : memref<4x16xf32>
  culib.elementwise div ins(%x, %s2) outs(%n2) : memref<4x16xf32>, memref<4x1xf32>, memref<4x16xf32>
  %y2 = culib.alloc : memref<4x16xf32>
  culib.elementwise mul ins(%n2, %weight) outs(%y2) : memref<4x16xf32>, memref<16xf32>, memref<4x16xf32>
  return %y, %v, %y2 : memref<4x16xf32>, memref<4x1xf32>, memref<4x16xf32>
}

// GroupNorm as torch exports it: reshape to [N, G, -1], an instance norm
// with unit scale and zero bias, reshape back, the channels' scale and
// bias: one culib.group_norm; the instance norm's constants go.
// CHECK-LABEL: func.func @group_norm
// CHECK-DAG: %[[S:.*]] = culib.weight "scale"
// CHECK-DAG: %[[B:.*]] = culib.weight "bias"
// CHECK: %[[Y:.*]] = culib.alloc : memref<2x8x4x4xf16>
// CHECK-NEXT: culib.group_norm ins(%arg0, %[[S]]) bias(%[[B]]) outs(%[[Y]]) {epsilon = 9.99999974E-6 : f32, groups = 2 : i64} : memref<2x8x4x4xf16>, memref<8x1x1xf16>, memref<8x1x1xf16>, memref<2x8x4x4xf16>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: culib.weight "ones"
// REPORT: remark: culib-fuse-norms: 0 decomposed layer norm(s), 0 RMS norm(s), 1 group norm(s) and 0 scaled or masked softmax(es) made one call each, 0 batch norm(s) before an elementwise function made a scale and shift; 2048 intermediate bytes no longer written
func.func @group_norm(%x: memref<2x8x4x4xf16>) -> memref<2x8x4x4xf16> {
  %ones = culib.weight "ones" dense<1.0> : tensor<2xf16> : memref<2xf16>
  %zeros = culib.weight "zeros" dense<0.0> : tensor<2xf16> : memref<2xf16>
  %scale = culib.weight "scale" dense<1.5> : tensor<8x1x1xf16> : memref<8x1x1xf16>
  %bias = culib.weight "bias" dense<0.5> : tensor<8x1x1xf16> : memref<8x1x1xf16>
  %r = culib.alloc : memref<2x2x64xf16>
  culib.copy ins(%x) outs(%r) : memref<2x8x4x4xf16>, memref<2x2x64xf16>
  %n = culib.alloc : memref<2x2x64xf16>
  culib.instance_norm ins(%r, %ones, %zeros) outs(%n) {epsilon = 1.0e-5 : f32} : memref<2x2x64xf16>, memref<2xf16>, memref<2xf16>, memref<2x2x64xf16>
  %n4 = culib.alloc : memref<2x8x4x4xf16>
  culib.copy ins(%n) outs(%n4) : memref<2x2x64xf16>, memref<2x8x4x4xf16>
  %m = culib.alloc : memref<2x8x4x4xf16>
  culib.elementwise mul ins(%n4, %scale) outs(%m) : memref<2x8x4x4xf16>, memref<8x1x1xf16>, memref<2x8x4x4xf16>
  %y = culib.alloc : memref<2x8x4x4xf16>
  culib.elementwise add ins(%bias, %m) outs(%y) : memref<8x1x1xf16>, memref<2x8x4x4xf16>, memref<2x8x4x4xf16>
  return %y : memref<2x8x4x4xf16>
}

// Kept: an instance norm with a scale other than ones (not a plain
// grouped norm), and a scale per element rather than per channel.
// CHECK-LABEL: func.func @group_norm_kept
// CHECK-NOT: culib.group_norm
// CHECK: return
// REPORT: remark: culib-fuse-norms: 0 decomposed layer norm(s), 0 RMS norm(s), 0 group norm(s)
func.func @group_norm_kept(%x: memref<2x8x4x4xf32>) -> (memref<2x8x4x4xf32>, memref<2x8x4x4xf32>) {
  %twos = culib.weight "twos" dense<2.0> : tensor<2xf32> : memref<2xf32>
  %ones = culib.weight "ones" dense<1.0> : tensor<2xf32> : memref<2xf32>
  %zeros = culib.weight "zeros" dense<0.0> : tensor<2xf32> : memref<2xf32>
  %scale = culib.weight "scale" dense<1.5> : tensor<8x1x1xf32> : memref<8x1x1xf32>
  %wide = culib.weight "wide" dense<1.5> : tensor<8x4x4xf32> : memref<8x4x4xf32>
  %r = culib.alloc : memref<2x2x64xf32>
  culib.copy ins(%x) outs(%r) : memref<2x8x4x4xf32>, memref<2x2x64xf32>
  %n = culib.alloc : memref<2x2x64xf32>
  culib.instance_norm ins(%r, %twos, %zeros) outs(%n) {epsilon = 1.0e-5 : f32} : memref<2x2x64xf32>, memref<2xf32>, memref<2xf32>, memref<2x2x64xf32>
  %n4 = culib.alloc : memref<2x8x4x4xf32>
  culib.copy ins(%n) outs(%n4) : memref<2x2x64xf32>, memref<2x8x4x4xf32>
  %y = culib.alloc : memref<2x8x4x4xf32>
  culib.elementwise mul ins(%n4, %scale) outs(%y) : memref<2x8x4x4xf32>, memref<8x1x1xf32>, memref<2x8x4x4xf32>
  %r2 = culib.alloc : memref<2x2x64xf32>
  culib.copy ins(%x) outs(%r2) : memref<2x8x4x4xf32>, memref<2x2x64xf32>
  %n2 = culib.alloc : memref<2x2x64xf32>
  culib.instance_norm ins(%r2, %ones, %zeros) outs(%n2) {epsilon = 1.0e-5 : f32} : memref<2x2x64xf32>, memref<2xf32>, memref<2xf32>, memref<2x2x64xf32>
  %n24 = culib.alloc : memref<2x8x4x4xf32>
  culib.copy ins(%n2) outs(%n24) : memref<2x2x64xf32>, memref<2x8x4x4xf32>
  %y2 = culib.alloc : memref<2x8x4x4xf32>
  culib.elementwise mul ins(%n24, %wide) outs(%y2) : memref<2x8x4x4xf32>, memref<8x4x4xf32>, memref<2x8x4x4xf32>
  return %y, %y2 : memref<2x8x4x4xf32>, memref<2x8x4x4xf32>
}

// A softmax over the last dim of scores scaled by a constant and plus a
// mask (attention outside a fused attention), of scores divided by a
// temperature, and of scores plus a mask: one culib.scaled_softmax each.
// CHECK-LABEL: func.func @scaled_softmax
// CHECK: culib.scaled_softmax ins(%arg0) mask(%arg1) outs(%{{.*}}) {scale = 1.250000e-01 : f32} : memref<2x4x6xf16>, memref<2x1x6xf16>, memref<2x4x6xf16>
// CHECK: culib.scaled_softmax ins(%arg0) outs(%{{.*}}) {scale = 5.000000e-01 : f32} : memref<2x4x6xf16>, memref<2x4x6xf16>
// CHECK: culib.scaled_softmax ins(%arg0) mask(%arg1) outs(%{{.*}}) : memref<2x4x6xf16>, memref<2x1x6xf16>, memref<2x4x6xf16>
// CHECK-NOT: culib.elementwise
// CHECK-NOT: culib.softmax
// CHECK-NOT: culib.weight
// REPORT: remark: culib-fuse-norms: 0 decomposed layer norm(s), 0 RMS norm(s), 0 group norm(s) and 3 scaled or masked softmax(es) made one call each, 0 batch norm(s) before an elementwise function made a scale and shift; 384 intermediate bytes no longer written
func.func @scaled_softmax(%x: memref<2x4x6xf16>, %mask: memref<2x1x6xf16>) -> (memref<2x4x6xf16>, memref<2x4x6xf16>, memref<2x4x6xf16>) {
  %eighth = culib.weight "eighth" dense<0.125> : tensor<f16> : memref<f16>
  %two = culib.weight "two" dense<2.0> : tensor<1xf16> : memref<1xf16>
  %s = culib.alloc : memref<2x4x6xf16>
  culib.elementwise mul ins(%eighth, %x) outs(%s) : memref<f16>, memref<2x4x6xf16>, memref<2x4x6xf16>
  %m = culib.alloc : memref<2x4x6xf16>
  culib.elementwise add ins(%s, %mask) outs(%m) : memref<2x4x6xf16>, memref<2x1x6xf16>, memref<2x4x6xf16>
  %y = culib.alloc : memref<2x4x6xf16>
  culib.softmax ins(%m) outs(%y) {axis = 2 : i64} : memref<2x4x6xf16>, memref<2x4x6xf16>
  %t = culib.alloc : memref<2x4x6xf16>
  culib.elementwise div ins(%x, %two) outs(%t) : memref<2x4x6xf16>, memref<1xf16>, memref<2x4x6xf16>
  %y2 = culib.alloc : memref<2x4x6xf16>
  culib.softmax ins(%t) outs(%y2) {axis = -1 : i64} : memref<2x4x6xf16>, memref<2x4x6xf16>
  %a = culib.alloc : memref<2x4x6xf16>
  culib.elementwise add ins(%mask, %x) outs(%a) : memref<2x1x6xf16>, memref<2x4x6xf16>, memref<2x4x6xf16>
  %y3 = culib.alloc : memref<2x4x6xf16>
  culib.softmax ins(%a) outs(%y3) {axis = 2 : i64} : memref<2x4x6xf16>, memref<2x4x6xf16>
  return %y, %y2, %y3 : memref<2x4x6xf16>, memref<2x4x6xf16>, memref<2x4x6xf16>
}

// Kept: a softmax over another dim than the last, a log-softmax, a
// scaled input read by another call too, and a division by 3 (its inverse
// would be rounded).
// CHECK-LABEL: func.func @scaled_softmax_kept
// CHECK-NOT: culib.scaled_softmax
// CHECK: return
// REPORT: remark: culib-fuse-norms: 0 decomposed layer norm(s), 0 RMS norm(s), 0 group norm(s) and 0 scaled or masked softmax(es)
func.func @scaled_softmax_kept(%x: memref<2x4x6xf32>) -> (memref<2x4x6xf32>, memref<2x4x6xf32>, memref<2x4x6xf32>, memref<2x4x6xf32>, memref<2x4x6xf32>) {
  %half = culib.weight "half" dense<0.5> : tensor<1xf32> : memref<1xf32>
  %s = culib.alloc : memref<2x4x6xf32>
  culib.elementwise mul ins(%x, %half) outs(%s) : memref<2x4x6xf32>, memref<1xf32>, memref<2x4x6xf32>
  %y = culib.alloc : memref<2x4x6xf32>
  culib.softmax ins(%s) outs(%y) {axis = 1 : i64} : memref<2x4x6xf32>, memref<2x4x6xf32>
  %s2 = culib.alloc : memref<2x4x6xf32>
  culib.elementwise mul ins(%x, %half) outs(%s2) : memref<2x4x6xf32>, memref<1xf32>, memref<2x4x6xf32>
  %y2 = culib.alloc : memref<2x4x6xf32>
  culib.softmax ins(%s2) outs(%y2) {axis = 2 : i64, log = true} : memref<2x4x6xf32>, memref<2x4x6xf32>
  %s3 = culib.alloc : memref<2x4x6xf32>
  culib.elementwise mul ins(%x, %half) outs(%s3) : memref<2x4x6xf32>, memref<1xf32>, memref<2x4x6xf32>
  %y3 = culib.alloc : memref<2x4x6xf32>
  culib.softmax ins(%s3) outs(%y3) {axis = 2 : i64} : memref<2x4x6xf32>, memref<2x4x6xf32>
  %three = culib.weight "three" dense<3.0> : tensor<1xf32> : memref<1xf32>
  %s4 = culib.alloc : memref<2x4x6xf32>
  culib.elementwise div ins(%x, %three) outs(%s4) : memref<2x4x6xf32>, memref<1xf32>, memref<2x4x6xf32>
  %y4 = culib.alloc : memref<2x4x6xf32>
  culib.softmax ins(%s4) outs(%y4) {axis = 2 : i64} : memref<2x4x6xf32>, memref<2x4x6xf32>
  return %y, %y2, %y3, %s3, %y4 : memref<2x4x6xf32>, memref<2x4x6xf32>, memref<2x4x6xf32>, memref<2x4x6xf32>, memref<2x4x6xf32>
}

// A batch norm in inference before an elementwise function (a ReLU)
// becomes its per-channel scale and shift: two programs over the weights
// (run at load), a mul and an add that culib-fuse-elementwise then fuses
// with the ReLU. Channels last: [C] parameters broadcast over the last dim.
// CHECK-LABEL: func.func @batch_norm_relu
// CHECK: %[[EPS:.*]] = culib.weight "{{.*}}.epsilon" dense<9.99999974E-6> : tensor<f32> : memref<f32>
// CHECK: %[[S:.*]] = culib.alloc : memref<4xf32>
// CHECK: culib.fused_elementwise "add(x0, x1); sqrt(t0); div(x2, t1)" ins(%{{.*}}, %[[EPS]], %{{.*}}) outs(%[[S]])
// CHECK: %[[T:.*]] = culib.alloc : memref<4xf32>
// CHECK: culib.fused_elementwise "mul(x0, x1); sub(x2, t0)" ins(%{{.*}}, %[[S]], %{{.*}}) outs(%[[T]])
// CHECK: culib.elementwise mul ins(%arg0, %[[S]]) outs(%[[XS:.*]]) :
// CHECK: culib.elementwise add ins(%[[XS]], %[[T]]) outs(%[[BN:.*]]) :
// CHECK: culib.elementwise relu ins(%[[BN]])
// CHECK-NOT: culib.batch_norm_inference
// CHECK: return
// Channels first: the parameters are viewed as [C, 1, 1].
// CHECK-LABEL: func.func @batch_norm_nchw
// CHECK: culib.view %{{.*}} : memref<4xf32> to memref<4x1x1xf32>
// CHECK: culib.elementwise mul ins(%arg0, %{{.*}}) outs(%{{.*}}) : memref<1x4x2x2xf32>, memref<4x1x1xf32>, memref<1x4x2x2xf32>
// CHECK-NOT: culib.batch_norm_inference
// CHECK: return
// A 16-bit x: cast to f32 for the mul and the add (f32 s and t), the sum
// cast back to y's type; culib-fuse-elementwise makes the casts, the mul,
// the add and the ReLU one program.
// RUN: mp-opt %s --culib-fuse-norms --culib-fuse-elementwise | FileCheck %s --check-prefix=FUSED
// FUSED-LABEL: func.func @batch_norm_relu_bf16
// FUSED: culib.fused_elementwise "mul(x0, x1); add(t0, x2); relu(t1)" ins(%arg0, %{{.*}}, %{{.*}}) outs(%{{.*}}) : memref<1x2x2x4xbf16>, memref<4xf32>, memref<4xf32>, memref<1x2x2x4xbf16>
// FUSED-NOT: culib.cast
// FUSED: return
// CHECK-LABEL: func.func @batch_norm_relu_bf16
// CHECK: culib.cast ins(%arg0) outs(%[[XF:.*]]) : memref<1x2x2x4xbf16>, memref<1x2x2x4xf32>
// CHECK: culib.elementwise mul ins(%[[XF]], %{{.*}}) outs(%[[XS:.*]]) : memref<1x2x2x4xf32>, memref<4xf32>, memref<1x2x2x4xf32>
// CHECK: culib.elementwise add ins(%[[XS]], %{{.*}}) outs(%[[SUM:.*]]) : memref<1x2x2x4xf32>, memref<4xf32>, memref<1x2x2x4xf32>
// CHECK: culib.cast ins(%[[SUM]]) outs(%[[BN:.*]]) : memref<1x2x2x4xf32>, memref<1x2x2x4xbf16>
// CHECK: culib.elementwise relu ins(%[[BN]])
// CHECK-NOT: culib.batch_norm_inference
// CHECK: return
// Left alone: a batch norm whose result goes to a convolution (nothing to
// fuse it with), or to two readers.
// CHECK-LABEL: func.func @batch_norms_left
// CHECK-COUNT-2: culib.batch_norm_inference
// CHECK: return
func.func @batch_norm_relu(%x: memref<1x2x2x4xf32>) -> memref<1x2x2x4xf32> {
  %g = culib.weight "g" dense<[1.0, 2.0, 0.5, 1.5]> : tensor<4xf32> : memref<4xf32>
  %b = culib.weight "b" dense<[0.0, 0.1, -0.1, 0.2]> : tensor<4xf32> : memref<4xf32>
  %m = culib.weight "m" dense<[0.5, 0.0, -0.5, 1.0]> : tensor<4xf32> : memref<4xf32>
  %v = culib.weight "v" dense<[1.0, 4.0, 0.25, 2.0]> : tensor<4xf32> : memref<4xf32>
  %n = culib.alloc : memref<1x2x2x4xf32>
  culib.batch_norm_inference ins(%x, %g, %b, %m, %v) outs(%n) {epsilon = 9.99999974E-6 : f32, layout = #culib.layout<nhwc>} : memref<1x2x2x4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<1x2x2x4xf32>
  %y = culib.alloc : memref<1x2x2x4xf32>
  culib.elementwise relu ins(%n) outs(%y) : memref<1x2x2x4xf32>, memref<1x2x2x4xf32>
  return %y : memref<1x2x2x4xf32>
}
func.func @batch_norm_nchw(%x: memref<1x4x2x2xf32>) -> memref<1x4x2x2xf32> {
  %g = culib.weight "g" dense<1.0> : tensor<4xf32> : memref<4xf32>
  %n = culib.alloc : memref<1x4x2x2xf32>
  culib.batch_norm_inference ins(%x, %g, %g, %g, %g) outs(%n) {epsilon = 9.99999974E-6 : f32} : memref<1x4x2x2xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<1x4x2x2xf32>
  %y = culib.alloc : memref<1x4x2x2xf32>
  culib.elementwise relu ins(%n) outs(%y) : memref<1x4x2x2xf32>, memref<1x4x2x2xf32>
  return %y : memref<1x4x2x2xf32>
}
func.func @batch_norm_relu_bf16(%x: memref<1x2x2x4xbf16>) -> memref<1x2x2x4xbf16> {
  %g = culib.weight "g" dense<[1.0, 2.0, 0.5, 1.5]> : tensor<4xf32> : memref<4xf32>
  %n = culib.alloc : memref<1x2x2x4xbf16>
  culib.batch_norm_inference ins(%x, %g, %g, %g, %g) outs(%n) {epsilon = 9.99999974E-6 : f32, layout = #culib.layout<nhwc>} : memref<1x2x2x4xbf16>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<1x2x2x4xbf16>
  %y = culib.alloc : memref<1x2x2x4xbf16>
  culib.elementwise relu ins(%n) outs(%y) : memref<1x2x2x4xbf16>, memref<1x2x2x4xbf16>
  return %y : memref<1x2x2x4xbf16>
}
func.func @batch_norms_left(%x: memref<1x4x2x2xf32>, %w: memref<4x4x1x1xf32>) -> (memref<1x4x2x2xf32>, memref<1x4x2x2xf32>, memref<1x4x2x2xf32>) {
  %g = culib.weight "g" dense<1.0> : tensor<4xf32> : memref<4xf32>
  %n = culib.alloc : memref<1x4x2x2xf32>
  culib.batch_norm_inference ins(%x, %g, %g, %g, %g) outs(%n) {epsilon = 9.99999974E-6 : f32} : memref<1x4x2x2xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<1x4x2x2xf32>
  %c = culib.alloc : memref<1x4x2x2xf32>
  culib.conv_fwd ins(%n, %w) outs(%c) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x4x2x2xf32>, memref<4x4x1x1xf32>, memref<1x4x2x2xf32>
  %n2 = culib.alloc : memref<1x4x2x2xf32>
  culib.batch_norm_inference ins(%x, %g, %g, %g, %g) outs(%n2) {epsilon = 9.99999974E-6 : f32} : memref<1x4x2x2xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<1x4x2x2xf32>
  %r = culib.alloc : memref<1x4x2x2xf32>
  culib.elementwise relu ins(%n2) outs(%r) : memref<1x4x2x2xf32>, memref<1x4x2x2xf32>
  return %c, %r, %n2 : memref<1x4x2x2xf32>, memref<1x4x2x2xf32>, memref<1x4x2x2xf32>
}
