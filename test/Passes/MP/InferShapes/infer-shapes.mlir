// mp-infer-shapes re-runs every typed op's result-type inference in program
// order and keeps the more refined of the current and the inferred type:
// `?` dims become static, unranked tensors ranked, !mp.unknown a tensor type.
// The function's result types follow the returned values; argument and
// result attributes stay.
// RUN: mp-opt %s --mp-infer-shapes | FileCheck %s
// RUN: mp-opt %s --pass-pipeline='builtin.module(func.func(mp-infer-shapes))' | FileCheck %s

// CHECK-LABEL: func.func @chain(
// CHECK-SAME: %[[X:.*]]: tensor<1x3x8x8xf32> {mp.name = "x"}
// CHECK-SAME: -> (tensor<1x10xf32> {mp.name = "logits"}, tensor<1x4x4x4xi64> {mp.name = "indices"})
func.func @chain(%x: tensor<1x3x8x8xf32> {mp.name = "x"}, %w: tensor<4x3x3x3xf32>, %fc: tensor<10x64xf32>, %b: tensor<10xf32>)
    -> (tensor<*xf32> {mp.name = "logits"}, tensor<*xi64> {mp.name = "indices"}) {
  %none = mp.none
  // CHECK: mp.conv %[[X]], %{{.*}}, %{{.*}} {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  %c = mp.conv %x, %w, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<*xf32>
  // Each op sees its operands already refined.
  // CHECK: mp.relu %{{.*}} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %r = mp.relu %c : (tensor<*xf32>) -> !mp.unknown
  // CHECK: mp.max_pool %{{.*}} {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>)
  %p:2 = mp.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (!mp.unknown) -> (tensor<?x?x?x?xf32>, tensor<*xi64>)
  // CHECK: mp.flatten %{{.*}} : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>
  %f = mp.flatten %p#0 : (tensor<?x?x?x?xf32>) -> tensor<?x?xf32>
  // CHECK: %[[G:.*]] = mp.gemm %{{.*}}, %{{.*}}, %{{.*}} {transB = 1 : i64} : (tensor<1x64xf32>, tensor<10x64xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  %g = mp.gemm %f, %fc, %b {transB = 1 : i64} : (tensor<?x?xf32>, tensor<10x64xf32>, tensor<10xf32>) -> tensor<*xf32>
  // CHECK: return %[[G]], %{{.*}} : tensor<1x10xf32>, tensor<1x4x4x4xi64>
  return %g, %p#1 : tensor<*xf32>, tensor<*xi64>
}

// A declared type that is more refined than the inferred one stays.
// CHECK-LABEL: func.func @keep_refined(
// CHECK-SAME: -> tensor<3x4xf32>
func.func @keep_refined(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // CHECK: mp.relu %{{.*}} : (tensor<?x4xf32>) -> tensor<3x4xf32>
  %r = mp.relu %x : (tensor<?x4xf32>) -> tensor<3x4xf32>
  // CHECK: mp.exp %{{.*}} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %e = mp.exp %r : (tensor<3x4xf32>) -> tensor<?x4xf32>
  return %e : tensor<?x4xf32>
}

// Dynamic dims the operands do not determine stay dynamic.
// CHECK-LABEL: func.func @partial(
// CHECK-SAME: -> (tensor<?x3x5xf32>, tensor<2x?x4xf32>)
func.func @partial(%a: tensor<?x3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<2x1x4xf32>, %d: tensor<?x4xf32>) -> (tensor<*xf32>, tensor<*xf32>) {
  // CHECK: mp.matmul %{{.*}}, %{{.*}} : (tensor<?x3x4xf32>, tensor<4x5xf32>) -> tensor<?x3x5xf32>
  %m = mp.matmul %a, %b : (tensor<?x3x4xf32>, tensor<4x5xf32>) -> tensor<*xf32>
  // CHECK: mp.add %{{.*}}, %{{.*}} : (tensor<2x1x4xf32>, tensor<?x4xf32>) -> tensor<2x?x4xf32>
  %s = mp.add %c, %d : (tensor<2x1x4xf32>, tensor<?x4xf32>) -> tensor<*xf32>
  return %m, %s : tensor<*xf32>, tensor<*xf32>
}

