// culib-fuse-epilogues: a ReLU whose input only a convolution or a matmul
// writes becomes that call's epilogue, and so does a clip with constant
// bounds (ReLU6) after a convolution; the call writes their output.
// RUN: mp-opt %s --culib-fuse-epilogues | FileCheck %s
// Round trip: the output parses and prints the same.
// RUN: mp-opt %s --culib-fuse-epilogues | mp-opt | FileCheck %s
// RUN: mp-opt %s --culib-fuse-epilogues=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// CHECK-LABEL: func.func @conv_relu
// CHECK: %[[Y:.*]] = culib.alloc : memref<1x2x3x3xf16>
// CHECK-NEXT: culib.conv_fwd ins(%arg0, %{{.*}}) outs(%[[Y]]) {activation = #culib.epilogue<relu>
// CHECK-NOT: culib.elementwise
// CHECK: return %[[Y]]
// REPORT: remark: culib-fuse-epilogues: 1 activation / bias / residual / cast call(s) folded into their convolution or matmul; 36 intermediate bytes no longer written
func.func @conv_relu(%x: memref<1x2x3x3xf16>) -> memref<1x2x3x3xf16> {
  %w = culib.weight "w" dense<1.0> : tensor<2x2x1x1xf16> : memref<2x2x1x1xf16>
  %t = culib.alloc : memref<1x2x3x3xf16>
  culib.conv_fwd ins(%x, %w) outs(%t) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf16>, memref<2x2x1x1xf16>, memref<1x2x3x3xf16>
  %y = culib.alloc : memref<1x2x3x3xf16>
  culib.elementwise relu ins(%t) outs(%y) : memref<1x2x3x3xf16>, memref<1x2x3x3xf16>
  return %y : memref<1x2x3x3xf16>
}

// A matmul with a bias: the bias comes before the ReLU, as before.
// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK: culib.matmul ins(%arg0, %{{.*}}) bias(%{{.*}}) outs(%[[D:[^)]*]]) {compute_type = f32, epilogue = #culib.epilogue<relu>}
// CHECK-NOT: culib.elementwise
// CHECK: return %[[D]]
// REPORT: remark: culib-fuse-epilogues: 1 activation / bias / residual / cast call(s)
func.func @matmul_bias_relu(%a: memref<2x3xf32>) -> memref<2x4xf32> {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf32> : memref<3x4xf32>
  %bias = culib.weight "bias" dense<-1.0> : tensor<4xf32> : memref<4xf32>
  %t = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) bias(%bias) outs(%t) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<4xf32>, memref<2x4xf32>
  %y = culib.alloc : memref<2x4xf32>
  culib.elementwise relu ins(%t) outs(%y) : memref<2x4xf32>, memref<2x4xf32>
  return %y : memref<2x4xf32>
}

// Not fusable: the convolution's output is read by another call too (a
// training step keeps it for the ReLU's gradient).
// CHECK-LABEL: func.func @conv_output_read_twice
// CHECK: culib.conv_fwd {{[^#]*$}}
// CHECK: culib.elementwise relu
// REPORT: remark: culib-fuse-epilogues: 0 activation / bias / residual / cast call(s)
func.func @conv_output_read_twice(%x: memref<1x2x3x3xf32>) -> (memref<1x2x3x3xf32>, memref<1x2x3x3xi1>) {
  %w = culib.weight "w" dense<1.0> : tensor<2x2x1x1xf32> : memref<2x2x1x1xf32>
  %t = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%x, %w) outs(%t) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  %y = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise relu ins(%t) outs(%y) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %zero = culib.weight "zero" dense<0.0> : tensor<f32> : memref<f32>
  %p = culib.alloc : memref<1x2x3x3xi1>
  culib.elementwise greater ins(%t, %zero) outs(%p) : memref<1x2x3x3xf32>, memref<f32>, memref<1x2x3x3xi1>
  return %y, %p : memref<1x2x3x3xf32>, memref<1x2x3x3xi1>
}

// Not fusable: the call already has an epilogue.
// CHECK-LABEL: func.func @already_fused
// CHECK: culib.matmul {{.*}}epilogue = #culib.epilogue<gelu>
// CHECK: culib.elementwise relu
// REPORT: remark: culib-fuse-epilogues: 0 activation / bias / residual / cast call(s)
func.func @already_fused(%a: memref<2x3xf32>) -> memref<2x4xf32> {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf32> : memref<3x4xf32>
  %t = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%t) {compute_type = f32, epilogue = #culib.epilogue<gelu>} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %y = culib.alloc : memref<2x4xf32>
  culib.elementwise relu ins(%t) outs(%y) : memref<2x4xf32>, memref<2x4xf32>
  return %y : memref<2x4xf32>
}

// Not fusable: the ReLU's output is read between the two calls (the
// convolution would write it too early).
// CHECK-LABEL: func.func @output_used_between
// CHECK: culib.conv_fwd {{[^#]*$}}
// CHECK: culib.copy
// CHECK: culib.elementwise relu
// REPORT: remark: culib-fuse-epilogues: 0 activation / bias / residual / cast call(s)
func.func @output_used_between(%x: memref<1x1x2x2xf32>) -> (memref<1x1x2x2xf32>, memref<1x1x2x2xf32>) {
  %w = culib.weight "w" dense<1.0> : tensor<1x1x1x1xf32> : memref<1x1x1x1xf32>
  %y = culib.alloc : memref<1x1x2x2xf32>
  %t = culib.alloc : memref<1x1x2x2xf32>
  culib.conv_fwd ins(%x, %w) outs(%t) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x1x2x2xf32>, memref<1x1x1x1xf32>, memref<1x1x2x2xf32>
  %c = culib.alloc : memref<1x1x2x2xf32>
  culib.copy ins(%y) outs(%c) : memref<1x1x2x2xf32>, memref<1x1x2x2xf32>
  culib.elementwise relu ins(%t) outs(%y) : memref<1x1x2x2xf32>, memref<1x1x2x2xf32>
  return %y, %c : memref<1x1x2x2xf32>, memref<1x1x2x2xf32>
}

