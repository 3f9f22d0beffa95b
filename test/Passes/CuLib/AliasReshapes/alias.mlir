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
// REPORT: remark: culib-alias-reshapes: 2 copy call(s) made views; 64 bytes no longer copied
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
// REPORT: remark: culib-alias-reshapes: 0 copy call(s) made views
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
