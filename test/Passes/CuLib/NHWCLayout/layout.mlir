// culib-nhwc-layout: convolutions (f16, bf16 and f32 by default) and the ops
// after them that can work channels last go NHWC. Layouts change only where a
// graph input or a filter enters (filters keep their ONNX layout in the plan)
// or an NCHW-only op (or the return) reads an NHWC buffer.
// RUN: mp-opt %s --culib-nhwc-layout | FileCheck %s --check-prefixes=CHECK,F32
// Round trip: the output parses and prints the same.
// RUN: mp-opt %s --culib-nhwc-layout | mp-opt | FileCheck %s --check-prefixes=CHECK,F32
// RUN: mp-opt %s --culib-nhwc-layout="dtypes=f16,bf16" | FileCheck %s --check-prefixes=CHECK,NO32
// RUN: mp-opt %s --culib-nhwc-layout="dtypes=f32" | FileCheck %s --check-prefix=F32
// RUN: mp-opt %s --culib-nhwc-layout="dtypes=none" | FileCheck %s --check-prefix=NONE
// NONE-NOT: nhwc
// NONE-NOT: culib.transpose

// conv -> batch norm -> relu -> max pool -> return, with a softmax (NCHW
// only) reading the relu output.
// CHECK-LABEL: func.func @block
// The weight is untouched; the filter [K=2, C=2, R=1, S=2] and the graph
// input are transposed once, before the convolution.
// CHECK: %[[W:.*]] = culib.weight "w" {{.*}} : tensor<2x2x1x2xf16> : memref<2x2x1x2xf16>
// CHECK: %[[XT:.*]] = culib.alloc : memref<1x4x3x2xf16>
// CHECK-NEXT: culib.transpose ins(%arg0) outs(%[[XT]]) {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %[[WT:.*]] = culib.alloc : memref<2x1x2x2xf16>
// CHECK-NEXT: culib.transpose ins(%[[W]]) outs(%[[WT]]) {perm = array<i64: 0, 2, 3, 1>}
// CHECK: culib.conv_fwd ins(%[[XT]], %[[WT]]) outs(%[[Y:.*]]) {{.*}}layout = #culib.layout<nhwc>{{.*}} : memref<1x4x3x2xf16>, memref<2x1x2x2xf16>, memref<1x4x2x2xf16>
// CHECK: culib.batch_norm_inference ins(%[[Y]], {{.*}}) outs(%[[B:[^)]*]]) {{.*}}layout = #culib.layout<nhwc>{{.*}} : memref<1x4x2x2xf16>, {{.*}}, memref<1x4x2x2xf16>
// CHECK: culib.elementwise relu ins(%[[B]]) outs(%[[R:[^)]*]]) : memref<1x4x2x2xf16>, memref<1x4x2x2xf16>
// The softmax reads a copy transposed back right after the relu.
// CHECK-NEXT: %[[RC:.*]] = culib.alloc : memref<1x2x4x2xf16>
// CHECK-NEXT: culib.transpose ins(%[[R]]) outs(%[[RC]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK: culib.pool ins(%[[R]]) outs(%[[P:[^)]*]]) {layout = #culib.layout<nhwc>, mode = "max"{{.*}} : memref<1x4x2x2xf16>, memref<1x2x2x2xf16>
// CHECK-NEXT: %[[PC:.*]] = culib.alloc : memref<1x2x2x2xf16>
// CHECK-NEXT: culib.transpose ins(%[[P]]) outs(%[[PC]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK: culib.softmax ins(%[[RC]])
// CHECK: return %[[PC]], %{{.*}} : memref<1x2x2x2xf16>, memref<1x2x4x2xf16>
func.func @block(%x: memref<1x2x4x3xf16>) -> (memref<1x2x2x2xf16>, memref<1x2x4x2xf16>) {
  %w = culib.weight "w" dense<[[[[1.0, 2.0]], [[3.0, 4.0]]], [[[5.0, 6.0]], [[7.0, 8.0]]]]> : tensor<2x2x1x2xf16> : memref<2x2x1x2xf16>
  %y = culib.alloc : memref<1x2x4x2xf16>
  culib.conv_fwd ins(%x, %w) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x4x3xf16>, memref<2x2x1x2xf16>, memref<1x2x4x2xf16>
  %s = culib.weight "s" dense<[1.0, 2.0]> : tensor<2xf32> : memref<2xf32>
  %b = culib.alloc : memref<1x2x4x2xf16>
  culib.batch_norm_inference ins(%y, %s, %s, %s, %s) outs(%b) {epsilon = 1.0e-5 : f32} : memref<1x2x4x2xf16>, memref<2xf32>, memref<2xf32>, memref<2xf32>, memref<2xf32>, memref<1x2x4x2xf16>
  %r = culib.alloc : memref<1x2x4x2xf16>
  culib.elementwise relu ins(%b) outs(%r) : memref<1x2x4x2xf16>, memref<1x2x4x2xf16>
  %p = culib.alloc : memref<1x2x2x2xf16>
  culib.pool ins(%r) outs(%p) {mode = "max", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 1>, window = array<i64: 2, 1>} : memref<1x2x4x2xf16>, memref<1x2x2x2xf16>
  %sm = culib.alloc : memref<1x2x4x2xf16>
  culib.softmax ins(%r) outs(%sm) {axis = 1 : i64} : memref<1x2x4x2xf16>, memref<1x2x4x2xf16>
  return %p, %sm : memref<1x2x2x2xf16>, memref<1x2x4x2xf16>
}