// ReLU6: a clip with one-element constant bounds after a convolution (the
// form ONNX Clip-11+ lowers to); the bounds' weights go with it.
// CHECK-LABEL: func.func @conv_relu6
// CHECK-NOT: culib.weight "lo"
// CHECK-NOT: culib.weight "hi"
// CHECK: culib.conv_fwd ins(%arg0, %{{.*}}) outs(%[[Y:[^)]*]]) {activation = #culib.epilogue<clip>, clip_max = 6.000000e+00 : f32, clip_min = 0.000000e+00 : f32
// CHECK-NOT: culib.elementwise
// CHECK: return %[[Y]]
// REPORT: remark: culib-fuse-epilogues: 1 activation / bias / residual / cast call(s){{.*}}; 36 intermediate bytes
func.func @conv_relu6(%x: memref<1x2x3x3xf16>) -> memref<1x2x3x3xf16> {
  %w = culib.weight "w" dense<1.0> : tensor<2x2x1x1xf16> : memref<2x2x1x1xf16>
  %t = culib.alloc : memref<1x2x3x3xf16>
  culib.conv_fwd ins(%x, %w) outs(%t) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf16>, memref<2x2x1x1xf16>, memref<1x2x3x3xf16>
  %lo = culib.weight "lo" dense<0.0> : tensor<f16> : memref<f16>
  %hi = culib.weight "hi" dense<6.0> : tensor<f16> : memref<f16>
  %y = culib.alloc : memref<1x2x3x3xf16>
  culib.elementwise clip ins(%t, %lo, %hi) outs(%y) : memref<1x2x3x3xf16>, memref<f16>, memref<f16>, memref<1x2x3x3xf16>
  return %y : memref<1x2x3x3xf16>
}

// Not fusable: a bound that changes (a graph input), and a clip after a
// matmul (cuBLASLt has no clip epilogue).
// CHECK-LABEL: func.func @clip_not_fusable
// CHECK: culib.conv_fwd {{[^#]*$}}
// CHECK: culib.elementwise clip
// CHECK: culib.matmul {{[^#]*$}}
// CHECK: culib.elementwise clip
// REPORT: remark: culib-fuse-epilogues: 0 activation / bias / residual / cast call(s)
func.func @clip_not_fusable(%x: memref<1x1x2x2xf32>, %lo: memref<f32>, %a: memref<2x3xf32>) -> (memref<1x1x2x2xf32>, memref<2x4xf32>) {
  %w = culib.weight "w" dense<1.0> : tensor<1x1x1x1xf32> : memref<1x1x1x1xf32>
  %hi = culib.weight "hi" dense<6.0> : tensor<f32> : memref<f32>
  %t = culib.alloc : memref<1x1x2x2xf32>
  culib.conv_fwd ins(%x, %w) outs(%t) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x1x2x2xf32>, memref<1x1x1x1xf32>, memref<1x1x2x2xf32>
  %y = culib.alloc : memref<1x1x2x2xf32>
  culib.elementwise clip ins(%t, %lo, %hi) outs(%y) : memref<1x1x2x2xf32>, memref<f32>, memref<f32>, memref<1x1x2x2xf32>
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf32> : memref<3x4xf32>
  %m = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%m) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %zero = culib.weight "zero" dense<0.0> : tensor<f32> : memref<f32>
  %d = culib.alloc : memref<2x4xf32>
  culib.elementwise clip ins(%m, %zero, %hi) outs(%d) : memref<2x4xf32>, memref<f32>, memref<f32>, memref<2x4xf32>
  return %y, %d : memref<1x1x2x2xf32>, memref<2x4xf32>
}

// A bias vector added to a matmul's result becomes its bias, and the ReLU
// after that its epilogue (the bias comes first in both).
// CHECK-LABEL: func.func @matmul_add_bias_relu
// CHECK: culib.matmul ins(%arg0, %{{.*}}) bias(%[[BIAS:[^)]*]]) outs(%[[D:[^)]*]]) {compute_type = f32, epilogue = #culib.epilogue<relu>}
// CHECK-NOT: culib.elementwise
// CHECK: return %[[D]]
// REPORT: remark: culib-fuse-epilogues: 2 activation / bias / residual / cast call(s){{.*}}; 64 intermediate bytes
func.func @matmul_add_bias_relu(%a: memref<2x3xf32>) -> memref<2x4xf32> {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf32> : memref<3x4xf32>
  %bias = culib.weight "bias" dense<-1.0> : tensor<4xf32> : memref<4xf32>
  %t = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%t) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %s = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%bias, %t) outs(%s) : memref<4xf32>, memref<2x4xf32>, memref<2x4xf32>
  %y = culib.alloc : memref<2x4xf32>
  culib.elementwise relu ins(%s) outs(%y) : memref<2x4xf32>, memref<2x4xf32>
  return %y : memref<2x4xf32>
}

// Not a bias: a column vector (over the rows); an add of a full tensor is
// the matmul's C (a residual) instead.
// CHECK-LABEL: func.func @matmul_add_not_bias
// CHECK: culib.matmul ins(%arg0, %{{.*}}) outs
// CHECK: culib.elementwise add
// CHECK: culib.matmul ins(%arg0, %{{.*}}) c(%arg1) outs
// CHECK-NOT: culib.elementwise add
// REPORT: remark: culib-fuse-epilogues: 1 activation / bias / residual / cast call(s)
func.func @matmul_add_not_bias(%a: memref<2x3xf32>, %r: memref<2x4xf32>) -> (memref<2x4xf32>, memref<2x4xf32>) {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf32> : memref<3x4xf32>
  %col = culib.weight "col" dense<-1.0> : tensor<2x1xf32> : memref<2x1xf32>
  %t = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%t) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %y = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%t, %col) outs(%y) : memref<2x4xf32>, memref<2x1xf32>, memref<2x4xf32>
  %t2 = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%t2) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %y2 = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%t2, %r) outs(%y2) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
  return %y, %y2 : memref<2x4xf32>, memref<2x4xf32>
}

