// culib-fuse-elementwise: groups of elementwise calls and float casts,
// connected through buffers nothing else uses, become one
// culib.fused_elementwise call with a program; the intermediates go.
// RUN: mp-opt %s --culib-fuse-elementwise | FileCheck %s
// Round trip: the output parses and prints the same.
// RUN: mp-opt %s --culib-fuse-elementwise | mp-opt | FileCheck %s
// RUN: mp-opt %s --culib-fuse-elementwise=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// SiLU: x * sigmoid(x).
// CHECK-LABEL: func.func @silu
// CHECK-NEXT: %[[Y:.*]] = culib.alloc : memref<2x8xf32>
// CHECK-NEXT: culib.fused_elementwise "sigmoid(x0); mul(x0, t0)" ins(%arg0) outs(%[[Y]]) : memref<2x8xf32>, memref<2x8xf32>
// CHECK-NEXT: return %[[Y]]
// REPORT: remark: culib-fuse-elementwise: 0 ReLU gradient(s) made one call each, 2 elementwise / cast call(s) fused into 1 call(s); 64 intermediate bytes no longer written
func.func @silu(%x: memref<2x8xf32>) -> memref<2x8xf32> {
  %s = culib.alloc : memref<2x8xf32>
  culib.elementwise sigmoid ins(%x) outs(%s) : memref<2x8xf32>, memref<2x8xf32>
  %y = culib.alloc : memref<2x8xf32>
  culib.elementwise mul ins(%x, %s) outs(%y) : memref<2x8xf32>, memref<2x8xf32>, memref<2x8xf32>
  return %y : memref<2x8xf32>
}

// GELU as exporters decompose it, with broadcast constants, parameters and
// the casts of autocast around it: the casts are no steps (the values stay
// f32), the result is rounded once to f16.
// CHECK-LABEL: func.func @gelu_between_casts
// CHECK: %[[Y:.*]] = culib.alloc : memref<4x8xf16>
// CHECK-NEXT: culib.fused_elementwise "div(x0, x1); erf(t0); add(t1, x2); mul(x0, t2); mul(t3, x3); leaky_relu(t4) alpha=0.2" ins(%arg0, %{{.*}}, %{{.*}}, %{{.*}}) outs(%[[Y]]) : memref<4x8xf32>, memref<f32>, memref<f32>, memref<f32>, memref<4x8xf16>
// CHECK-NOT: culib.elementwise
// CHECK-NOT: culib.cast
// REPORT: remark: culib-fuse-elementwise: 0 ReLU gradient(s) made one call each, 9 elementwise / cast call(s) fused into 1 call(s); 960 intermediate bytes no longer written
func.func @gelu_between_casts(%x: memref<4x8xf32>) -> memref<4x8xf16> {
  %sqrt2 = culib.weight "sqrt2" dense<1.41421354> : tensor<f32> : memref<f32>
  %one = culib.weight "one" dense<1.0> : tensor<f32> : memref<f32>
  %half = culib.weight "half" dense<0.5> : tensor<f32> : memref<f32>
  %a = culib.alloc : memref<4x8xf32>
  culib.elementwise div ins(%x, %sqrt2) outs(%a) : memref<4x8xf32>, memref<f32>, memref<4x8xf32>
  %b = culib.alloc : memref<4x8xf32>
  culib.elementwise erf ins(%a) outs(%b) : memref<4x8xf32>, memref<4x8xf32>
  %c = culib.alloc : memref<4x8xf32>
  culib.elementwise add ins(%b, %one) outs(%c) : memref<4x8xf32>, memref<f32>, memref<4x8xf32>
  %d = culib.alloc : memref<4x8xf32>
  culib.elementwise mul ins(%x, %c) outs(%d) : memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>
  %e = culib.alloc : memref<4x8xf32>
  culib.elementwise mul ins(%d, %half) outs(%e) : memref<4x8xf32>, memref<f32>, memref<4x8xf32>
  %e16 = culib.alloc : memref<4x8xf16>
  culib.cast ins(%e) outs(%e16) : memref<4x8xf32>, memref<4x8xf16>
  %e32 = culib.alloc : memref<4x8xf32>
  culib.cast ins(%e16) outs(%e32) : memref<4x8xf16>, memref<4x8xf32>
  %l = culib.alloc : memref<4x8xf32>
  culib.elementwise leaky_relu ins(%e32) outs(%l) {alpha = 0.2 : f32} : memref<4x8xf32>, memref<4x8xf32>
  %y = culib.alloc : memref<4x8xf16>
  culib.cast ins(%l) outs(%y) : memref<4x8xf32>, memref<4x8xf16>
  return %y : memref<4x8xf16>
}