// A residual add of two NHWC buffers stays NHWC; a [1, C, 1, 1] operand of
// the clip is transposed like the activations, a scalar needs nothing. Two
// convolutions reading one filter share its transposed copy.
// CHECK-LABEL: func.func @residual
// CHECK: culib.transpose ins(%arg0)
// CHECK-NEXT: %[[WT:.*]] = culib.alloc : memref<2x1x1x2xf16>
// CHECK-NEXT: culib.transpose ins(%{{.*}}) outs(%[[WT]])
// CHECK-NEXT: culib.conv_fwd ins(%{{.*}}, %[[WT]])
// CHECK-NEXT: culib.alloc
// CHECK-NEXT: culib.conv_fwd ins(%{{.*}}, %[[WT]])
// CHECK: culib.elementwise add ins(%{{.*}}, %{{.*}}) outs(%[[SUM:[^)]*]]) : memref<1x3x3x2xf16>, memref<1x3x3x2xf16>, memref<1x3x3x2xf16>
// CHECK: %[[BT:.*]] = culib.alloc : memref<1x1x1x2xf16>
// CHECK-NEXT: culib.transpose ins(%{{.*}}) outs(%[[BT]]) {perm = array<i64: 0, 2, 3, 1>}
// CHECK: culib.elementwise clip ins(%[[SUM]], %[[BT]], %{{.*}}) outs({{.*}}) : memref<1x3x3x2xf16>, memref<1x1x1x2xf16>, memref<f16>, memref<1x3x3x2xf16>
// CHECK: culib.transpose
// CHECK-SAME: perm = array<i64: 0, 3, 1, 2>
// CHECK-NOT: culib.transpose
// CHECK: return
func.func @residual(%x: memref<1x2x3x3xf16>) -> memref<1x2x3x3xf16> {
  %w = culib.weight "w" dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]> : tensor<2x2x1x1xf16> : memref<2x2x1x1xf16>
  %a = culib.alloc : memref<1x2x3x3xf16>
  culib.conv_fwd ins(%x, %w) outs(%a) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf16>, memref<2x2x1x1xf16>, memref<1x2x3x3xf16>
  %c = culib.alloc : memref<1x2x3x3xf16>
  culib.conv_fwd ins(%a, %w) outs(%c) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf16>, memref<2x2x1x1xf16>, memref<1x2x3x3xf16>
  %sum = culib.alloc : memref<1x2x3x3xf16>
  culib.elementwise add ins(%a, %c) outs(%sum) : memref<1x2x3x3xf16>, memref<1x2x3x3xf16>, memref<1x2x3x3xf16>
  %bias = culib.weight "bias" dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf16> : memref<1x2x1x1xf16>
  %two = culib.weight "two" dense<2.0> : tensor<f16> : memref<f16>
  %out = culib.alloc : memref<1x2x3x3xf16>
  culib.elementwise clip ins(%sum, %bias, %two) outs(%out) : memref<1x2x3x3xf16>, memref<1x2x1x1xf16>, memref<f16>, memref<1x2x3x3xf16>
  return %out : memref<1x2x3x3xf16>
}