// GELU as torch exports it, x * (1 + erf(x / sqrt 2)) * 0.5, after a matmul
// with a bias: bias and exact GELU epilogue, the five calls and their
// constants gone; with the 0.5 on x and x * (1 / sqrt 2); an elementwise
// gelu.
// CHECK-LABEL: func.func @matmul_gelu
// CHECK-NEXT: %[[B:.*]] = culib.weight "b"
// CHECK-NEXT: %[[BIAS:.*]] = culib.weight "bias"
// CHECK-NEXT: %[[Y:.*]] = culib.alloc : memref<2x4xf32>
// CHECK-NEXT: culib.matmul ins(%arg0, %[[B]]) bias(%[[BIAS]]) outs(%[[Y]]) {compute_type = f32, epilogue = #culib.epilogue<gelu>}
// CHECK-NEXT: %[[Y2:.*]] = culib.alloc : memref<2x4xf32>
// CHECK-NEXT: culib.matmul ins(%arg0, %[[B]]) outs(%[[Y2]]) {compute_type = f32, epilogue = #culib.epilogue<gelu>}
// CHECK-NEXT: %[[Y3:.*]] = culib.alloc : memref<2x4xf32>
// CHECK-NEXT: culib.matmul ins(%arg0, %[[B]]) outs(%[[Y3]]) {compute_type = f32, epilogue = #culib.epilogue<gelu>}
// CHECK-NEXT: return %[[Y]], %[[Y2]], %[[Y3]]
// REPORT: remark: culib-fuse-epilogues: 12 activation / bias / residual / cast call(s)
func.func @matmul_gelu(%a: memref<2x3xf32>) -> (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>) {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf32> : memref<3x4xf32>
  %bias = culib.weight "bias" dense<-1.0> : tensor<4xf32> : memref<4xf32>
  %sqrt2 = culib.weight "sqrt2" dense<1.41421354> : tensor<f32> : memref<f32>
  %one = culib.weight "one" dense<1.0> : tensor<f32> : memref<f32>
  %half = culib.weight "half" dense<0.5> : tensor<f32> : memref<f32>
  %inv = culib.weight "inv_sqrt2" dense<0.707106769> : tensor<f32> : memref<f32>
  %t = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%t) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %x = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%t, %bias) outs(%x) : memref<2x4xf32>, memref<4xf32>, memref<2x4xf32>
  %d = culib.alloc : memref<2x4xf32>
  culib.elementwise div ins(%x, %sqrt2) outs(%d) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  %e = culib.alloc : memref<2x4xf32>
  culib.elementwise erf ins(%d) outs(%e) : memref<2x4xf32>, memref<2x4xf32>
  %p = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%e, %one) outs(%p) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  %m = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%x, %p) outs(%m) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
  %y = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%m, %half) outs(%y) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  // The 0.5 on x, x * (1 / sqrt 2), 1 + erf.
  %x2 = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%x2) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %h2 = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%x2, %half) outs(%h2) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  %d2 = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%x2, %inv) outs(%d2) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  %e2 = culib.alloc : memref<2x4xf32>
  culib.elementwise erf ins(%d2) outs(%e2) : memref<2x4xf32>, memref<2x4xf32>
  %p2 = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%one, %e2) outs(%p2) : memref<f32>, memref<2x4xf32>, memref<2x4xf32>
  %y2 = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%h2, %p2) outs(%y2) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
  // An elementwise gelu.
  %x3 = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%x3) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %y3 = culib.alloc : memref<2x4xf32>
  culib.elementwise gelu ins(%x3) outs(%y3) : memref<2x4xf32>, memref<2x4xf32>
  return %y, %y2, %y3 : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
}

// Not GELU: erf(x / 2); with x read again after the GELU, not the matmul's
// epilogue but one elementwise gelu.
// CHECK-LABEL: func.func @matmul_not_gelu
// CHECK: culib.elementwise erf
// CHECK-NOT: culib.elementwise erf
// CHECK: culib.elementwise gelu
// CHECK-NOT: culib.elementwise erf
// REPORT: remark: culib-fuse-epilogues: 4 activation / bias / residual / cast call(s)
func.func @matmul_not_gelu(%a: memref<2x3xf32>) -> (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>) {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf32> : memref<3x4xf32>
  %two = culib.weight "two" dense<2.0> : tensor<f32> : memref<f32>
  %sqrt2 = culib.weight "sqrt2" dense<1.41421354> : tensor<f32> : memref<f32>
  %one = culib.weight "one" dense<1.0> : tensor<f32> : memref<f32>
  %half = culib.weight "half" dense<0.5> : tensor<f32> : memref<f32>
  %x = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%x) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %d = culib.alloc : memref<2x4xf32>
  culib.elementwise div ins(%x, %two) outs(%d) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  %e = culib.alloc : memref<2x4xf32>
  culib.elementwise erf ins(%d) outs(%e) : memref<2x4xf32>, memref<2x4xf32>
  %p = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%e, %one) outs(%p) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  %m = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%x, %p) outs(%m) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
  %y = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%m, %half) outs(%y) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  %x2 = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%x2) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %d2 = culib.alloc : memref<2x4xf32>
  culib.elementwise div ins(%x2, %sqrt2) outs(%d2) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  %e2 = culib.alloc : memref<2x4xf32>
  culib.elementwise erf ins(%d2) outs(%e2) : memref<2x4xf32>, memref<2x4xf32>
  %p2 = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%e2, %one) outs(%p2) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  %m2 = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%x2, %p2) outs(%m2) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
  %y2 = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%m2, %half) outs(%y2) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  return %y, %y2, %x2 : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
}

