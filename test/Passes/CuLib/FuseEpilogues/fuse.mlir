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
// REPORT: remark: culib-fuse-epilogues: 1 ReLU / clip / bias call(s) folded into their convolution or matmul; 36 intermediate bytes no longer written
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
// REPORT: remark: culib-fuse-epilogues: 1 ReLU / clip / bias call(s)
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
// REPORT: remark: culib-fuse-epilogues: 0 ReLU / clip / bias call(s)
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
// REPORT: remark: culib-fuse-epilogues: 0 ReLU / clip / bias call(s)
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
// REPORT: remark: culib-fuse-epilogues: 0 ReLU / clip / bias call(s)
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
// REPORT: remark: culib-fuse-epilogues: 1 ReLU / clip / bias call(s){{.*}}; 36 intermediate bytes
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
// REPORT: remark: culib-fuse-epilogues: 0 ReLU / clip / bias call(s)
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
// REPORT: remark: culib-fuse-epilogues: 2 ReLU / clip / bias call(s){{.*}}; 64 intermediate bytes
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

// Not a bias: a column vector (over the rows), and an add of a full tensor.
// CHECK-LABEL: func.func @matmul_add_not_bias
// CHECK: culib.matmul ins(%arg0, %{{.*}}) outs
// CHECK: culib.elementwise add
// CHECK: culib.matmul ins(%arg0, %{{.*}}) outs
// CHECK: culib.elementwise add
// REPORT: remark: culib-fuse-epilogues: 0 ReLU / clip / bias call(s)
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