// f32 convolutions stay NCHW when dtypes leaves f32 out; a pool with indices
// (ONNX's NCHW indices) stays NCHW and reads a transposed copy.
// NO32-LABEL: func.func @f32_conv
// NO32-NOT: nhwc
// NO32-NOT: culib.transpose
// NO32: return
// F32-LABEL: func.func @f32_conv
// F32: culib.conv_fwd {{.*}}layout = #culib.layout<nhwc>
// F32: culib.transpose {{.*}}perm = array<i64: 0, 3, 1, 2>
// F32: culib.pool ins({{.*}}) outs({{.*}}) indices({{.*}}) {mode = "max"
// F32-NOT: nhwc
// F32: return
func.func @f32_conv(%x: memref<1x1x2x2xf32>) -> (memref<1x1x1x1xf32>, memref<1x1x1x1xi64>) {
  %w = culib.weight "w" dense<1.0> : tensor<1x1x1x1xf32> : memref<1x1x1x1xf32>
  %y = culib.alloc : memref<1x1x2x2xf32>
  culib.conv_fwd ins(%x, %w) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x1x2x2xf32>, memref<1x1x1x1xf32>, memref<1x1x2x2xf32>
  %p = culib.alloc : memref<1x1x1x1xf32>
  %i = culib.alloc : memref<1x1x1x1xi64>
  culib.pool ins(%y) outs(%p) indices(%i) {mode = "max", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>} : memref<1x1x2x2xf32>, memref<1x1x1x1xf32>, memref<1x1x1x1xi64>
  return %p, %i : memref<1x1x1x1xf32>, memref<1x1x1x1xi64>
}