// SiLU as exporters write it (x * sigmoid(x), either operand order), and a
// sigmoid, tanh and hard swish, after convolutions: their activations.
// CHECK-LABEL: func.func @conv_activations
// CHECK: culib.conv_fwd ins(%arg0, %[[W:.*]]) outs(%[[Y1:[^)]*]]) {activation = #culib.epilogue<silu>
// CHECK: culib.conv_fwd ins(%arg0, %[[W]]) outs(%[[Y2:[^)]*]]) {activation = #culib.epilogue<silu>
// CHECK: culib.conv_fwd ins(%arg0, %[[W]]) outs(%[[Y3:[^)]*]]) {activation = #culib.epilogue<sigmoid>
// CHECK: culib.conv_fwd ins(%arg0, %[[W]]) outs(%[[Y4:[^)]*]]) {activation = #culib.epilogue<tanh>
// CHECK: culib.conv_fwd ins(%arg0, %[[W]]) outs(%[[Y5:[^)]*]]) {activation = #culib.epilogue<hard_swish>
// CHECK-NOT: culib.elementwise
// CHECK: return %[[Y1]], %[[Y2]], %[[Y3]], %[[Y4]], %[[Y5]]
// REPORT: remark: culib-fuse-epilogues: 7 activation / bias / residual / cast call(s) folded into their convolution or matmul; 504 intermediate bytes no longer written
func.func @conv_activations(%x: memref<1x2x3x3xf32>) -> (memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>) {
  %w = culib.weight "w" dense<1.0> : tensor<2x2x1x1xf32> : memref<2x2x1x1xf32>
  %t1 = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%x, %w) outs(%t1) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  %s1 = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise sigmoid ins(%t1) outs(%s1) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %y1 = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise mul ins(%t1, %s1) outs(%y1) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %t2 = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%x, %w) outs(%t2) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  %s2 = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise sigmoid ins(%t2) outs(%s2) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %y2 = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise mul ins(%s2, %t2) outs(%y2) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %t3 = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%x, %w) outs(%t3) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  %y3 = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise sigmoid ins(%t3) outs(%y3) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %t4 = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%x, %w) outs(%t4) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  %y4 = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise tanh ins(%t4) outs(%y4) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %t5 = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%x, %w) outs(%t5) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  %y5 = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise hard_swish ins(%t5) outs(%y5) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  return %y1, %y2, %y3, %y4, %y5 : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
}

// Not SiLU: the sigmoid of another buffer, and a convolution's output the
// sigmoid of which a training step keeps (read again).
// CHECK-LABEL: func.func @conv_not_silu
// CHECK-COUNT-2: culib.elementwise sigmoid
// REPORT: remark: culib-fuse-epilogues: 0 activation / bias / residual / cast call(s)
func.func @conv_not_silu(%x: memref<1x2x3x3xf32>, %o: memref<1x2x3x3xf32>) -> (memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>) {
  %w = culib.weight "w" dense<1.0> : tensor<2x2x1x1xf32> : memref<2x2x1x1xf32>
  %t1 = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%x, %w) outs(%t1) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  %s1 = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise sigmoid ins(%o) outs(%s1) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %y1 = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise mul ins(%t1, %s1) outs(%y1) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %t2 = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%x, %w) outs(%t2) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  %s2 = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise sigmoid ins(%t2) outs(%s2) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %y2 = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise mul ins(%t2, %s2) outs(%y2) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  return %y1, %y2, %s2 : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
}