// A cast chain alone: an identity step rounds once.
// CHECK-LABEL: func.func @casts_only
// CHECK: culib.fused_elementwise "identity(x0)" ins(%arg0) outs(%{{.*}}) : memref<8xf32>, memref<8xbf16>
// REPORT: remark: culib-fuse-elementwise: 0 ReLU gradient(s) made one call each, 2 elementwise / cast call(s) fused into 1 call(s); 16 intermediate bytes no longer written
func.func @casts_only(%x: memref<8xf32>) -> memref<8xbf16> {
  %h = culib.alloc : memref<8xf16>
  culib.cast ins(%x) outs(%h) : memref<8xf32>, memref<8xf16>
  %y = culib.alloc : memref<8xbf16>
  culib.cast ins(%h) outs(%y) : memref<8xf16>, memref<8xbf16>
  return %y : memref<8xbf16>
}

// A residual add and ReLU after a convolution: the convolution stays, the
// two elementwise calls fuse.
// CHECK-LABEL: func.func @residual_relu
// CHECK: culib.conv_fwd
// CHECK: culib.fused_elementwise "add(x0, x1); relu(t0)"
func.func @residual_relu(%x: memref<1x2x3x3xf32>) -> memref<1x2x3x3xf32> {
  %w = culib.weight "w" dense<1.0> : tensor<2x2x1x1xf32> : memref<2x2x1x1xf32>
  %t = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%x, %w) outs(%t) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  %s = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise add ins(%t, %x) outs(%s) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %y = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise relu ins(%s) outs(%y) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  return %y : memref<1x2x3x3xf32>
}

// Not fusable: the intermediate is read by another call too (a training
// step keeps it), so the group ends there; the later two calls still fuse.
// CHECK-LABEL: func.func @intermediate_read_elsewhere
// CHECK: culib.elementwise exp ins(%arg0) outs(%[[E:[^)]*]])
// CHECK: culib.fused_elementwise "neg(x0); add(t0, x1)" ins(%[[E]], %arg0)
// CHECK: culib.reduce sum ins(%[[E]])
// REPORT: remark: culib-fuse-elementwise: 0 ReLU gradient(s) made one call each, 2 elementwise / cast call(s) fused into 1 call(s); 32 intermediate bytes no longer written
func.func @intermediate_read_elsewhere(%x: memref<8xf32>) -> (memref<8xf32>, memref<f32>) {
  %e = culib.alloc : memref<8xf32>
  culib.elementwise exp ins(%x) outs(%e) : memref<8xf32>, memref<8xf32>
  %n = culib.alloc : memref<8xf32>
  culib.elementwise neg ins(%e) outs(%n) : memref<8xf32>, memref<8xf32>
  %y = culib.alloc : memref<8xf32>
  culib.elementwise add ins(%n, %x) outs(%y) : memref<8xf32>, memref<8xf32>, memref<8xf32>
  %s = culib.alloc : memref<f32>
  culib.reduce sum ins(%e) outs(%s) {axes = array<i64: 0>, compute_type = f32} : memref<8xf32>, memref<f32>
  return %y, %s : memref<8xf32>, memref<f32>
}