// A training step's backward calls go channels last with the forward ones:
// the data gradient of a convolution (conv_bwd_data), its weight gradient
// [K, R, S, C] (transposed back for its NCHW reader, here the return),
// pooling and batch norm backward. A constant that is one value
// everywhere (here zeros, for relu's gradient) is re-shaped, not
// transposed.
// CHECK-LABEL: func.func @backward
// CHECK: culib.conv_fwd ins(%{{.*}}, %{{.*}}) outs(%[[Y:[^)]*]]) {{.*}}layout = #culib.layout<nhwc>
// CHECK: %[[ZERO:.*]] = culib.weight "zero" dense<0.000000e+00> : tensor<2x5x5x4xf16> : memref<2x5x5x4xf16>
// CHECK: culib.elementwise where ins(%{{.*}}, %{{.*}}, %[[ZERO]]) outs(%[[DR:[^)]*]]) : memref<2x5x5x4xi1>, memref<2x5x5x4xf16>, memref<2x5x5x4xf16>, memref<2x5x5x4xf16>
// CHECK: culib.batch_norm_bwd ins(%[[Y]], %{{.*}}, %[[DR]]) outs(%[[DB:[^,]*]], {{.*}}layout = #culib.layout<nhwc>
// CHECK: culib.pool_bwd ins(%[[Y]], %{{.*}}) outs(%{{.*}}) {{.*}}layout = #culib.layout<nhwc>
// CHECK: culib.conv_bwd_filter ins(%{{.*}}, %[[DB]]) outs(%[[DW:[^)]*]]) {{.*}}layout = #culib.layout<nhwc>{{.*}} : memref<2x5x5x3xf16>, memref<2x5x5x4xf16>, memref<4x1x1x3xf16>
// CHECK-NEXT: %[[DWC:.*]] = culib.alloc : memref<4x3x1x1xf16>
// CHECK-NEXT: culib.transpose ins(%[[DW]]) outs(%[[DWC]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK: culib.conv_bwd_data ins(%[[DB]], %{{.*}}) outs(%{{.*}}) {{.*}}layout = #culib.layout<nhwc>{{.*}} : memref<2x5x5x4xf16>, memref<4x1x1x3xf16>, memref<2x5x5x3xf16>
// CHECK: return %[[DWC]]
func.func @backward(%x: memref<2x3x5x5xf16>, %w: memref<4x3x1x1xf16>, %dy: memref<2x4x5x5xf16>, %dp: memref<2x4x2x2xf16>) -> (memref<4x3x1x1xf16>, memref<2x3x5x5xf16>, memref<2x4x5x5xf16>) {
  %y = culib.alloc : memref<2x4x5x5xf16>
  culib.conv_fwd ins(%x, %w) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<2x3x5x5xf16>, memref<4x3x1x1xf16>, memref<2x4x5x5xf16>
  %zero = culib.weight "zero" dense<0.0> : tensor<2x4x5x5xf16> : memref<2x4x5x5xf16>
  %positive = culib.alloc : memref<2x4x5x5xi1>
  culib.elementwise greater ins(%y, %zero) outs(%positive) : memref<2x4x5x5xf16>, memref<2x4x5x5xf16>, memref<2x4x5x5xi1>
  %dr = culib.alloc : memref<2x4x5x5xf16>
  culib.elementwise where ins(%positive, %dy, %zero) outs(%dr) : memref<2x4x5x5xi1>, memref<2x4x5x5xf16>, memref<2x4x5x5xf16>, memref<2x4x5x5xf16>
  %s = culib.weight "s" dense<1.0> : tensor<4xf32> : memref<4xf32>
  %db = culib.alloc : memref<2x4x5x5xf16>
  %ds = culib.alloc : memref<4xf32>
  %dbias = culib.alloc : memref<4xf32>
  culib.batch_norm_bwd ins(%y, %s, %dr) outs(%db, %ds, %dbias) {epsilon = 1.0e-5 : f32} : memref<2x4x5x5xf16>, memref<4xf32>, memref<2x4x5x5xf16>, memref<2x4x5x5xf16>, memref<4xf32>, memref<4xf32>
  %dpool = culib.alloc : memref<2x4x5x5xf16>
  culib.pool_bwd ins(%y, %dp) outs(%dpool) {dilations = array<i64: 1, 1>, mode = "max", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>} : memref<2x4x5x5xf16>, memref<2x4x2x2xf16>, memref<2x4x5x5xf16>
  %dw = culib.alloc : memref<4x3x1x1xf16>
  culib.conv_bwd_filter ins(%x, %db) outs(%dw) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<2x3x5x5xf16>, memref<2x4x5x5xf16>, memref<4x3x1x1xf16>
  %dx = culib.alloc : memref<2x3x5x5xf16>
  culib.conv_bwd_data ins(%db, %w) outs(%dx) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<2x4x5x5xf16>, memref<4x3x1x1xf16>, memref<2x3x5x5xf16>
  return %dw, %dx, %dpool : memref<4x3x1x1xf16>, memref<2x3x5x5xf16>, memref<2x4x5x5xf16>
}

