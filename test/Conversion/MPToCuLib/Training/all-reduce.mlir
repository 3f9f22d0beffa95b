// convert-mp-to-culib: mp.all_reduce is one culib.all_reduce writing new
// buffers (runtime call comm.all_reduce), its reduction an enum; the
// mp.sync_ranks mark of a data-parallel step's batch norms becomes the
// culib ops' sync_ranks.
// RUN: mp-opt %s -split-input-file --convert-mp-to-culib | FileCheck %s
// RUN: mp-opt %s -split-input-file --convert-mp-to-culib | mp-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @bucket(
// CHECK-SAME: %[[A:[^:]*]]: memref<4x8xf32>, %[[B:[^:]*]]: memref<8xf32>, %[[F:[^:]*]]: memref<1xf32>)
// CHECK: %[[RA:.*]] = culib.alloc : memref<4x8xf32>
// CHECK: %[[RB:.*]] = culib.alloc : memref<8xf32>
// CHECK: culib.all_reduce <mean> ins(%[[A]], %[[B]]) outs(%[[RA]], %[[RB]]) {reduce_type = f16} : memref<4x8xf32>, memref<8xf32> -> memref<4x8xf32>, memref<8xf32>
// CHECK: %[[RF:.*]] = culib.alloc : memref<1xf32>
// CHECK: culib.all_reduce <max> ins(%[[F]]) outs(%[[RF]]) {reduce_type = f32}
// CHECK: return %[[RA]], %[[RB]], %[[RF]]
func.func @bucket(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %f: tensor<1xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<1xf32>) {
  %r:2 = mp.all_reduce %a, %b {reduce_type = f16, reduction = "mean"} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>)
  %m = mp.all_reduce %f {reduce_type = f32, reduction = "max"} : (tensor<1xf32>) -> tensor<1xf32>
  return %r#0, %r#1, %m : tensor<4x8xf32>, tensor<8xf32>, tensor<1xf32>
}

// -----

// CHECK-LABEL: func.func @synced_batch_norm(
// CHECK: culib.batch_norm_training {{.*}}sync_ranks
// CHECK: culib.batch_norm_bwd {{.*}}sync_ranks
func.func @synced_batch_norm(%x: tensor<2x4x3x3xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %dy: tensor<2x4x3x3xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y, %rm, %rv = mp.batch_normalization %x, %s, %b, %m, %v {momentum = 0.9 : f32, mp.sync_ranks, training_mode = 1 : i64} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  %dx, %ds, %db = mp.batch_norm_grad %x, %s, %dy {epsilon = 1.0e-5 : f32, mp.sync_ranks} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<2x4x3x3xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y, %rm, %rv, %dx, %ds, %db : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>
}