// Not fusable: a broadcast intermediate (its shape is not the result's),
// comparisons (bool results), integer data, and a call whose input is
// written between it and the group's end.
// CHECK-LABEL: func.func @not_fusable
// CHECK: culib.elementwise exp ins(%arg1)
// CHECK: culib.elementwise add
// CHECK: culib.elementwise greater
// CHECK: culib.elementwise abs
// CHECK: culib.elementwise neg
// CHECK-NOT: culib.fused_elementwise
// REPORT: remark: culib-fuse-elementwise: 0 ReLU gradient(s) made one call each, 0 elementwise / cast call(s) fused into 0 call(s); 0 intermediate bytes no longer written
func.func @not_fusable(%x: memref<4x8xf32>, %v: memref<8xf32>, %i: memref<8xi32>) -> (memref<4x8xf32>, memref<4x8xi1>, memref<8xi32>) {
  %e = culib.alloc : memref<8xf32>
  culib.elementwise exp ins(%v) outs(%e) : memref<8xf32>, memref<8xf32>
  %y = culib.alloc : memref<4x8xf32>
  culib.elementwise add ins(%x, %e) outs(%y) : memref<4x8xf32>, memref<8xf32>, memref<4x8xf32>
  %zero = culib.weight "zero" dense<0.0> : tensor<f32> : memref<f32>
  %p = culib.alloc : memref<4x8xi1>
  culib.elementwise greater ins(%y, %zero) outs(%p) : memref<4x8xf32>, memref<f32>, memref<4x8xi1>
  %a = culib.alloc : memref<8xi32>
  culib.elementwise abs ins(%i) outs(%a) : memref<8xi32>, memref<8xi32>
  %n = culib.alloc : memref<8xi32>
  culib.elementwise neg ins(%a) outs(%n) : memref<8xi32>, memref<8xi32>
  return %y, %p, %n : memref<4x8xf32>, memref<4x8xi1>, memref<8xi32>
}

// Not fusable: the first call's input is written (in place) before the
// second call runs, so its work cannot move there.
// CHECK-LABEL: func.func @input_written_between
// CHECK: culib.elementwise exp ins(%[[S:[^)]*]])
// CHECK: culib.sgd_step
// CHECK: culib.elementwise neg
// CHECK-NOT: culib.fused_elementwise
func.func @input_written_between(%g: memref<8xf32>) -> memref<8xf32> {
  %p = culib.state "p" dense<1.0> : tensor<8xf32> : memref<8xf32>
  %step = culib.state "step" dense<0> : tensor<i64> : memref<i64>
  %e = culib.alloc : memref<8xf32>
  culib.elementwise exp ins(%p) outs(%e) : memref<8xf32>, memref<8xf32>
  culib.sgd_step ins(%g) outs(%p) step(%step) {dampening = 0.0 : f32, lr = 1.0e-01 : f32, momentum = 0.0 : f32, nesterov = false, weight_decay = 0.0 : f32} : memref<8xf32>, memref<8xf32>, memref<i64>
  %y = culib.alloc : memref<8xf32>
  culib.elementwise neg ins(%e) outs(%y) : memref<8xf32>, memref<8xf32>
  return %y : memref<8xf32>
}

// A ReLU's gradient as training steps write it, where(x > 0, dy, 0),
// becomes relu_grad(dy, x), which then fuses with the residual add of the
// gradients before it: one call instead of three, and no bool mask.
// CHECK-LABEL: func.func @relu_gradient
// CHECK: %[[Y:.*]] = culib.alloc : memref<2x8xf32>
// CHECK: culib.fused_elementwise "add(x0, x1); relu_grad(t0, x2)" ins(%arg1, %arg2, %arg0) outs(%[[Y]])
// CHECK-NOT: culib.elementwise
// CHECK: return
// REPORT: remark: culib-fuse-elementwise: 1 ReLU gradient(s) made one call each, 2 elementwise / cast call(s) fused into 1 call(s); 80 intermediate bytes no longer written
func.func @relu_gradient(%x: memref<2x8xf32>, %da: memref<2x8xf32>, %db: memref<2x8xf32>) -> memref<2x8xf32> {
  %zero = culib.weight "zero" dense<0.0> : tensor<f32> : memref<f32>
  %dy = culib.alloc : memref<2x8xf32>
  culib.elementwise add ins(%da, %db) outs(%dy) : memref<2x8xf32>, memref<2x8xf32>, memref<2x8xf32>
  %mask = culib.alloc : memref<2x8xi1>
  culib.elementwise greater ins(%x, %zero) outs(%mask) : memref<2x8xf32>, memref<f32>, memref<2x8xi1>
  %y = culib.alloc : memref<2x8xf32>
  culib.elementwise where ins(%mask, %dy, %zero) outs(%y) : memref<2x8xi1>, memref<2x8xf32>, memref<f32>, memref<2x8xf32>
  return %y : memref<2x8xf32>
}

