// culib-alias-reshapes: a copy that only reshapes becomes a culib.view of
// its input when no value read changes; the memory planner keeps the
// input's bytes while the view is used, and the plan gives both the same
// bytes.
// RUN: mp-opt %s --culib-alias-reshapes | FileCheck %s
// Round trip: the printed form parses back to the same IR.
// RUN: mp-opt %s --culib-alias-reshapes | mp-opt | FileCheck %s
// RUN: mp-opt %s --culib-alias-reshapes=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: mp-opt %s --culib-alias-reshapes --culib-plan-memory | FileCheck %s --check-prefix=MEMORY

// A reduction's kept dims dropped, and a flatten of a weight: both views.
// CHECK-LABEL: func.func @reshapes
// CHECK: %[[W:.*]] = culib.weight "w"
// CHECK: %[[S:.*]] = culib.alloc : memref<1x1x8xf32>
// CHECK: culib.reduce sum ins(%arg0) outs(%[[S]])
// CHECK: %[[V:.*]] = culib.view %[[S]] : memref<1x1x8xf32> to memref<8xf32>
// CHECK: %[[WV:.*]] = culib.view %[[W]] : memref<2x4xf32> to memref<8xf32>
// CHECK: culib.elementwise add ins(%[[V]], %[[WV]])
// CHECK-NOT: culib.copy
// CHECK: return
// REPORT: remark: culib-alias-reshapes: 0 transpose(s) of a transpose read the first's input, 2 copy call(s) made views; 64 bytes no longer copied
// The sum lives until the add that reads its view (not only to the view):
// the add's output cannot take its bytes.
// MEMORY-LABEL: func.func @reshapes
// MEMORY: culib.alloc {offset = [[SUM:[0-9]+]] : i64} : memref<1x1x8xf32>
// MEMORY-NOT: offset = [[SUM]] :
// MEMORY: return
func.func @reshapes(%x: memref<4x2x8xf32>) -> memref<8xf32> {
  %w = culib.weight "w" dense<1.0> : tensor<2x4xf32> : memref<2x4xf32>
  %s = culib.alloc : memref<1x1x8xf32>
  culib.reduce sum ins(%x) outs(%s) {axes = array<i64: 0, 1>, compute_type = f32} : memref<4x2x8xf32>, memref<1x1x8xf32>
  %v = culib.alloc : memref<8xf32>
  culib.copy ins(%s) outs(%v) : memref<1x1x8xf32>, memref<8xf32>
  %wf = culib.alloc : memref<8xf32>
  culib.copy ins(%w) outs(%wf) : memref<2x4xf32>, memref<8xf32>
  %y = culib.alloc : memref<8xf32>
  culib.elementwise add ins(%v, %wf) outs(%y) : memref<8xf32>, memref<8xf32>, memref<8xf32>
  return %y : memref<8xf32>
}

// Copies that stay: the input is written after the copy (the copy keeps
// the old values); the output is written again; the input is a training
// step's state (updated in place).
// CHECK-LABEL: func.func @copies_that_stay
// CHECK-NOT: culib.view
// CHECK: return
// REPORT: remark: culib-alias-reshapes: 0 transpose(s) of a transpose read the first's input, 0 copy call(s) made views
func.func @copies_that_stay(%x: memref<8xf32>) -> (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>) {
  %a = culib.alloc : memref<8xf32>
  culib.elementwise neg ins(%x) outs(%a) : memref<8xf32>, memref<8xf32>
  %b = culib.alloc : memref<2x4xf32>
  culib.copy ins(%a) outs(%b) : memref<8xf32>, memref<2x4xf32>
  culib.elementwise exp ins(%x) outs(%a) : memref<8xf32>, memref<8xf32>
  %c = culib.alloc : memref<2x4xf32>
  culib.copy ins(%a) outs(%c) : memref<8xf32>, memref<2x4xf32>
  culib.elementwise abs ins(%c) outs(%c) : memref<2x4xf32>, memref<2x4xf32>
  %p = culib.state "p" dense<1.0> : tensor<8xf32> : memref<8xf32>
  %d = culib.alloc : memref<2x4xf32>
  culib.copy ins(%p) outs(%d) : memref<8xf32>, memref<2x4xf32>
  return %b, %c, %d : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
}