// A fire module: two convolutions concatenated along the channels, then a
// slice; concat's axis and slice's starts and steps follow the data, so no
// transposes are needed between them.
// CHECK-LABEL: func.func @fire
// CHECK: culib.concat ins(%{{.*}}, %{{.*}}) outs(%{{.*}}) {axis = 3 : i64} : memref<1x3x3x2xf16>, memref<1x3x3x2xf16>, memref<1x3x3x4xf16>
// CHECK: culib.slice ins(%{{.*}}) outs(%{{.*}}) {starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 2>} : memref<1x3x3x4xf16>, memref<1x2x2x2xf16>
// CHECK-NEXT: culib.alloc : memref<1x2x2x2xf16>
// CHECK-NEXT: culib.transpose
// CHECK-NOT: culib.transpose
// CHECK: return
func.func @fire(%x: memref<1x2x3x3xf16>, %w1: memref<2x2x1x1xf16>, %w2: memref<2x2x1x1xf16>) -> memref<1x2x2x2xf16> {
  %a = culib.alloc : memref<1x2x3x3xf16>
  culib.conv_fwd ins(%x, %w1) outs(%a) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf16>, memref<2x2x1x1xf16>, memref<1x2x3x3xf16>
  %b = culib.alloc : memref<1x2x3x3xf16>
  culib.conv_fwd ins(%x, %w2) outs(%b) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf16>, memref<2x2x1x1xf16>, memref<1x2x3x3xf16>
  %c = culib.alloc : memref<1x4x3x3xf16>
  culib.concat ins(%a, %b) outs(%c) {axis = 1 : i64} : memref<1x2x3x3xf16>, memref<1x2x3x3xf16>, memref<1x4x3x3xf16>
  %s = culib.alloc : memref<1x2x2x2xf16>
  culib.slice ins(%c) outs(%s) {starts = array<i64: 0, 1, 0, 1>, steps = array<i64: 1, 2, 1, 1>} : memref<1x4x3x3xf16>, memref<1x2x2x2xf16>
  return %s : memref<1x2x2x2xf16>
}

// tf2onnx's explicit Pad before a convolution, and torch's all-zero Pad
// before an average pool (a same-shape copy after convert-mp-to-culib): the
// pads are permuted with the data (begins then ends, [N, H, W, C]) and the
// copy copies NHWC bytes, so neither needs a transpose.
// CHECK-LABEL: func.func @pads
// CHECK: culib.pad ins(%{{.*}}) outs(%{{.*}}) {mode = "reflect", pads = array<i64: 0, 1, 2, 0, 0, 1, 2, 0>} : memref<1x3x3x2xf16>, memref<1x5x7x2xf16>
// CHECK: culib.copy ins(%{{.*}}) outs(%{{.*}}) : memref<1x5x7x2xf16>, memref<1x5x7x2xf16>
// CHECK: culib.pool ins(%{{.*}}) outs(%{{.*}}) {layout = #culib.layout<nhwc>, mode = "avg"
// CHECK-NEXT: culib.alloc : memref<1x2x2x3xf16>
// CHECK-NEXT: culib.transpose
// CHECK-NOT: culib.transpose
// CHECK: return
func.func @pads(%x: memref<1x2x3x3xf16>, %w: memref<2x2x1x1xf16>) -> memref<1x2x2x3xf16> {
  %a = culib.alloc : memref<1x2x3x3xf16>
  culib.conv_fwd ins(%x, %w) outs(%a) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf16>, memref<2x2x1x1xf16>, memref<1x2x3x3xf16>
  %p = culib.alloc : memref<1x2x5x7xf16>
  culib.pad ins(%a) outs(%p) {mode = "reflect", pads = array<i64: 0, 0, 1, 2, 0, 0, 1, 2>} : memref<1x2x3x3xf16>, memref<1x2x5x7xf16>
  %c = culib.alloc : memref<1x2x5x7xf16>
  culib.copy ins(%p) outs(%c) : memref<1x2x5x7xf16>, memref<1x2x5x7xf16>
  %q = culib.alloc : memref<1x2x2x3xf16>
  culib.pool ins(%c) outs(%q) {mode = "avg", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>} : memref<1x2x5x7xf16>, memref<1x2x2x3xf16>
  return %q : memref<1x2x2x3xf16>
}