// A ResNet block's end: relu(conv + shortcut) -> the convolution adds the
// shortcut as its residual, then the ReLU folds as its activation.
// CHECK-LABEL: func.func @conv_residual_relu
// CHECK: %[[Y:.*]] = culib.alloc : memref<1x3x3x2xf32>
// CHECK-NEXT: culib.conv_fwd ins(%arg0, %{{.*}}) bias(%{{.*}}) residual(%arg1) outs(%[[Y]]) {activation = #culib.epilogue<relu>
// CHECK-NOT: culib.elementwise
// CHECK: return %[[Y]]
// REPORT: remark: culib-fuse-epilogues: 2 activation / bias / residual / cast call(s)
func.func @conv_residual_relu(%x: memref<1x3x3x2xf32>, %shortcut: memref<1x3x3x2xf32>) -> memref<1x3x3x2xf32> {
  %w = culib.weight "w" dense<1.0> : tensor<2x1x1x2xf32> : memref<2x1x1x2xf32>
  %b = culib.weight "b" dense<0.5> : tensor<2xf32> : memref<2xf32>
  %t = culib.alloc : memref<1x3x3x2xf32>
  culib.conv_fwd ins(%x, %w) bias(%b) outs(%t) {compute_type = f32, dilations = array<i64: 1, 1>, layout = #culib.layout<nhwc>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x3x2xf32>, memref<2x1x1x2xf32>, memref<2xf32>, memref<1x3x3x2xf32>
  %s = culib.alloc : memref<1x3x3x2xf32>
  culib.elementwise add ins(%t, %shortcut) outs(%s) : memref<1x3x3x2xf32>, memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
  %y = culib.alloc : memref<1x3x3x2xf32>
  culib.elementwise relu ins(%s) outs(%y) : memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
  return %y : memref<1x3x3x2xf32>
}

// Not a residual: after the convolution's activation (relu(conv) + r is
// not relu(conv + r)), a broadcast add, and a shortcut written between.
// CHECK-LABEL: func.func @conv_not_residual
// CHECK-NOT: residual(
// CHECK: return
// REPORT: remark: culib-fuse-epilogues: 0 activation / bias / residual / cast call(s)
func.func @conv_not_residual(%x: memref<1x3x3x2xf32>, %r: memref<1x3x3x2xf32>, %v: memref<2xf32>) -> (memref<1x3x3x2xf32>, memref<1x3x3x2xf32>, memref<1x3x3x2xf32>) {
  %w = culib.weight "w" dense<1.0> : tensor<2x1x1x2xf32> : memref<2x1x1x2xf32>
  %t1 = culib.alloc : memref<1x3x3x2xf32>
  culib.conv_fwd ins(%x, %w) outs(%t1) {activation = #culib.epilogue<relu>, compute_type = f32, dilations = array<i64: 1, 1>, layout = #culib.layout<nhwc>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x3x2xf32>, memref<2x1x1x2xf32>, memref<1x3x3x2xf32>
  %y1 = culib.alloc : memref<1x3x3x2xf32>
  culib.elementwise add ins(%t1, %r) outs(%y1) : memref<1x3x3x2xf32>, memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
  %t2 = culib.alloc : memref<1x3x3x2xf32>
  culib.conv_fwd ins(%x, %w) outs(%t2) {compute_type = f32, dilations = array<i64: 1, 1>, layout = #culib.layout<nhwc>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x3x2xf32>, memref<2x1x1x2xf32>, memref<1x3x3x2xf32>
  %y2 = culib.alloc : memref<1x3x3x2xf32>
  culib.elementwise add ins(%t2, %v) outs(%y2) : memref<1x3x3x2xf32>, memref<2xf32>, memref<1x3x3x2xf32>
  %s = culib.alloc : memref<1x3x3x2xf32>
  %t3 = culib.alloc : memref<1x3x3x2xf32>
  culib.conv_fwd ins(%x, %w) outs(%t3) {compute_type = f32, dilations = array<i64: 1, 1>, layout = #culib.layout<nhwc>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x3x2xf32>, memref<2x1x1x2xf32>, memref<1x3x3x2xf32>
  culib.elementwise neg ins(%r) outs(%s) : memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
  %y3 = culib.alloc : memref<1x3x3x2xf32>
  culib.elementwise add ins(%t3, %s) outs(%y3) : memref<1x3x3x2xf32>, memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
  return %y1, %y2, %y3 : memref<1x3x3x2xf32>, memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
}

// A transformer's residual after its output projection (with a bias): the
// matmul's C with beta 1; not when the matmul already has a C, and not a
// broadcast add.
// CHECK-LABEL: func.func @matmul_residual
// CHECK: %[[Y:.*]] = culib.alloc : memref<2x4xf32>
// CHECK-NEXT: culib.matmul ins(%arg0, %{{.*}}) c(%arg1) bias(%{{.*}}) outs(%[[Y]]) {beta = 1.000000e+00 : f32, compute_type = f32}
// CHECK: culib.matmul ins(%arg0, %{{.*}}) c(%arg1) outs
// CHECK: culib.elementwise add
// CHECK: culib.elementwise add
// REPORT: remark: culib-fuse-epilogues: 2 activation / bias / residual / cast call(s)
func.func @matmul_residual(%a: memref<2x3xf32>, %r: memref<2x4xf32>) -> (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>) {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf32> : memref<3x4xf32>
  %bias = culib.weight "bias" dense<-1.0> : tensor<4xf32> : memref<4xf32>
  %row = culib.weight "row" dense<2.0> : tensor<1x4xf32> : memref<1x4xf32>
  %t = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%t) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %s = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%t, %bias) outs(%s) : memref<2x4xf32>, memref<4xf32>, memref<2x4xf32>
  %y = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%r, %s) outs(%y) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
  %t2 = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) c(%r) outs(%t2) {beta = 0.5 : f32, compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>, memref<2x4xf32>
  %y2 = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%t2, %r) outs(%y2) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
  %t3 = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%t3) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %y3 = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%t3, %row) outs(%y3) : memref<2x4xf32>, memref<1x4xf32>, memref<2x4xf32>
  return %y, %y2, %y3 : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
}

// A decomposed GELU with no matmul before it (a bf16 matmul's result cast
// to f32 plus an f32 bias, as autocast leaves it): one elementwise gelu.
// CHECK-LABEL: func.func @gelu_alone
// CHECK: culib.elementwise add
// CHECK-NEXT: %[[Y:.*]] = culib.alloc : memref<2x4xf32>
// CHECK-NEXT: culib.elementwise gelu ins(%{{.*}}) outs(%[[Y]]) : memref<2x4xf32>, memref<2x4xf32>
// CHECK-NOT: culib.elementwise
// CHECK: return %[[Y]]
// REPORT: remark: culib-fuse-epilogues: 4 activation / bias / residual / cast call(s)
func.func @gelu_alone(%t16: memref<2x4xbf16>) -> memref<2x4xf32> {
  %bias = culib.weight "bias" dense<-1.0> : tensor<4xf32> : memref<4xf32>
  %sqrt2 = culib.weight "sqrt2" dense<1.41421354> : tensor<f32> : memref<f32>
  %one = culib.weight "one" dense<1.0> : tensor<f32> : memref<f32>
  %half = culib.weight "half" dense<0.5> : tensor<f32> : memref<f32>
  %t = culib.alloc : memref<2x4xf32>
  culib.cast ins(%t16) outs(%t) : memref<2x4xbf16>, memref<2x4xf32>
  %x = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%t, %bias) outs(%x) : memref<2x4xf32>, memref<4xf32>, memref<2x4xf32>
  %d = culib.alloc : memref<2x4xf32>
  culib.elementwise div ins(%x, %sqrt2) outs(%d) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  %e = culib.alloc : memref<2x4xf32>
  culib.elementwise erf ins(%d) outs(%e) : memref<2x4xf32>, memref<2x4xf32>
  %p = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%e, %one) outs(%p) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  %m = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%x, %p) outs(%m) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
  %y = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%m, %half) outs(%y) : memref<2x4xf32>, memref<f32>, memref<2x4xf32>
  return %y : memref<2x4xf32>
}