// Transposes that undo one another (culib-nhwc-layout's transpose back to
// channels first right before an exporter's permute to channels last): the
// second becomes a copy of the first one's input, then a view, and the
// first goes (nothing else reads it). Two that compose to another
// permutation: one transpose of the input.
// CHECK-LABEL: func.func @transpose_pairs
// CHECK-NOT: culib.transpose ins(%arg0) outs(%{{.*}}) {perm = array<i64: 0, 3, 1, 2>}
// CHECK: %[[V:.*]] = culib.view %arg0 : memref<1x2x2x3xf32> to memref<1x2x2x3xf32>
// CHECK: culib.elementwise relu ins(%[[V]])
// CHECK: culib.transpose ins(%arg1) outs(%{{.*}}) {perm = array<i64: 2, 1, 0>} : memref<2x3x4xf32>, memref<4x3x2xf32>
// CHECK-NOT: culib.transpose
// CHECK: return
// REPORT: remark: culib-alias-reshapes: 2 transpose(s) of a transpose read the first's input, 1 copy call(s) made views
func.func @transpose_pairs(%x: memref<1x2x2x3xf32>, %z: memref<2x3x4xf32>) -> (memref<1x2x2x3xf32>, memref<4x3x2xf32>) {
  %a = culib.alloc : memref<1x3x2x2xf32>
  culib.transpose ins(%x) outs(%a) {perm = array<i64: 0, 3, 1, 2>} : memref<1x2x2x3xf32>, memref<1x3x2x2xf32>
  %b = culib.alloc : memref<1x2x2x3xf32>
  culib.transpose ins(%a) outs(%b) {perm = array<i64: 0, 2, 3, 1>} : memref<1x3x2x2xf32>, memref<1x2x2x3xf32>
  %r = culib.alloc : memref<1x2x2x3xf32>
  culib.elementwise relu ins(%b) outs(%r) : memref<1x2x2x3xf32>, memref<1x2x2x3xf32>
  %c = culib.alloc : memref<3x2x4xf32>
  culib.transpose ins(%z) outs(%c) {perm = array<i64: 1, 0, 2>} : memref<2x3x4xf32>, memref<3x2x4xf32>
  %d = culib.alloc : memref<4x3x2xf32>
  culib.transpose ins(%c) outs(%d) {perm = array<i64: 2, 0, 1>} : memref<3x2x4xf32>, memref<4x3x2xf32>
  return %r, %d : memref<1x2x2x3xf32>, memref<4x3x2xf32>
}

// The first transpose stays when its result is read elsewhere, and the
// pair is left alone when its input changes between the two.
// CHECK-LABEL: func.func @transpose_pairs_kept
// CHECK: culib.transpose ins(%arg0) outs(%[[A:.*]]) {perm = array<i64: 1, 0>}
// CHECK: culib.transpose ins(%[[A]])
// CHECK: return
// REPORT: remark: culib-alias-reshapes: 0 transpose(s) of a transpose
func.func @transpose_pairs_kept(%x: memref<2x3xf32>) -> (memref<2x3xf32>, memref<3x2xf32>) {
  %a = culib.alloc : memref<3x2xf32>
  culib.transpose ins(%x) outs(%a) {perm = array<i64: 1, 0>} : memref<2x3xf32>, memref<3x2xf32>
  culib.elementwise neg ins(%x) outs(%x) : memref<2x3xf32>, memref<2x3xf32>
  %b = culib.alloc : memref<2x3xf32>
  culib.transpose ins(%a) outs(%b) {perm = array<i64: 1, 0>} : memref<3x2xf32>, memref<2x3xf32>
  return %b, %a : memref<2x3xf32>, memref<3x2xf32>
}

