// mp-autocast's colouring rules, one function per rule.
// RUN: mp-opt %s --mp-autocast --split-input-file --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s
// Round trip: the rewritten IR parses and prints the same.
// RUN: mp-opt %s --mp-autocast --split-input-file --mlir-print-debuginfo | mp-opt --split-input-file --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s

// ALLOW: a matmul runs in f16 with fp32 accumulation; the graph input and
// output keep f32, so one cast goes in and one comes out.
// CHECK-LABEL: func.func @allow(
// CHECK-SAME: %[[A:arg[0-9]+]]: tensor<4x8xf32>{{.*}}%[[B:arg[0-9]+]]: tensor<8x16xf32>{{.*}}) -> tensor<4x16xf32>
// CHECK-DAG: %[[AH:.*]] = mp.cast %[[A]] {mp.outputs = ["a/f16"], to = 10 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf16> loc("a/CastTo_f16")
// CHECK-DAG: %[[BH:.*]] = mp.cast %[[B]] {{.*}}to = 10 : i64{{.*}} -> tensor<8x16xf16>
// CHECK: %[[M:.*]] = mp.matmul %[[AH]], %[[BH]] {mp.accumulation_type = f32{{.*}}} : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
// CHECK: %[[MF:.*]] = mp.cast %[[M]] {{.*}}to = 1 : i64{{.*}} -> tensor<4x16xf32>
// CHECK: return %[[MF]] : tensor<4x16xf32>
func.func @allow(%a: tensor<4x8xf32> {mp.name = "a"}, %b: tensor<8x16xf32> {mp.name = "b"}) -> tensor<4x16xf32> {
  %m = mp.matmul %a, %b {mp.outputs = ["m"]} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("mm")
  return %m : tensor<4x16xf32>
}

// -----

// INFER between two ALLOW ops goes low: no cast between the matmuls.
// CHECK-LABEL: func.func @infer_between_allow(
// CHECK: %[[M1:.*]] = mp.matmul {{.*}} -> tensor<4x8xf16>
// CHECK-NEXT: %[[R:.*]] = mp.relu %[[M1]] : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT: %[[M2:.*]] = mp.matmul %[[R]], %{{.*}} -> tensor<4x8xf16>
func.func @infer_between_allow(%a: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %m1 = mp.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm1")
  %r = mp.relu %m1 : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu")
  %m2 = mp.matmul %r, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm2")
  return %m2 : tensor<4x8xf32>
}

// -----

// INFER alone (no low-precision neighbour) stays f32: nothing changes.
// CHECK-LABEL: func.func @infer_alone(
// CHECK-NOT: mp.cast
// CHECK: mp.add %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @infer_alone(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = mp.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("add")
  return %s : tensor<4xf32>
}

// -----