// Autocast's precision boundaries around a 16-bit matmul: its result cast to
// f32, an f32 bias and GELU, the result cast back to f16. The casts fold
// into the matmul as the bias and the GELU do: it writes f16 from its f32
// sum + bias through the GELU, rounded once.
// CHECK-LABEL: func.func @matmul_casts
// CHECK: %[[Y:.*]] = culib.alloc : memref<2x4xf16>
// CHECK-NEXT: culib.matmul ins(%arg0, %{{.*}}) bias(%{{.*}}) outs(%[[Y]]) {compute_type = f32, epilogue = #culib.epilogue<gelu>} : memref<2x3xf16>, memref<3x4xf16>, memref<4xf32>, memref<2x4xf16>
// CHECK-NOT: culib.cast
// CHECK-NOT: culib.elementwise
// CHECK: return %[[Y]]
// REPORT: remark: culib-fuse-epilogues: 4 activation / bias / residual / cast call(s)
func.func @matmul_casts(%a: memref<2x3xf16>) -> memref<2x4xf16> {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf16> : memref<3x4xf16>
  %bias = culib.weight "bias" dense<-1.0> : tensor<4xf32> : memref<4xf32>
  %t16 = culib.alloc : memref<2x4xf16>
  culib.matmul ins(%a, %b) outs(%t16) {compute_type = f32} : memref<2x3xf16>, memref<3x4xf16>, memref<2x4xf16>
  %t = culib.alloc : memref<2x4xf32>
  culib.cast ins(%t16) outs(%t) : memref<2x4xf16>, memref<2x4xf32>
  %x = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%t, %bias) outs(%x) : memref<2x4xf32>, memref<4xf32>, memref<2x4xf32>
  %g = culib.alloc : memref<2x4xf32>
  culib.elementwise gelu ins(%x) outs(%g) : memref<2x4xf32>, memref<2x4xf32>
  %y = culib.alloc : memref<2x4xf16>
  culib.cast ins(%g) outs(%y) : memref<2x4xf32>, memref<2x4xf16>
  return %y : memref<2x4xf16>
}

// A bf16 convolution (its bias bf16) whose result is cast to f32 for a
// norm: the convolution writes f32, its bias still bf16 (added in f32).
// CHECK-LABEL: func.func @conv_widened
// CHECK: %[[Y:.*]] = culib.alloc : memref<1x3x3x2xf32>
// CHECK-NEXT: culib.conv_fwd ins(%arg0, %{{.*}}) bias(%{{.*}}) outs(%[[Y]]) {{.*}} : memref<1x3x3x2xbf16>, memref<2x1x1x2xbf16>, memref<2xbf16>, memref<1x3x3x2xf32>
// CHECK-NOT: culib.cast
// CHECK: return %[[Y]]
// REPORT: remark: culib-fuse-epilogues: 1 activation / bias / residual / cast call(s)
func.func @conv_widened(%x: memref<1x3x3x2xbf16>) -> memref<1x3x3x2xf32> {
  %w = culib.weight "w" dense<1.0> : tensor<2x1x1x2xbf16> : memref<2x1x1x2xbf16>
  %bias = culib.weight "bias" dense<0.5> : tensor<2xbf16> : memref<2xbf16>
  %t = culib.alloc : memref<1x3x3x2xbf16>
  culib.conv_fwd ins(%x, %w) bias(%bias) outs(%t) {compute_type = f32, dilations = array<i64: 1, 1>, layout = #culib.layout<nhwc>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x3x2xbf16>, memref<2x1x1x2xbf16>, memref<2xbf16>, memref<1x3x3x2xbf16>
  %y = culib.alloc : memref<1x3x3x2xf32>
  culib.cast ins(%t) outs(%y) : memref<1x3x3x2xbf16>, memref<1x3x3x2xf32>
  return %y : memref<1x3x3x2xf32>
}

// Not fusable: a matmul that adds a residual of its own type (C stays
// D's type on every backend); a cast whose input another call reads too; a
// cast to an integer type.
// CHECK-LABEL: func.func @casts_kept
// CHECK: culib.matmul ins(%arg0, %{{.*}}) c(%arg1) outs(%[[T:[^)]*]]) {{.*}} memref<2x4xf16>
// CHECK-NEXT: %{{.*}} = culib.alloc : memref<2x4xf32>
// CHECK-NEXT: culib.cast ins(%[[T]])
// CHECK: culib.matmul ins(%arg0, %{{.*}}) outs(%[[U:[^)]*]]) {{.*}} memref<2x4xf16>
// CHECK: culib.cast ins(%[[U]])
// CHECK: culib.elementwise relu ins(%[[U]])
// CHECK: culib.matmul ins(%arg0, %{{.*}}) outs(%[[V:[^)]*]]) {{.*}} memref<2x4xf16>
// CHECK: culib.cast ins(%[[V]]) {{.*}} memref<2x4xi32>
// REPORT: remark: culib-fuse-epilogues: 0 activation / bias / residual / cast call(s)
func.func @casts_kept(%a: memref<2x3xf16>, %c: memref<2x4xf16>) -> (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf16>, memref<2x4xi32>) {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf16> : memref<3x4xf16>
  %t = culib.alloc : memref<2x4xf16>
  culib.matmul ins(%a, %b) c(%c) outs(%t) {beta = 1.0 : f32, compute_type = f32} : memref<2x3xf16>, memref<3x4xf16>, memref<2x4xf16>, memref<2x4xf16>
  %y = culib.alloc : memref<2x4xf32>
  culib.cast ins(%t) outs(%y) : memref<2x4xf16>, memref<2x4xf32>
  %u = culib.alloc : memref<2x4xf16>
  culib.matmul ins(%a, %b) outs(%u) {compute_type = f32} : memref<2x3xf16>, memref<3x4xf16>, memref<2x4xf16>
  %y2 = culib.alloc : memref<2x4xf32>
  culib.cast ins(%u) outs(%y2) : memref<2x4xf16>, memref<2x4xf32>
  %r = culib.alloc : memref<2x4xf16>
  culib.elementwise relu ins(%u) outs(%r) : memref<2x4xf16>, memref<2x4xf16>
  %v = culib.alloc : memref<2x4xf16>
  culib.matmul ins(%a, %b) outs(%v) {compute_type = f32} : memref<2x3xf16>, memref<3x4xf16>, memref<2x4xf16>
  %y3 = culib.alloc : memref<2x4xi32>
  culib.cast ins(%v) outs(%y3) : memref<2x4xf16>, memref<2x4xi32>
  return %y, %y2, %r, %y3 : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf16>, memref<2x4xi32>
}

// Activations into a matmul (a gated MLP's SiLU, GPT-2's tanh GELU) and a
// GELU into a convolution (ConvNeXt-style blocks written as convolutions).
// CHECK-LABEL: func.func @activations_into_calls
// CHECK: culib.matmul ins(%arg0, %{{.*}}) outs(%[[S:[^)]*]]) {compute_type = f32, epilogue = #culib.epilogue<silu>}
// CHECK: culib.matmul ins(%arg0, %{{.*}}) outs(%[[G:[^)]*]]) {compute_type = f32, epilogue = #culib.epilogue<gelu_tanh>}
// CHECK: culib.conv_fwd ins(%arg1, %{{.*}}) outs(%[[C:[^)]*]]) {activation = #culib.epilogue<gelu>
// CHECK-NOT: culib.elementwise
// CHECK: return %[[S]], %[[G]], %[[C]]
// REPORT: remark: culib-fuse-epilogues: 4 activation / bias / residual / cast call(s)
func.func @activations_into_calls(%a: memref<2x3xf32>, %x: memref<1x2x3x3xf32>) -> (memref<2x4xf32>, memref<2x4xf32>, memref<1x2x3x3xf32>) {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf32> : memref<3x4xf32>
  %t = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%t) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %sig = culib.alloc : memref<2x4xf32>
  culib.elementwise sigmoid ins(%t) outs(%sig) : memref<2x4xf32>, memref<2x4xf32>
  %silu = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%t, %sig) outs(%silu) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
  %u = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%u) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %g = culib.alloc : memref<2x4xf32>
  culib.elementwise gelu_tanh ins(%u) outs(%g) : memref<2x4xf32>, memref<2x4xf32>
  %w = culib.weight "w" dense<1.0> : tensor<2x2x1x1xf32> : memref<2x2x1x1xf32>
  %c = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%x, %w) outs(%c) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  %cg = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise gelu ins(%c) outs(%cg) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  return %silu, %g, %cg : memref<2x4xf32>, memref<2x4xf32>, memref<1x2x3x3xf32>
}