// A channels-last global pool's output back to channels first ([N, 1, 1, C]
// to [N, C, 1, 1]) and channels first to last of [N, C, 1, 1]: reshapes,
// copies then views. Transposes that stay: one that moves two dims other
// than 1; a one-channel image's ([N, 1, H, W] to [N, H, W, 1], size 1 in a
// dim that a dynamic-shape plan may see other sizes of); a weight's (a
// filter's, folded into its reorder at load).
// CHECK-LABEL: func.func @reshaping_transposes
// CHECK: %[[P:.*]] = culib.alloc : memref<2x1x1x8xf32>
// CHECK: culib.pool ins(%arg0) outs(%[[P]])
// CHECK-NEXT: %[[V:.*]] = culib.view %[[P]] : memref<2x1x1x8xf32> to memref<2x8x1x1xf32>
// CHECK: %[[B:.*]] = culib.view %arg2 : memref<2x8x1x1xf32> to memref<2x1x1x8xf32>
// CHECK: culib.transpose ins(%arg1) outs(%{{.*}}) {perm = array<i64: 0, 2, 3, 1>}
// CHECK: culib.transpose ins(%arg0) outs(%{{.*}}) {perm = array<i64: 0, 3, 1, 2>}
// CHECK: culib.transpose ins(%{{.*}}) outs(%{{.*}}) {perm = array<i64: 0, 2, 3, 1>} : memref<4x1x1x1xf32>, memref<4x1x1x1xf32>
// CHECK-NOT: culib.copy
// CHECK: return %[[V]], %[[B]]
// REPORT: remark: culib-alias-reshapes: 0 transpose(s) of a transpose read the first's input, 2 copy call(s) made views; 128 bytes no longer copied; 2 transpose(s) of [N, 1, 1, C] or [N, C, 1, 1] made copies
func.func @reshaping_transposes(%x: memref<2x3x3x8xf32>, %g: memref<2x1x3x3xf32>, %n: memref<2x8x1x1xf32>) -> (memref<2x8x1x1xf32>, memref<2x1x1x8xf32>, memref<2x3x3x1xf32>, memref<2x8x3x3xf32>, memref<4x1x1x1xf32>) {
  %p = culib.alloc : memref<2x1x1x8xf32>
  culib.pool ins(%x) outs(%p) {layout = #culib.layout<nhwc>, mode = "avg", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, window = array<i64: 3, 3>} : memref<2x3x3x8xf32>, memref<2x1x1x8xf32>
  %pt = culib.alloc : memref<2x8x1x1xf32>
  culib.transpose ins(%p) outs(%pt) {perm = array<i64: 0, 3, 1, 2>} : memref<2x1x1x8xf32>, memref<2x8x1x1xf32>
  %back = culib.alloc : memref<2x1x1x8xf32>
  culib.transpose ins(%n) outs(%back) {perm = array<i64: 0, 2, 3, 1>} : memref<2x8x1x1xf32>, memref<2x1x1x8xf32>
  %gt = culib.alloc : memref<2x3x3x1xf32>
  culib.transpose ins(%g) outs(%gt) {perm = array<i64: 0, 2, 3, 1>} : memref<2x1x3x3xf32>, memref<2x3x3x1xf32>
  %xt = culib.alloc : memref<2x8x3x3xf32>
  culib.transpose ins(%x) outs(%xt) {perm = array<i64: 0, 3, 1, 2>} : memref<2x3x3x8xf32>, memref<2x8x3x3xf32>
  %w = culib.weight "w" dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]]]> : tensor<4x1x1x1xf32> : memref<4x1x1x1xf32>
  %wt = culib.alloc : memref<4x1x1x1xf32>
  culib.transpose ins(%w) outs(%wt) {perm = array<i64: 0, 2, 3, 1>} : memref<4x1x1x1xf32>, memref<4x1x1x1xf32>
  return %pt, %back, %gt, %xt, %wt : memref<2x8x1x1xf32>, memref<2x1x1x8xf32>, memref<2x3x3x1xf32>, memref<2x8x3x3xf32>, memref<4x1x1x1xf32>
}