// DENY spreads forward through infer ops that feed other f32 ops: the
// softmax's consumers stay f32 although a matmul follows them; the cast to
// f16 comes right before that matmul.
// CHECK-LABEL: func.func @deny_spreads(
// CHECK: %[[M:.*]] = mp.matmul {{.*}} -> tensor<4x8xf16>
// CHECK: %[[MF:.*]] = mp.cast %[[M]] {{.*}}to = 1 : i64{{.*}} -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = mp.softmax %[[MF]] {{.*}}-> tensor<4x8xf32>
// CHECK: %[[D:.*]] = mp.div %[[S]], %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[E:.*]] = mp.exp %[[D]] {{.*}}-> tensor<4x8xf32>
// CHECK: %[[MUL:.*]] = mp.mul %[[E]], %[[E]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[H:.*]] = mp.cast %[[MUL]] {{.*}}to = 10 : i64
// CHECK: mp.matmul %[[H]]
func.func @deny_spreads(%a: tensor<4x8xf32>, %w: tensor<8x8xf32>, %d: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = mp.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm1")
  %s = mp.softmax %m {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("softmax")
  %q = mp.div %s, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("div")
  %e = mp.exp %q : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("exp")
  %p = mp.mul %e, %e : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("mul")
  %m2 = mp.matmul %p, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm2")
  return %m2 : tensor<4x8xf32>
}

// -----

// CLEAR ops take their neighbours' precision in both directions: the
// transpose before the matmul and the reshape after it go low, so the casts
// sit at the graph's edges.
// CHECK-LABEL: func.func @clear_both_ways(
// CHECK: %[[XH:.*]] = mp.cast %{{.*}}to = 10 : i64{{.*}} -> tensor<8x4xf16>
// CHECK: %[[T:.*]] = mp.transpose %[[XH]] {{.*}}-> tensor<4x8xf16>
// CHECK: %[[M:.*]] = mp.matmul %[[T]], {{.*}}-> tensor<4x8xf16>
// CHECK: %[[R:.*]] = mp.reshape %[[M]], {{.*}}-> tensor<32xf16>
// CHECK: mp.cast %[[R]] {{.*}}to = 1 : i64{{.*}} -> tensor<32xf32>
func.func @clear_both_ways(%x: tensor<8x4xf32>, %w: tensor<8x8xf32>) -> tensor<32xf32> {
  %t = mp.transpose %x {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32> loc("transpose")
  %m = mp.matmul %t, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm")
  %shape = mp.constant {value = dense<[32]> : tensor<1xi64>} : () -> tensor<1xi64>
  %r = mp.reshape %m, %shape : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<32xf32> loc("reshape")
  return %r : tensor<32xf32>
}

// -----

// One cast per value, shared by every consumer; an f32 consumer reads the
// original value.
// CHECK-LABEL: func.func @one_cast_per_value(
// CHECK-COUNT-1: mp.cast %arg0
// CHECK-NOT: mp.cast %arg0
// CHECK: mp.softmax %arg0
func.func @one_cast_per_value(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %a = mp.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("a")
  %b = mp.matmul %x, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("b")
  %c = mp.matmul %b, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("c")
  %s = mp.softmax %x {axis = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("s")
  return %a, %c, %s : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// BatchNormalization follows its input; its scale, bias, mean and variance
// stay f32 (cuDNN's contract), so they need no cast.
// CHECK-LABEL: func.func @batch_norm_statistics(
// CHECK: %[[C:.*]] = mp.conv {{.*}}-> tensor<1x4x6x6xf16>
// CHECK: mp.batch_normalization %[[C]], %arg2, %arg3, %arg4, %arg5 {{.*}}: (tensor<1x4x6x6xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x6x6xf16>, tensor<4xf32>, tensor<4xf32>)
func.func @batch_norm_statistics(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %w2: tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32> {
  %none = mp.none
  %c = mp.conv %x, %w, %none : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32> loc("conv")
  %n, %rm, %rv = mp.batch_normalization %c, %s, %b, %m, %v : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>) loc("bn")
  %c2 = mp.conv %n, %w2, %none : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>, none) -> tensor<1x4x6x6xf32> loc("conv2")
  return %c2 : tensor<1x4x6x6xf32>
}

// -----

// Resize's roi and scales keep f32; its data follows the neighbours.
// CHECK-LABEL: func.func @resize_scales(
// CHECK: mp.resize %{{.*}}, %{{.*}}, %[[SC:.*]], %{{.*}} {{.*}}: (tensor<1x2x4x4xf16>, none, tensor<4xf32>, none) -> tensor<1x2x8x8xf16>
func.func @resize_scales(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>, %scales: tensor<4xf32>) -> tensor<1x2x8x8xf32> {
  %none = mp.none
  %c = mp.conv %x, %w, %none : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32> loc("conv")
  %r = mp.resize %c, %none, %scales, %none {mode = "nearest"} : (tensor<1x2x4x4xf32>, none, tensor<4xf32>, none) -> tensor<1x2x8x8xf32> loc("resize")
  %c2 = mp.conv %r, %w, %none : (tensor<1x2x8x8xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x8x8xf32> loc("conv2")
  return %c2 : tensor<1x2x8x8xf32>
}

// -----

// Shape reads a low-precision value as it is: no cast for it.
// CHECK-LABEL: func.func @shape_reads_any_type(
// CHECK: %[[M:.*]] = mp.matmul {{.*}}-> tensor<4x4xf16>
// CHECK: mp.shape %[[M]] : (tensor<4x4xf16>) -> tensor<2xi64>
func.func @shape_reads_any_type(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<2xi64>) {
  %m = mp.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("mm")
  %s = mp.shape %m : (tensor<4x4xf32>) -> tensor<2xi64> loc("shape")
  return %m, %s : tensor<4x4xf32>, tensor<2xi64>
}