// The casts autocast puts around a pool it keeps in f32 (a squeeze-and-
// excitation block's global average pool): the pool runs on the f16 data
// (summed in f32, rounded once on every backend) and writes the f16 result.
// CHECK-LABEL: func.func @pool_casts
// CHECK: %[[Y:.*]] = culib.alloc : memref<2x1x1x8xf16>
// CHECK-NEXT: culib.pool ins(%arg0) outs(%[[Y]]) {{.*}} : memref<2x4x4x8xf16>, memref<2x1x1x8xf16>
// CHECK-NOT: culib.cast
// CHECK: return %[[Y]]
// REPORT: remark: culib-fuse-epilogues: 2 activation / bias / residual / cast call(s){{.*}}; 1088 intermediate bytes
func.func @pool_casts(%x: memref<2x4x4x8xf16>) -> memref<2x1x1x8xf16> {
  %w = culib.alloc : memref<2x4x4x8xf32>
  culib.cast ins(%x) outs(%w) : memref<2x4x4x8xf16>, memref<2x4x4x8xf32>
  %p = culib.alloc : memref<2x1x1x8xf32>
  culib.pool ins(%w) outs(%p) {layout = #culib.layout<nhwc>, mode = "avg", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, window = array<i64: 4, 4>} : memref<2x4x4x8xf32>, memref<2x1x1x8xf32>
  %y = culib.alloc : memref<2x1x1x8xf16>
  culib.cast ins(%p) outs(%y) : memref<2x1x1x8xf32>, memref<2x1x1x8xf16>
  return %y : memref<2x1x1x8xf16>
}

// Kept: the widened data read by another call too (a training step's pool
// backward), a pool whose result stays f32 (read as f32 elsewhere), and
// casts between different 16-bit types.
// CHECK-LABEL: func.func @pool_casts_kept
// CHECK-COUNT-6: culib.cast
// REPORT: remark: culib-fuse-epilogues: 0 activation / bias / residual / cast call(s)
func.func @pool_casts_kept(%x: memref<2x4x4x8xf16>, %b: memref<2x4x4x8xbf16>) -> (memref<2x1x1x8xf16>, memref<2x4x4x8xf32>, memref<2x1x1x8xf16>, memref<2x1x1x8xf32>, memref<2x1x1x8xf16>) {
  %w = culib.alloc : memref<2x4x4x8xf32>
  culib.cast ins(%x) outs(%w) : memref<2x4x4x8xf16>, memref<2x4x4x8xf32>
  %p = culib.alloc : memref<2x1x1x8xf32>
  culib.pool ins(%w) outs(%p) {layout = #culib.layout<nhwc>, mode = "avg", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, window = array<i64: 4, 4>} : memref<2x4x4x8xf32>, memref<2x1x1x8xf32>
  %y = culib.alloc : memref<2x1x1x8xf16>
  culib.cast ins(%p) outs(%y) : memref<2x1x1x8xf32>, memref<2x1x1x8xf16>
  %w2 = culib.alloc : memref<2x4x4x8xf32>
  culib.cast ins(%x) outs(%w2) : memref<2x4x4x8xf16>, memref<2x4x4x8xf32>
  %p2 = culib.alloc : memref<2x1x1x8xf32>
  culib.pool ins(%w2) outs(%p2) {layout = #culib.layout<nhwc>, mode = "avg", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, window = array<i64: 4, 4>} : memref<2x4x4x8xf32>, memref<2x1x1x8xf32>
  %y2 = culib.alloc : memref<2x1x1x8xf16>
  culib.cast ins(%p2) outs(%y2) : memref<2x1x1x8xf32>, memref<2x1x1x8xf16>
  %w3 = culib.alloc : memref<2x4x4x8xf32>
  culib.cast ins(%b) outs(%w3) : memref<2x4x4x8xbf16>, memref<2x4x4x8xf32>
  %p3 = culib.alloc : memref<2x1x1x8xf32>
  culib.pool ins(%w3) outs(%p3) {layout = #culib.layout<nhwc>, mode = "max", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, window = array<i64: 4, 4>} : memref<2x4x4x8xf32>, memref<2x1x1x8xf32>
  %y3 = culib.alloc : memref<2x1x1x8xf16>
  culib.cast ins(%p3) outs(%y3) : memref<2x1x1x8xf32>, memref<2x1x1x8xf16>
  return %y, %w, %y2, %p2, %y3 : memref<2x1x1x8xf16>, memref<2x4x4x8xf32>, memref<2x1x1x8xf16>, memref<2x1x1x8xf32>, memref<2x1x1x8xf16>
}

// Output scaling: a matmul's result times a constant (on either side), or
// divided by a power of two, becomes the matmul's alpha, applied before its
// one rounding; a bias added after the scaling then folds as well.
// CHECK-LABEL: func.func @matmul_scaled
// CHECK: culib.matmul ins(%arg0, %{{.*}}) outs(%{{.*}}) {alpha = 5.000000e-01 : f32, compute_type = f32}
// CHECK: culib.matmul ins(%arg0, %{{.*}}) outs(%{{.*}}) {alpha = 7.500000e-01 : f32, compute_type = f32}
// CHECK: culib.matmul ins(%arg0, %{{.*}}) bias(%{{.*}}) outs(%{{.*}}) {alpha = 1.250000e-01 : f32, compute_type = f32}
// CHECK-NOT: culib.elementwise
// CHECK: return
// REPORT: remark: culib-fuse-epilogues: 4 activation / bias / residual / cast call(s)
func.func @matmul_scaled(%a: memref<2x3xf16>) -> (memref<2x4xf16>, memref<2x4xf16>, memref<2x4xf16>) {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf16> : memref<3x4xf16>
  %half = culib.weight "half" dense<0.5> : tensor<1xf16> : memref<1xf16>
  %three = culib.weight "three" dense<3.0> : tensor<f16> : memref<f16>
  %eight = culib.weight "eight" dense<8.0> : tensor<1xf16> : memref<1xf16>
  %bias = culib.weight "bias" dense<-1.0> : tensor<4xf16> : memref<4xf16>
  %t = culib.alloc : memref<2x4xf16>
  culib.matmul ins(%a, %b) outs(%t) {compute_type = f32} : memref<2x3xf16>, memref<3x4xf16>, memref<2x4xf16>
  %y = culib.alloc : memref<2x4xf16>
  culib.elementwise mul ins(%t, %half) outs(%y) : memref<2x4xf16>, memref<1xf16>, memref<2x4xf16>
  %u = culib.alloc : memref<2x4xf16>
  culib.matmul ins(%a, %b) outs(%u) {alpha = 0.25 : f32, compute_type = f32} : memref<2x3xf16>, memref<3x4xf16>, memref<2x4xf16>
  %y2 = culib.alloc : memref<2x4xf16>
  culib.elementwise mul ins(%three, %u) outs(%y2) : memref<f16>, memref<2x4xf16>, memref<2x4xf16>
  %v = culib.alloc : memref<2x4xf16>
  culib.matmul ins(%a, %b) outs(%v) {compute_type = f32} : memref<2x3xf16>, memref<3x4xf16>, memref<2x4xf16>
  %s = culib.alloc : memref<2x4xf16>
  culib.elementwise div ins(%v, %eight) outs(%s) : memref<2x4xf16>, memref<1xf16>, memref<2x4xf16>
  %y3 = culib.alloc : memref<2x4xf16>
  culib.elementwise add ins(%s, %bias) outs(%y3) : memref<2x4xf16>, memref<4xf16>, memref<2x4xf16>
  return %y, %y2, %y3 : memref<2x4xf16>, memref<2x4xf16>, memref<2x4xf16>
}

// Kept: a scaling after the bias (it would scale the bias too), a division
// by a constant whose inverse f32 rounds (3), a scale that is not a
// constant, and a scaled product read by another call too.
// CHECK-LABEL: func.func @matmul_scales_kept
// CHECK-COUNT-5: culib.elementwise
// REPORT: remark: culib-fuse-epilogues: 1 activation / bias / residual / cast call(s)
func.func @matmul_scales_kept(%a: memref<2x3xf32>, %k: memref<1xf32>) -> (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>) {
  %b = culib.weight "b" dense<1.0> : tensor<3x4xf32> : memref<3x4xf32>
  %three = culib.weight "three" dense<3.0> : tensor<1xf32> : memref<1xf32>
  %bias = culib.weight "bias" dense<-1.0> : tensor<4xf32> : memref<4xf32>
  %t = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%t) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %tb = culib.alloc : memref<2x4xf32>
  culib.elementwise add ins(%t, %bias) outs(%tb) : memref<2x4xf32>, memref<4xf32>, memref<2x4xf32>
  %y = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%tb, %three) outs(%y) : memref<2x4xf32>, memref<1xf32>, memref<2x4xf32>
  %u = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%u) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %y2 = culib.alloc : memref<2x4xf32>
  culib.elementwise div ins(%u, %three) outs(%y2) : memref<2x4xf32>, memref<1xf32>, memref<2x4xf32>
  %v = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%v) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %y3 = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%v, %k) outs(%y3) : memref<2x4xf32>, memref<1xf32>, memref<2x4xf32>
  %w = culib.alloc : memref<2x4xf32>
  culib.matmul ins(%a, %b) outs(%w) {compute_type = f32} : memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>
  %y4 = culib.alloc : memref<2x4xf32>
  culib.elementwise mul ins(%w, %three) outs(%y4) : memref<2x4xf32>, memref<1xf32>, memref<2x4xf32>
  %y5 = culib.alloc : memref<2x4xf32>
  culib.elementwise relu ins(%w) outs(%y5) : memref<2x4xf32>, memref<2x4xf32>
  return %y, %y2, %y3, %y4, %y5 : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
}
