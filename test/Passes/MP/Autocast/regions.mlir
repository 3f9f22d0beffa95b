// Control flow: ops inside the subgraphs of If/Loop (kept as mp.onnx_op) are
// coloured with the rest of the function; values crossing a region's edge
// keep their types (the generic op and mp.yield read what they read before),
// and a cast of an outer value is placed where it dominates its uses inside.
// RUN: mp-opt %s --mp-autocast | FileCheck %s
// RUN: mp-opt %s --mp-autocast | mp-opt | FileCheck %s

// CHECK-LABEL: func.func @if_branches(
// CHECK: %[[XH:.*]] = mp.cast %arg1 {{.*}}to = 10
// CHECK: mp.onnx_op "" "If" version 13(%arg0)
// CHECK: %[[M:.*]] = mp.matmul %[[XH]], %[[XH]] {{.*}}-> tensor<4x4xf16>
// CHECK: %[[R:.*]] = mp.relu %[[M]] : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK: %[[M2:.*]] = mp.matmul %[[R]], %[[XH]] {{.*}}-> tensor<4x4xf16>
// CHECK: %[[BACK:.*]] = mp.cast %[[M2]] {{.*}}to = 1 : i64{{.*}} -> tensor<4x4xf32>
// CHECK: mp.yield %[[BACK]] : tensor<4x4xf32>
// CHECK: }, {
// CHECK: %[[S:.*]] = mp.softmax %arg1 {{.*}}-> tensor<4x4xf32>
// CHECK: mp.yield %[[S]] : tensor<4x4xf32>
// CHECK: } : (tensor<i1>) -> tensor<4x4xf32>
func.func @if_branches(%c: tensor<i1>, %x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = mp.onnx_op "" "If" version 13 (%c) {region_names = ["then_branch", "else_branch"]} subgraphs {
    %m = mp.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("then/mm")
    %r = mp.relu %m : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("then/relu")
    %m2 = mp.matmul %r, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("then/mm2")
    mp.yield %m2 : tensor<4x4xf32>
  }, {
    %s = mp.softmax %x {axis = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("else/softmax")
    mp.yield %s : tensor<4x4xf32>
  } : (tensor<i1>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// A loop body's block arguments keep their types; the matmul inside casts
// them where the body starts.
// CHECK-LABEL: func.func @loop_body(
// CHECK: ^bb0(%[[I:.*]]: tensor<i64>, %[[COND:.*]]: tensor<i1>, %[[V:.*]]: tensor<4x4xf32>):
// CHECK-NEXT: %[[VH:.*]] = mp.cast %[[V]] {{.*}}to = 10
// CHECK: mp.matmul %[[VH]], %[[VH]]
func.func @loop_body(%n: tensor<i64>, %c: tensor<i1>, %x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = mp.onnx_op "" "Loop" version 16 (%n, %c, %x) {region_names = ["body"]} subgraphs {
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %v: tensor<4x4xf32>):
    %m = mp.matmul %v, %v : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("body/mm")
    mp.yield %cond, %m : tensor<i1>, tensor<4x4xf32>
  } : (tensor<i64>, tensor<i1>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