// A copy that reshapes stays channels first: its reader gets the NCHW
// bytes back.
// CHECK-LABEL: func.func @reshaping_copy
// CHECK: culib.conv_fwd {{.*}}layout = #culib.layout<nhwc>
// CHECK: culib.transpose
// CHECK: culib.copy ins(%{{.*}}) outs(%{{.*}}) : memref<1x2x3x3xf16>, memref<1x18xf16>
func.func @reshaping_copy(%x: memref<1x2x3x3xf16>, %w: memref<2x2x1x1xf16>) -> memref<1x18xf16> {
  %a = culib.alloc : memref<1x2x3x3xf16>
  culib.conv_fwd ins(%x, %w) outs(%a) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf16>, memref<2x2x1x1xf16>, memref<1x2x3x3xf16>
  %c = culib.alloc : memref<1x18xf16>
  culib.copy ins(%a) outs(%c) : memref<1x2x3x3xf16>, memref<1x18xf16>
  return %c : memref<1x18xf16>
}

// A ConvNeXt block: the exporter's permute to channels last after the
// depthwise convolution, a channels-last body (here a relu), its permute
// back to channels first, a per-channel scale [C, 1, 1] and the residual
// add, then the next convolution. The permute back goes (its NHWC result is
// its input: the scale reads the body's output), the scale is copied into
// its NHWC shape [1, 1, 1, C], and the add and the next convolution read
// NHWC buffers: the only transposes left are the graph input's, the
// filters' and the NHWC layout's own before the exporter's permute (which
// culib-alias-reshapes folds).
// F32-LABEL: func.func @permute_back
// F32: culib.conv_fwd ins(%{{.*}}, %{{.*}}) outs(%[[C:[^)]*]]) {{.*}}layout = #culib.layout<nhwc>
// F32: culib.transpose ins(%[[C]]) outs(%[[CC:[^)]*]]) {perm = array<i64: 0, 3, 1, 2>}
// F32: culib.transpose ins(%[[CC]]) outs(%[[P:[^)]*]]) {perm = array<i64: 0, 2, 3, 1>}
// F32: culib.elementwise relu ins(%[[P]]) outs(%[[E:[^)]*]]) : memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
// F32: %[[S:.*]] = culib.alloc : memref<1x1x1x2xf32>
// F32-NEXT: culib.copy ins(%{{.*}}) outs(%[[S]]) : memref<2x1x1xf32>, memref<1x1x1x2xf32>
// F32-NEXT: culib.elementwise mul ins(%[[S]], %[[E]]) outs(%[[M:[^)]*]]) : memref<1x1x1x2xf32>, memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
// F32-NEXT: culib.alloc
// F32-NEXT: culib.elementwise add ins(%[[M]], %[[C]]) outs(%[[A:[^)]*]]) : memref<1x3x3x2xf32>, memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
// F32-NOT: culib.transpose ins(%[[A]])
// F32: culib.conv_fwd ins(%[[A]], %{{.*}}) {{.*}}layout = #culib.layout<nhwc>
// F32: return
// NONE-LABEL: func.func @permute_back
// NONE: culib.transpose ins(%{{.*}}) outs(%{{.*}}) {perm = array<i64: 0, 3, 1, 2>}
func.func @permute_back(%x: memref<1x2x3x3xf32>) -> memref<1x2x3x3xf32> {
  %w = culib.weight "w" dense<1.0> : tensor<2x1x1x1xf32> : memref<2x1x1x1xf32>
  %c = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%x, %w) outs(%c) {compute_type = f32, dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x1x1x1xf32>, memref<1x2x3x3xf32>
  %p = culib.alloc : memref<1x3x3x2xf32>
  culib.transpose ins(%c) outs(%p) {perm = array<i64: 0, 2, 3, 1>} : memref<1x2x3x3xf32>, memref<1x3x3x2xf32>
  %e = culib.alloc : memref<1x3x3x2xf32>
  culib.elementwise relu ins(%p) outs(%e) : memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
  %q = culib.alloc : memref<1x2x3x3xf32>
  culib.transpose ins(%e) outs(%q) {perm = array<i64: 0, 3, 1, 2>} : memref<1x3x3x2xf32>, memref<1x2x3x3xf32>
  %scale = culib.weight "layer_scale" dense<[[[0.5]], [[2.0]]]> : tensor<2x1x1xf32> : memref<2x1x1xf32>
  %m = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise mul ins(%scale, %q) outs(%m) : memref<2x1x1xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %a = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise add ins(%m, %c) outs(%a) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %y = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%a, %w) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x1x1x1xf32>, memref<1x2x3x3xf32>
  return %y : memref<1x2x3x3xf32>
}

