// culib-fuse-attention: softmax(Q K^T * c + mask) V, as torch's
// MultiheadAttention exports it (Q, K and V sliced from one [L, N, 3E]
// projection, heads split by reshape copies and transposes, merged back
// into [L * N, E]), becomes one culib.attention reading the projection
// through strided views and writing O where its chain ends; the slices,
// copies, transposes, scores, probabilities and constants go.
// RUN: mp-opt %s --culib-fuse-attention | FileCheck %s
// Round trip: the output parses and prints the same.
// RUN: mp-opt %s --culib-fuse-attention | mp-opt | FileCheck %s
// RUN: mp-opt %s --culib-fuse-attention=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// L = 5, N = 2, H = 2 heads of D = 3 (E = 6); Q divided by 2.
// q[n, h, l, d] = qkv[l, n, h * 3 + d]: offset 0, strides 18, 3, 36, 1;
// o[n, h, l, d] = out[l * 2 + n, h * 3 + d]: strides 6, 3, 12, 1.
// CHECK-LABEL: func.func @mha
// CHECK-NEXT: %[[O:.*]] = culib.alloc : memref<10x6xf32>
// CHECK-NEXT: culib.attention ins(%arg0, %arg0, %arg0) outs(%[[O]]) {k_view = array<i64: 6, 18, 3, 36, 1>, o_view = array<i64: 0, 6, 3, 12, 1>, q_view = array<i64: 0, 18, 3, 36, 1>, scale = 5.000000e-01 : f32, shape = array<i64: 2, 2, 5, 5, 3, 3>, v_view = array<i64: 12, 18, 3, 36, 1>} : memref<5x2x18xf32>, memref<5x2x18xf32>, memref<5x2x18xf32>, memref<10x6xf32>
// CHECK-NEXT: return %[[O]]
// REPORT: remark: culib-fuse-attention: 1 attention(s) made one call each, 14 calls fewer; 3680 intermediate bytes no longer written
func.func @mha(%qkv: memref<5x2x18xf32>) -> memref<10x6xf32> {
  %c = culib.weight "sqrt_d" dense<2.0> : tensor<f32> : memref<f32>
  %q0 = culib.alloc : memref<5x2x6xf32>
  culib.slice ins(%qkv) outs(%q0) {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : memref<5x2x18xf32>, memref<5x2x6xf32>
  %k0 = culib.alloc : memref<5x2x6xf32>
  culib.slice ins(%qkv) outs(%k0) {starts = array<i64: 0, 0, 6>, steps = array<i64: 1, 1, 1>} : memref<5x2x18xf32>, memref<5x2x6xf32>
  %v0 = culib.alloc : memref<5x2x6xf32>
  culib.slice ins(%qkv) outs(%v0) {starts = array<i64: 0, 0, 12>, steps = array<i64: 1, 1, 1>} : memref<5x2x18xf32>, memref<5x2x6xf32>
  %q1 = culib.alloc : memref<5x4x3xf32>
  culib.copy ins(%q0) outs(%q1) : memref<5x2x6xf32>, memref<5x4x3xf32>
  %q2 = culib.alloc : memref<4x5x3xf32>
  culib.transpose ins(%q1) outs(%q2) {perm = array<i64: 1, 0, 2>} : memref<5x4x3xf32>, memref<4x5x3xf32>
  %k1 = culib.alloc : memref<5x4x3xf32>
  culib.copy ins(%k0) outs(%k1) : memref<5x2x6xf32>, memref<5x4x3xf32>
  %v1 = culib.alloc : memref<5x4x3xf32>
  culib.copy ins(%v0) outs(%v1) : memref<5x2x6xf32>, memref<5x4x3xf32>
  %v2 = culib.alloc : memref<4x5x3xf32>
  culib.transpose ins(%v1) outs(%v2) {perm = array<i64: 1, 0, 2>} : memref<5x4x3xf32>, memref<4x5x3xf32>
  %qs = culib.alloc : memref<4x5x3xf32>
  culib.elementwise div ins(%q2, %c) outs(%qs) : memref<4x5x3xf32>, memref<f32>, memref<4x5x3xf32>
  %k2 = culib.alloc : memref<4x3x5xf32>
  culib.transpose ins(%k1) outs(%k2) {perm = array<i64: 1, 2, 0>} : memref<5x4x3xf32>, memref<4x3x5xf32>
  %s = culib.alloc : memref<4x5x5xf32>
  culib.matmul ins(%qs, %k2) outs(%s) {compute_type = f32} : memref<4x5x3xf32>, memref<4x3x5xf32>, memref<4x5x5xf32>
  %p = culib.alloc : memref<4x5x5xf32>
  culib.softmax ins(%s) outs(%p) {axis = 2 : i64} : memref<4x5x5xf32>, memref<4x5x5xf32>
  %o = culib.alloc : memref<4x5x3xf32>
  culib.matmul ins(%p, %v2) outs(%o) {compute_type = f32} : memref<4x5x5xf32>, memref<4x5x3xf32>, memref<4x5x3xf32>
  %o1 = culib.alloc : memref<5x4x3xf32>
  culib.transpose ins(%o) outs(%o1) {perm = array<i64: 1, 0, 2>} : memref<4x5x3xf32>, memref<5x4x3xf32>
  %o2 = culib.alloc : memref<10x6xf32>
  culib.copy ins(%o1) outs(%o2) : memref<5x4x3xf32>, memref<10x6xf32>
  return %o2 : memref<10x6xf32>
}

// Four-dim Q, K, V [N, H, L, D] as arguments (no views to follow), K
// transposed by the matmul (trans_b), the scores multiplied by 0.25 and a
// causal mask [1, 1, L, L] added (broadcast: strides 0), in bf16 with the
// casts autocast writes around the f32 softmax: all inside the call.
// CHECK-LABEL: func.func @bf16_masked
// CHECK-NEXT: %[[M:.*]] = culib.weight "causal"
// CHECK-NEXT: %[[O:.*]] = culib.alloc : memref<2x2x5x3xbf16>
// CHECK-NEXT: culib.attention ins(%arg0, %arg1, %arg2) mask(%[[M]]) outs(%[[O]]) {k_view = array<i64: 0, 30, 15, 3, 1>, mask_view = array<i64: 0, 0, 0, 5, 1>, o_view = array<i64: 0, 30, 15, 3, 1>, q_view = array<i64: 0, 30, 15, 3, 1>, scale = 2.500000e-01 : f32, shape = array<i64: 2, 2, 5, 5, 3, 3>, v_view = array<i64: 0, 30, 15, 3, 1>}
// CHECK-NOT: culib.cast
// REPORT: remark: culib-fuse-attention: 1 attention(s) made one call each, 6 calls fewer; 2000 intermediate bytes no longer written
func.func @bf16_masked(%q: memref<2x2x5x3xbf16>, %k: memref<2x2x5x3xbf16>, %v: memref<2x2x5x3xbf16>) -> memref<2x2x5x3xbf16> {
  %mask = culib.weight "causal" dense<[[[[0.0, -1.0e30, -1.0e30, -1.0e30, -1.0e30], [0.0, 0.0, -1.0e30, -1.0e30, -1.0e30], [0.0, 0.0, 0.0, -1.0e30, -1.0e30], [0.0, 0.0, 0.0, 0.0, -1.0e30], [0.0, 0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x5x5xf32> : memref<1x1x5x5xf32>
  %c = culib.weight "c" dense<0.25> : tensor<f32> : memref<f32>
  %s = culib.alloc : memref<2x2x5x5xbf16>
  culib.matmul ins(%q, %k) outs(%s) {compute_type = f32, trans_b = true} : memref<2x2x5x3xbf16>, memref<2x2x5x3xbf16>, memref<2x2x5x5xbf16>
  %s32 = culib.alloc : memref<2x2x5x5xf32>
  culib.cast ins(%s) outs(%s32) : memref<2x2x5x5xbf16>, memref<2x2x5x5xf32>
  %scaled = culib.alloc : memref<2x2x5x5xf32>
  culib.elementwise mul ins(%s32, %c) outs(%scaled) : memref<2x2x5x5xf32>, memref<f32>, memref<2x2x5x5xf32>
  %masked = culib.alloc : memref<2x2x5x5xf32>
  culib.elementwise add ins(%mask, %scaled) outs(%masked) : memref<1x1x5x5xf32>, memref<2x2x5x5xf32>, memref<2x2x5x5xf32>
  %p = culib.alloc : memref<2x2x5x5xf32>
  culib.softmax ins(%masked) outs(%p) {axis = -1 : i64} : memref<2x2x5x5xf32>, memref<2x2x5x5xf32>
  %p16 = culib.alloc : memref<2x2x5x5xbf16>
  culib.cast ins(%p) outs(%p16) : memref<2x2x5x5xf32>, memref<2x2x5x5xbf16>
  %o = culib.alloc : memref<2x2x5x3xbf16>
  culib.matmul ins(%p16, %v) outs(%o) {compute_type = f32} : memref<2x2x5x5xbf16>, memref<2x2x5x3xbf16>, memref<2x2x5x3xbf16>
  return %o : memref<2x2x5x3xbf16>
}

// Not fused: the probabilities are a result too (attention weights).
// CHECK-LABEL: func.func @probabilities_read
// CHECK-NOT: culib.attention
// CHECK: culib.softmax
// CHECK: return
func.func @probabilities_read(%q: memref<4x5x3xf32>, %k: memref<4x3x5xf32>, %v: memref<4x5x3xf32>) -> (memref<4x5x3xf32>, memref<4x5x5xf32>) {
  %s = culib.alloc : memref<4x5x5xf32>
  culib.matmul ins(%q, %k) outs(%s) {compute_type = f32} : memref<4x5x3xf32>, memref<4x3x5xf32>, memref<4x5x5xf32>
  %p = culib.alloc : memref<4x5x5xf32>
  culib.softmax ins(%s) outs(%p) {axis = 2 : i64} : memref<4x5x5xf32>, memref<4x5x5xf32>
  %o = culib.alloc : memref<4x5x3xf32>
  culib.matmul ins(%p, %v) outs(%o) {compute_type = f32} : memref<4x5x5xf32>, memref<4x5x3xf32>, memref<4x5x3xf32>
  return %o, %p : memref<4x5x3xf32>, memref<4x5x5xf32>
}

// Not fused: a factor after the mask's add scales the mask too, and a log
// softmax is no attention.
// CHECK-LABEL: func.func @mask_scaled
// CHECK-NOT: culib.attention
// CHECK: return
// CHECK-LABEL: func.func @log_softmax
// CHECK-NOT: culib.attention
// CHECK: return
func.func @mask_scaled(%q: memref<4x5x3xf32>, %k: memref<4x3x5xf32>, %v: memref<4x5x3xf32>, %mask: memref<5x5xf32>) -> memref<4x5x3xf32> {
  %c = culib.weight "c" dense<0.5> : tensor<f32> : memref<f32>
  %s = culib.alloc : memref<4x5x5xf32>
  culib.matmul ins(%q, %k) outs(%s) {compute_type = f32} : memref<4x5x3xf32>, memref<4x3x5xf32>, memref<4x5x5xf32>
  %m = culib.alloc : memref<4x5x5xf32>
  culib.elementwise add ins(%s, %mask) outs(%m) : memref<4x5x5xf32>, memref<5x5xf32>, memref<4x5x5xf32>
  %ms = culib.alloc : memref<4x5x5xf32>
  culib.elementwise mul ins(%m, %c) outs(%ms) : memref<4x5x5xf32>, memref<f32>, memref<4x5x5xf32>
  %p = culib.alloc : memref<4x5x5xf32>
  culib.softmax ins(%ms) outs(%p) {axis = 2 : i64} : memref<4x5x5xf32>, memref<4x5x5xf32>
  %o = culib.alloc : memref<4x5x3xf32>
  culib.matmul ins(%p, %v) outs(%o) {compute_type = f32} : memref<4x5x5xf32>, memref<4x5x3xf32>, memref<4x5x3xf32>
  return %o : memref<4x5x3xf32>
}
func.func @log_softmax(%q: memref<4x5x3xf32>, %k: memref<4x3x5xf32>, %v: memref<4x5x3xf32>) -> memref<4x5x3xf32> {
  %s = culib.alloc : memref<4x5x5xf32>
  culib.matmul ins(%q, %k) outs(%s) {compute_type = f32} : memref<4x5x3xf32>, memref<4x3x5xf32>, memref<4x5x5xf32>
  %p = culib.alloc : memref<4x5x5xf32>
  culib.softmax ins(%s) outs(%p) {axis = 2 : i64, log = true} : memref<4x5x5xf32>, memref<4x5x5xf32>
  %o = culib.alloc : memref<4x5x3xf32>
  culib.matmul ins(%p, %v) outs(%o) {compute_type = f32} : memref<4x5x5xf32>, memref<4x5x3xf32>, memref<4x5x3xf32>
  return %o : memref<4x5x3xf32>
}

// Not fused: Q's buffer is written again between its read and the end of
// O's chain, where the call would read it.
// CHECK-LABEL: func.func @input_overwritten
// CHECK-NOT: culib.attention
// CHECK: return
func.func @input_overwritten(%k: memref<4x3x5xf32>, %v: memref<4x5x3xf32>, %x: memref<4x5x3xf32>) -> memref<5x4x3xf32> {
  %q = culib.alloc : memref<4x5x3xf32>
  culib.copy ins(%x) outs(%q) : memref<4x5x3xf32>, memref<4x5x3xf32>
  %s = culib.alloc : memref<4x5x5xf32>
  culib.matmul ins(%q, %k) outs(%s) {compute_type = f32} : memref<4x5x3xf32>, memref<4x3x5xf32>, memref<4x5x5xf32>
  culib.elementwise neg ins(%x) outs(%q) : memref<4x5x3xf32>, memref<4x5x3xf32>
  %p = culib.alloc : memref<4x5x5xf32>
  culib.softmax ins(%s) outs(%p) {axis = 2 : i64} : memref<4x5x5xf32>, memref<4x5x5xf32>
  %o = culib.alloc : memref<4x5x3xf32>
  culib.matmul ins(%p, %v) outs(%o) {compute_type = f32} : memref<4x5x5xf32>, memref<4x5x3xf32>, memref<4x5x3xf32>
  %o1 = culib.alloc : memref<5x4x3xf32>
  culib.transpose ins(%o) outs(%o1) {perm = array<i64: 1, 0, 2>} : memref<4x5x3xf32>, memref<5x4x3xf32>
  return %o1 : memref<5x4x3xf32>
}

// Not fused: an empty batch (no views to make).
// CHECK-LABEL: func.func @empty
// CHECK-NOT: culib.attention
// CHECK: return
func.func @empty(%q: memref<0x5x3xf32>, %k: memref<0x3x5xf32>, %v: memref<0x5x3xf32>) -> memref<0x5x3xf32> {
  %s = culib.alloc : memref<0x5x5xf32>
  culib.matmul ins(%q, %k) outs(%s) {compute_type = f32} : memref<0x5x3xf32>, memref<0x3x5xf32>, memref<0x5x5xf32>
  %p = culib.alloc : memref<0x5x5xf32>
  culib.softmax ins(%s) outs(%p) {axis = 2 : i64} : memref<0x5x5xf32>, memref<0x5x5xf32>
  %o = culib.alloc : memref<0x5x3xf32>
  culib.matmul ins(%p, %v) outs(%o) {compute_type = f32} : memref<0x5x5xf32>, memref<0x5x3xf32>, memref<0x5x3xf32>
  return %o : memref<0x5x3xf32>
}