// Constant operands (initializers, mp.constant of any value attribute,
// dense_resource blobs) determine shapes.
// CHECK-LABEL: func.func @constants(
// CHECK-SAME: -> (tensor<6x4xf32>, tensor<2x12xf32>, tensor<24xf32>, tensor<3xi64>)
func.func @constants(%x: tensor<2x3x4xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xi64>) {
  %s1 = mp.initializer "s1" dense<[-1, 4]> : tensor<2xi64>
  %s2 = mp.constant {value_ints = array<i64: 2, -1>} : () -> tensor<2xi64>
  %s3 = mp.initializer "s3" dense_resource<shape_blob> : tensor<1xi64>
  %start = mp.constant {value_int = 0 : i64} : () -> tensor<i64>
  %limit = mp.initializer "limit" dense<5> : tensor<i64>
  %delta = mp.constant {value = dense<2> : tensor<i64>} : () -> tensor<i64>
  // CHECK: mp.reshape %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %r1 = mp.reshape %x, %s1 : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  // CHECK: mp.reshape %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  %r2 = mp.reshape %x, %s2 : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  // CHECK: mp.reshape %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<24xf32>
  %r3 = mp.reshape %x, %s3 : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<*xf32>
  // ceil((5 - 0) / 2) = 3
  // CHECK: mp.range %{{.*}}, %{{.*}}, %{{.*}} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3xi64>
  %range = mp.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<*xi64>
  return %r1, %r2, %r3, %range : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xi64>
}

// Ops in the subgraph regions of generic ops are refined too; the generic op
// itself and other dialects' ops are not changed. mp.split (a variable number
// of results) is refined by its own rule: an equal split without sizes, and
// constant sizes (torch's unbind writes a splat [1, 1, 1]).
// CHECK-LABEL: func.func @regions(
// CHECK-SAME: -> (tensor<*xf32>, tensor<2x3xf32>)
func.func @regions(%c: tensor<i1>, %x: tensor<2x3xf32>) -> (tensor<*xf32>, tensor<*xf32>) {
  // CHECK: mp.onnx_op "" "If" version 13(%{{.*}}) {region_names = ["then_branch", "else_branch"]} subgraphs {
  // CHECK-NEXT: mp.neg %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: mp.abs %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: } : (tensor<i1>) -> tensor<*xf32>
  %if = mp.onnx_op "" "If" version 13 (%c) {region_names = ["then_branch", "else_branch"]} subgraphs {
    %n = mp.neg %x : (tensor<2x3xf32>) -> tensor<*xf32>
    mp.yield %n : tensor<*xf32>
  }, {
    %a = mp.abs %x : (tensor<2x3xf32>) -> !mp.unknown
    mp.yield %a : !mp.unknown
  } : (tensor<i1>) -> tensor<*xf32>
  %none = mp.none
  // CHECK: mp.split %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x3xf32>, none) -> tensor<2x3xf32>
  %s = mp.split %x, %none {axis = 1 : i64} : (tensor<2x3xf32>, none) -> !mp.unknown
  %ones = mp.constant {value = dense<1> : tensor<2xi64>} : () -> tensor<2xi64>
  // CHECK: mp.split %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<1x3xf32>, tensor<1x3xf32>)
  %u:2 = mp.split %x, %ones : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<*xf32>, tensor<*xf32>)
  // CHECK: mp.identity %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %i = mp.identity %x : (tensor<2x3xf32>) -> tensor<*xf32>
  // CHECK: return %{{.*}}, %{{.*}} : tensor<*xf32>, tensor<2x3xf32>
  return %if, %i : tensor<*xf32>, tensor<*xf32>
}

// External functions have no body to refine.
// CHECK-LABEL: func.func private @external(tensor<*xf32>) -> tensor<*xf32>
func.func private @external(tensor<*xf32>) -> tensor<*xf32>

{-#
  dialect_resources: {
    builtin: {
      shape_blob: "0x080000001800000000000000"
    }
  }
#-}