// Permutes to channels first that stay: one read only by an NCHW-only op
// (the softmax), one whose input is written again after it (its NHWC
// result could not be that input), and a graph input's permute read by a
// convolution of a type left channels first (NO32; with f32 channels last
// the convolution reads the graph input itself).
// CHECK-LABEL: func.func @permutes_kept
// CHECK: culib.transpose ins(%arg0) outs(%[[Q:[^)]*]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK: culib.softmax ins(%[[Q]])
// CHECK: culib.transpose ins(%[[E:[^)]*]]) outs(%{{.*}}) {perm = array<i64: 0, 3, 1, 2>}
// CHECK: culib.elementwise neg ins(%{{.*}}) outs(%[[E]])
// F32-NOT: culib.transpose ins(%arg1)
// F32: culib.conv_fwd ins(%arg1, %{{.*}}) {{.*}}layout = #culib.layout<nhwc>
// NO32: culib.transpose ins(%arg1) outs(%[[R:[^)]*]]) {perm = array<i64: 0, 3, 1, 2>}
// NO32: culib.conv_fwd ins(%[[R]], %{{.*}})
func.func @permutes_kept(%x: memref<1x3x3x2xf32>, %x2: memref<1x3x3x2xf32>) -> (memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>) {
  %q = culib.alloc : memref<1x2x3x3xf32>
  culib.transpose ins(%x) outs(%q) {perm = array<i64: 0, 3, 1, 2>} : memref<1x3x3x2xf32>, memref<1x2x3x3xf32>
  %sm = culib.alloc : memref<1x2x3x3xf32>
  culib.softmax ins(%q) outs(%sm) {axis = 1 : i64} : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %e = culib.alloc : memref<1x3x3x2xf32>
  culib.elementwise relu ins(%x) outs(%e) : memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
  %q2 = culib.alloc : memref<1x2x3x3xf32>
  culib.transpose ins(%e) outs(%q2) {perm = array<i64: 0, 3, 1, 2>} : memref<1x3x3x2xf32>, memref<1x2x3x3xf32>
  culib.elementwise neg ins(%x) outs(%e) : memref<1x3x3x2xf32>, memref<1x3x3x2xf32>
  %r = culib.alloc : memref<1x2x3x3xf32>
  culib.elementwise relu ins(%q2) outs(%r) : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
  %w = culib.weight "w" dense<1.0> : tensor<2x2x1x1xf32> : memref<2x2x1x1xf32>
  %r2 = culib.alloc : memref<1x2x3x3xf32>
  culib.transpose ins(%x2) outs(%r2) {perm = array<i64: 0, 3, 1, 2>} : memref<1x3x3x2xf32>, memref<1x2x3x3xf32>
  %y = culib.alloc : memref<1x2x3x3xf32>
  culib.conv_fwd ins(%r2, %w) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  return %sm, %r, %y : memref<1x2x3x3xf32>, memref<1x2x3x3xf32>, memref<1x2x3x3xf32>
}
