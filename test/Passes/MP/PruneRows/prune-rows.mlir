// mp-prune-rows: a slice of one axis (a Gather of one constant index
// becomes one) moves up through the ops that compute each index of that axis
// from the same index of their operands, while every reader of the value
// takes the same slice.
// RUN: mp-opt %s --mp-prune-rows --split-input-file | FileCheck %s
// Round trip: the output parses and prints the same.
// RUN: mp-opt %s --mp-prune-rows --split-input-file | mp-opt --split-input-file | FileCheck %s

// A [CLS] classifier: token 0 of a layer norm's centring (a reduction over
// the last axis), a residual add and an MLP (matmuls' rows, a bias broadcast
// along the tokens, an erf). Every value on the way is read only there, so
// the slice reaches the graph input, once for both of its readers.
// CHECK-LABEL: func.func @cls_token(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x5x4xf32>
// CHECK: %[[ROW:.*]] = mp.slice %[[X]], {{.*}} -> tensor<2x1x4xf32>
// CHECK-NOT: mp.slice
// CHECK: mp.matmul %[[ROW]], %{{.*}} -> tensor<2x1x8xf32>
// CHECK: mp.erf {{.*}} -> tensor<2x1x8xf32>
// CHECK: mp.matmul {{.*}} -> tensor<2x1x4xf32>
// CHECK: mp.add %[[ROW]], {{.*}} -> tensor<2x1x4xf32>
// CHECK: mp.reduce_mean {{.*}} -> tensor<2x1x1xf32>
// CHECK: %[[OUT:.*]] = mp.reshape {{.*}} -> tensor<2x4xf32>
// CHECK-NOT: tensor<2x5x
// CHECK: return %[[OUT]]
func.func @cls_token(%x: tensor<2x5x4xf32>) -> tensor<2x4xf32> {
  %w1 = mp.initializer "w1" dense<0.5> : tensor<4x8xf32>
  %b1 = mp.initializer "b1" dense<0.1> : tensor<8xf32>
  %w2 = mp.initializer "w2" dense<0.25> : tensor<8x4xf32>
  %h = mp.matmul %x, %w1 : (tensor<2x5x4xf32>, tensor<4x8xf32>) -> tensor<2x5x8xf32>
  %hb = mp.add %h, %b1 : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  %e = mp.erf %hb : (tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %m = mp.matmul %e, %w2 : (tensor<2x5x8xf32>, tensor<8x4xf32>) -> tensor<2x5x4xf32>
  %r = mp.add %x, %m : (tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  %mean = mp.reduce_mean %r {axes = array<i64: -1>} : (tensor<2x5x4xf32>) -> tensor<2x5x1xf32>
  %c = mp.sub %r, %mean : (tensor<2x5x4xf32>, tensor<2x5x1xf32>) -> tensor<2x5x4xf32>
  %zero = mp.constant {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %cls = mp.gather %c, %zero {axis = 1 : i64} : (tensor<2x5x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  return %cls : tensor<2x4xf32>
}

// -----

// Attention read at one query: the slice moves through the transposes and
// the head-merging reshape, the probabilities' matmul (its rows), the
// softmax over the keys, the scores' matmul (the queries' rows) and stops
// at the fused projection, whose keys and values are read whole: the
// queries' columns are sliced after their rows.
// CHECK-LABEL: func.func @one_query(
// CHECK: %[[QKV:.*]] = mp.matmul {{.*}} -> tensor<6x2x24xf32>
// CHECK: %[[QROW:.*]] = mp.slice %[[QKV]], {{.*}} -> tensor<1x2x24xf32>
// CHECK: mp.slice %[[QROW]], {{.*}} -> tensor<1x2x8xf32>
// CHECK: mp.slice %[[QKV]], {{.*}} -> tensor<6x2x8xf32>
// CHECK: mp.slice %[[QKV]], {{.*}} -> tensor<6x2x8xf32>
// CHECK: mp.matmul {{.*}} : (tensor<4x1x4xf32>, tensor<4x4x6xf32>) -> tensor<4x1x6xf32>
// CHECK: mp.softmax {{.*}} -> tensor<4x1x6xf32>
// CHECK: mp.matmul {{.*}} : (tensor<4x1x6xf32>, tensor<4x6x4xf32>) -> tensor<4x1x4xf32>
// CHECK: mp.reshape {{.*}} -> tensor<2x8xf32>
// CHECK: return
func.func @one_query(%x: tensor<6x2x8xf32>) -> tensor<2x8xf32> {
  %w = mp.initializer "w" dense<0.5> : tensor<8x24xf32>
  %qkv = mp.matmul %x, %w : (tensor<6x2x8xf32>, tensor<8x24xf32>) -> tensor<6x2x24xf32>
  %none = mp.none
  %axis2 = mp.constant {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
  %c0 = mp.constant {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %c8 = mp.constant {value = dense<[8]> : tensor<1xi64>} : () -> tensor<1xi64>
  %c16 = mp.constant {value = dense<[16]> : tensor<1xi64>} : () -> tensor<1xi64>
  %c24 = mp.constant {value = dense<[24]> : tensor<1xi64>} : () -> tensor<1xi64>
  %q = mp.slice %qkv, %c0, %c8, %axis2, %none : (tensor<6x2x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<6x2x8xf32>
  %k = mp.slice %qkv, %c8, %c16, %axis2, %none : (tensor<6x2x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<6x2x8xf32>
  %v = mp.slice %qkv, %c16, %c24, %axis2, %none : (tensor<6x2x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<6x2x8xf32>
  %heads = mp.constant {value = dense<[6, 4, 4]> : tensor<3xi64>} : () -> tensor<3xi64>
  %qh = mp.reshape %q, %heads : (tensor<6x2x8xf32>, tensor<3xi64>) -> tensor<6x4x4xf32>
  %kh = mp.reshape %k, %heads : (tensor<6x2x8xf32>, tensor<3xi64>) -> tensor<6x4x4xf32>
  %vh = mp.reshape %v, %heads : (tensor<6x2x8xf32>, tensor<3xi64>) -> tensor<6x4x4xf32>
  %qt = mp.transpose %qh {perm = array<i64: 1, 0, 2>} : (tensor<6x4x4xf32>) -> tensor<4x6x4xf32>
  %kt = mp.transpose %kh {perm = array<i64: 1, 2, 0>} : (tensor<6x4x4xf32>) -> tensor<4x4x6xf32>
  %vt = mp.transpose %vh {perm = array<i64: 1, 0, 2>} : (tensor<6x4x4xf32>) -> tensor<4x6x4xf32>
  %s = mp.matmul %qt, %kt : (tensor<4x6x4xf32>, tensor<4x4x6xf32>) -> tensor<4x6x6xf32>
  %p = mp.softmax %s {axis = -1 : i64} : (tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  %o = mp.matmul %p, %vt : (tensor<4x6x6xf32>, tensor<4x6x4xf32>) -> tensor<4x6x4xf32>
  %ot = mp.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<4x6x4xf32>) -> tensor<6x4x4xf32>
  %merged = mp.constant {value = dense<[12, 8]> : tensor<2xi64>} : () -> tensor<2xi64>
  %om = mp.reshape %ot, %merged : (tensor<6x4x4xf32>, tensor<2xi64>) -> tensor<12x8xf32>
  %rows = mp.constant {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
  %first = mp.slice %om, %c0, %rows, %c0, %none : (tensor<12x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x8xf32>
  return %first : tensor<2x8xf32>
}

// -----

// Nothing moves where an index of the axis depends on others (a softmax
// along it, a matmul's columns) or where the value is also read whole.
// CHECK-LABEL: func.func @rows_that_stay(
// CHECK: mp.softmax %arg0 {{.*}} -> tensor<3x4xf32>
// CHECK: mp.slice {{.*}} -> tensor<1x4xf32>
// CHECK: mp.matmul %arg0, %{{.*}} -> tensor<3x5xf32>
// CHECK: mp.gather {{.*}} -> tensor<3xf32>
// CHECK: mp.relu %arg0 {{.*}} -> tensor<3x4xf32>
// CHECK: mp.slice {{.*}} -> tensor<1x4xf32>
// CHECK: return
func.func @rows_that_stay(%x: tensor<3x4xf32>) -> (tensor<1x4xf32>, tensor<3xf32>, tensor<1x4xf32>, tensor<3x4xf32>) {
  %none = mp.none
  %c0 = mp.constant {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %c1 = mp.constant {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %sm = mp.softmax %x {axis = 0 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %a = mp.slice %sm, %c0, %c1, %c0, %none : (tensor<3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x4xf32>
  %w = mp.initializer "w" dense<0.5> : tensor<4x5xf32>
  %m = mp.matmul %x, %w : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %two = mp.constant {value = dense<2> : tensor<i64>} : () -> tensor<i64>
  %b = mp.gather %m, %two {axis = 1 : i64} : (tensor<3x5xf32>, tensor<i64>) -> tensor<3xf32>
  %r = mp.relu %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %d = mp.slice %r, %c0, %c1, %c0, %none : (tensor<3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x4xf32>
  return %a, %b, %d, %r : tensor<1x4xf32>, tensor<3xf32>, tensor<1x4xf32>, tensor<3x4xf32>
}
