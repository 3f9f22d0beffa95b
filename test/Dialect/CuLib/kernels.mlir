// The project kernels of culib round-trip (their verifier errors are in
// invalid.mlir).
// RUN: mp-opt %s | FileCheck %s
// RUN: mp-opt %s | mp-opt | FileCheck %s

// CHECK-LABEL: func.func @kernels
// CHECK: culib.elementwise add ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) : memref<2x3xf16>, memref<3xf16>, memref<2x3xf16>
// CHECK: culib.elementwise less ins(
// CHECK: culib.elementwise where ins(
// CHECK: culib.cast ins(%{{.*}}) outs(%{{.*}}) : memref<2x3xf16>, memref<2x3xf32>
// CHECK: culib.reduce mean ins(%{{.*}}) outs(%{{.*}}) {axes = array<i64: 1>, compute_type = f32} : memref<2x3xf16>, memref<2x1xf16>
// CHECK: culib.reduce argmax ins(
// CHECK: culib.transpose ins(%{{.*}}) outs(%{{.*}}) {perm = array<i64: 1, 0>}
// CHECK: culib.copy
// CHECK: culib.gather ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {axis = 0 : i64}
// CHECK: culib.concat ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {axis = 1 : i64}
func.func @kernels(%a: memref<2x3xf16>, %b: memref<3xf16>, %c: memref<2x3xf16>, %m: memref<2x3xi1>,
                   %f: memref<2x3xf32>, %r: memref<2x1xf16>, %i: memref<2xi64>, %t: memref<3x2xf16>,
                   %flat: memref<6xf16>, %idx: memref<4xi64>, %g: memref<4x2xf16>, %cat: memref<2x6xf16>) {
  culib.elementwise add ins(%a, %b) outs(%c) : memref<2x3xf16>, memref<3xf16>, memref<2x3xf16>
  culib.elementwise less ins(%a, %b) outs(%m) : memref<2x3xf16>, memref<3xf16>, memref<2x3xi1>
  culib.elementwise where ins(%m, %a, %b) outs(%c) : memref<2x3xi1>, memref<2x3xf16>, memref<3xf16>, memref<2x3xf16>
  culib.cast ins(%a) outs(%f) : memref<2x3xf16>, memref<2x3xf32>
  culib.reduce mean ins(%a) outs(%r) {axes = array<i64: 1>, compute_type = f32} : memref<2x3xf16>, memref<2x1xf16>
  culib.reduce argmax ins(%a) outs(%i) {axes = array<i64: 1>, compute_type = f32} : memref<2x3xf16>, memref<2xi64>
  culib.transpose ins(%a) outs(%t) {perm = array<i64: 1, 0>} : memref<2x3xf16>, memref<3x2xf16>
  culib.copy ins(%a) outs(%flat) : memref<2x3xf16>, memref<6xf16>
  culib.gather ins(%t, %idx) outs(%g) {axis = 0 : i64} : memref<3x2xf16>, memref<4xi64>, memref<4x2xf16>
  culib.concat ins(%a, %c) outs(%cat) {axis = 1 : i64} : memref<2x3xf16>, memref<2x3xf16>, memref<2x6xf16>
  return
}


// CHECK-LABEL: func.func @norms
// CHECK: culib.layer_norm ins(%arg0, %arg1) outs(%arg2) {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : memref<2x8xf16>, memref<8xf16>, memref<2x8xf16>
// CHECK: culib.rms_norm ins(%arg0, %arg1) outs(%arg2) {axis = 1 : i64, epsilon = 9.99999997E-7 : f32} : memref<2x8xf16>, memref<8xf16>, memref<2x8xf16>
// CHECK: culib.group_norm ins(%arg0, %arg1) outs(%arg2) {epsilon = 9.99999974E-6 : f32, groups = 4 : i64} : memref<2x8xf16>, memref<8xf16>, memref<2x8xf16>
// CHECK: culib.group_norm ins(%arg0, %arg1) bias(%arg1) outs(%arg2) {epsilon = 9.99999974E-6 : f32, groups = 2 : i64}
func.func @norms(%x: memref<2x8xf16>, %scale: memref<8xf16>, %y: memref<2x8xf16>) {
  culib.layer_norm ins(%x, %scale) outs(%y) {axis = 1 : i64, epsilon = 1.0e-5 : f32} : memref<2x8xf16>, memref<8xf16>, memref<2x8xf16>
  culib.rms_norm ins(%x, %scale) outs(%y) {axis = 1 : i64, epsilon = 1.0e-6 : f32} : memref<2x8xf16>, memref<8xf16>, memref<2x8xf16>
  culib.group_norm ins(%x, %scale) outs(%y) {groups = 4 : i64, epsilon = 1.0e-5 : f32} : memref<2x8xf16>, memref<8xf16>, memref<2x8xf16>
  culib.group_norm ins(%x, %scale) bias(%scale) outs(%y) {groups = 2 : i64, epsilon = 1.0e-5 : f32} : memref<2x8xf16>, memref<8xf16>, memref<8xf16>, memref<2x8xf16>
  return
}

// CHECK-LABEL: func.func @scaled_softmax
// CHECK: culib.scaled_softmax ins(%arg0) mask(%arg1) outs(%arg2) {scale = 1.250000e-01 : f32} : memref<2x3x8xbf16>, memref<1x8xf32>, memref<2x3x8xbf16>
// CHECK: culib.scaled_softmax ins(%arg0) outs(%arg2) : memref<2x3x8xbf16>, memref<2x3x8xbf16>
func.func @scaled_softmax(%x: memref<2x3x8xbf16>, %mask: memref<1x8xf32>, %y: memref<2x3x8xbf16>) {
  culib.scaled_softmax ins(%x) mask(%mask) outs(%y) {scale = 0.125 : f32} : memref<2x3x8xbf16>, memref<1x8xf32>, memref<2x3x8xbf16>
  culib.scaled_softmax ins(%x) outs(%y) : memref<2x3x8xbf16>, memref<2x3x8xbf16>
  return
}
