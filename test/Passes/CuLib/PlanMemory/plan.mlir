// culib-plan-memory: buffers whose live ranges overlap get disjoint bytes,
// dead buffers' bytes are reused, and the arena size is the peak.
// RUN: mp-opt %s --culib-plan-memory | FileCheck %s
// RUN: mp-opt %s --culib-plan-memory | mp-opt | FileCheck %s
// RUN: mp-opt %s --culib-plan-memory="alignment=256 report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// A chain x -> a -> b -> c -> d of 4 KiB buffers: at most two are live at
// once, so two slots suffice. The graph input x lives in the arena too (the
// runtime copies it in) until its last use; d is returned and keeps its slot
// to the end.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: %arg0: memref<1024xf32> {culib.offset = 0 : i64}
// CHECK-SAME: attributes {culib.arena_size = 8192 : i64}
// CHECK: %[[A:.*]] = culib.alloc {offset = 4096 : i64} : memref<1024xf32>
// CHECK: %[[B:.*]] = culib.alloc {offset = 0 : i64} : memref<1024xf32>
// CHECK: %[[C:.*]] = culib.alloc {offset = 4096 : i64} : memref<1024xf32>
// CHECK: %[[D:.*]] = culib.alloc {offset = 0 : i64} : memref<1024xf32>
// REPORT: remark: activation arena of @chain: 8192 bytes for 5 buffers (20480 bytes without reuse)
func.func @chain(%x: memref<1024xf32>) -> memref<1024xf32> {
  %a = culib.alloc : memref<1024xf32>
  culib.elementwise relu ins(%x) outs(%a) : memref<1024xf32>, memref<1024xf32>
  %b = culib.alloc : memref<1024xf32>
  culib.elementwise exp ins(%a) outs(%b) : memref<1024xf32>, memref<1024xf32>
  %c = culib.alloc : memref<1024xf32>
  culib.elementwise neg ins(%b) outs(%c) : memref<1024xf32>, memref<1024xf32>
  %d = culib.alloc : memref<1024xf32>
  culib.elementwise abs ins(%c) outs(%d) : memref<1024xf32>, memref<1024xf32>
  return %d : memref<1024xf32>
}

// A long-lived buffer (a skip connection) keeps its bytes while others come
// and go: the small buffer dies before t is allocated, so t reuses its
// bytes; u overlaps both s and t in time and gets its own. Sizes are rounded
// up to the alignment (3 x f16 = 6 bytes take 64, or 256).
// The inputs x and h die early (after relu and neg): small and t reuse x's
// bytes.
// CHECK-LABEL: func.func @skip
// CHECK-SAME: %arg0: memref<1024xf32> {culib.offset = 0 : i64}
// CHECK-SAME: %arg1: memref<3xf16> {culib.offset = 8192 : i64}
// CHECK-SAME: attributes {culib.arena_size = 12288 : i64}
// CHECK: culib.alloc {offset = 4096 : i64} : memref<1024xf32>
// CHECK: culib.alloc {offset = 0 : i64} : memref<3xf16>
// CHECK: culib.alloc {offset = 0 : i64} : memref<1024xf32>
// CHECK: culib.alloc {offset = 8192 : i64} : memref<1024xf32>
// REPORT: remark: activation arena of @skip: 12288 bytes for 6 buffers (16896 bytes without reuse)
func.func @skip(%x: memref<1024xf32>, %h: memref<3xf16>) -> memref<1024xf32> {
  %s = culib.alloc : memref<1024xf32>
  culib.elementwise relu ins(%x) outs(%s) : memref<1024xf32>, memref<1024xf32>
  %small = culib.alloc : memref<3xf16>
  culib.elementwise neg ins(%h) outs(%small) : memref<3xf16>, memref<3xf16>
  %t = culib.alloc : memref<1024xf32>
  culib.elementwise exp ins(%s) outs(%t) : memref<1024xf32>, memref<1024xf32>
  %u = culib.alloc : memref<1024xf32>
  culib.elementwise add ins(%s, %t) outs(%u) : memref<1024xf32>, memref<1024xf32>, memref<1024xf32>
  return %u : memref<1024xf32>
}