// A mixed-precision step's ReLU gradient: x (the activation) is bf16, dy and
// y f32. An elementwise call takes one dtype, so relu_grad becomes a fused
// program of one step, which reads any float types.
// CHECK-LABEL: func.func @relu_gradient_mixed
// CHECK: %[[Y:.*]] = culib.alloc : memref<2x8xf32>
// CHECK: culib.fused_elementwise "relu_grad(x0, x1)" ins(%arg1, %arg0) outs(%[[Y]]) : memref<2x8xf32>, memref<2x8xbf16>, memref<2x8xf32>
// CHECK-NOT: culib.elementwise
// CHECK: return
func.func @relu_gradient_mixed(%x: memref<2x8xbf16>, %dy: memref<2x8xf32>) -> memref<2x8xf32> {
  %zero = culib.weight "zero" dense<0.0> : tensor<f32> : memref<f32>
  %zero16 = culib.weight "zero16" dense<0.0> : tensor<bf16> : memref<bf16>
  %mask = culib.alloc : memref<2x8xi1>
  culib.elementwise greater ins(%x, %zero16) outs(%mask) : memref<2x8xbf16>, memref<bf16>, memref<2x8xi1>
  %y = culib.alloc : memref<2x8xf32>
  culib.elementwise where ins(%mask, %dy, %zero) outs(%y) : memref<2x8xi1>, memref<2x8xf32>, memref<f32>, memref<2x8xf32>
  return %y : memref<2x8xf32>
}

// Not a ReLU's gradient: a threshold other than 0, an otherwise other than
// 0, a mask read elsewhere.
// CHECK-LABEL: func.func @not_relu_gradients
// CHECK-NOT: relu_grad
// CHECK: return
func.func @not_relu_gradients(%x: memref<8xf32>, %dy: memref<8xf32>) -> (memref<8xf32>, memref<8xf32>, memref<8xi1>) {
  %zero = culib.weight "zero" dense<0.0> : tensor<f32> : memref<f32>
  %one = culib.weight "one" dense<1.0> : tensor<f32> : memref<f32>
  %m1 = culib.alloc : memref<8xi1>
  culib.elementwise greater ins(%x, %one) outs(%m1) : memref<8xf32>, memref<f32>, memref<8xi1>
  %a = culib.alloc : memref<8xf32>
  culib.elementwise where ins(%m1, %dy, %zero) outs(%a) : memref<8xi1>, memref<8xf32>, memref<f32>, memref<8xf32>
  %m2 = culib.alloc : memref<8xi1>
  culib.elementwise greater ins(%x, %zero) outs(%m2) : memref<8xf32>, memref<f32>, memref<8xi1>
  %b = culib.alloc : memref<8xf32>
  culib.elementwise where ins(%m2, %dy, %one) outs(%b) : memref<8xi1>, memref<8xf32>, memref<f32>, memref<8xf32>
  %m3 = culib.alloc : memref<8xi1>
  culib.elementwise greater ins(%x, %zero) outs(%m3) : memref<8xf32>, memref<f32>, memref<8xi1>
  %c = culib.alloc : memref<8xf32>
  culib.elementwise where ins(%m3, %dy, %zero) outs(%c) : memref<8xi1>, memref<8xf32>, memref<f32>, memref<8xf32>
  return %a, %b, %m3 : memref<8xf32>, memref<8xf32>, memref<8xi1>
}
