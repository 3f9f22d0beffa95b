// culib-hoist-weight-calls: calls that only derive buffers from weights run
// once, at load (culib.at_load), and their buffers are made at load (out of
// the arena); anything reading an input, a state, a buffer written twice or
// a returned buffer stays a call of every run.
// RUN: mp-opt %s --culib-hoist-weight-calls | FileCheck %s
// Round trip: the printed form parses back to the same IR.
// RUN: mp-opt %s --culib-hoist-weight-calls | mp-opt | FileCheck %s
// RUN: mp-opt %s --culib-hoist-weight-calls=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// Memory planning leaves buffers made at load out of the arena.
// RUN: mp-opt %s --culib-hoist-weight-calls --culib-plan-memory | FileCheck %s --check-prefix=MEMORY

// A channels-last filter: a weight cast to bf16, then transposed (a chain:
// the transpose reads what the hoisted cast made). The convolution reads an
// input: it runs on every run.
// CHECK-LABEL: func.func @filter_chain
// CHECK: %[[W:.*]] = culib.weight "w"
// CHECK: %[[CAST:.*]] = culib.alloc at_load : memref<8x4x3x3xbf16>
// CHECK: culib.cast ins(%[[W]]) outs(%[[CAST]]) {culib.at_load}
// CHECK: %[[T:.*]] = culib.alloc at_load : memref<8x3x3x4xbf16>
// CHECK: culib.transpose ins(%[[CAST]]) outs(%[[T]]) {culib.at_load, perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[Y:.*]] = culib.alloc : memref<1x6x6x8xf32>
// CHECK: culib.conv_fwd ins(%arg0, %[[T]]) outs(%[[Y]])
// CHECK-NOT: culib.at_load
// CHECK: return
// REPORT: remark: culib-hoist-weight-calls: 2 call(s) run once at load instead of on every run; 1152 bytes they write kept from load
// MEMORY-LABEL: func.func @filter_chain
// The arena holds x (512 bytes) and y (1152), not the filters.
// MEMORY-SAME: attributes {culib.arena_size = 1664 : i64}
// MEMORY: culib.alloc at_load : memref<8x4x3x3xbf16>
// MEMORY: culib.alloc at_load : memref<8x3x3x4xbf16>
// MEMORY: culib.alloc {offset = {{[0-9]+}} : i64} : memref<1x6x6x8xf32>
func.func @filter_chain(%x: memref<1x8x8x4xbf16>) -> memref<1x6x6x8xf32> {
  %w = culib.weight "w" dense<0.5> : tensor<8x4x3x3xf32> : memref<8x4x3x3xf32>
  %c = culib.alloc : memref<8x4x3x3xbf16>
  culib.cast ins(%w) outs(%c) : memref<8x4x3x3xf32>, memref<8x4x3x3xbf16>
  %t = culib.alloc : memref<8x3x3x4xbf16>
  culib.transpose ins(%c) outs(%t) {perm = array<i64: 0, 2, 3, 1>} : memref<8x4x3x3xbf16>, memref<8x3x3x4xbf16>
  %y = culib.alloc : memref<1x6x6x8xf32>
  culib.conv_fwd ins(%x, %t) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, layout = #culib.layout<nhwc>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x8x8x4xbf16>, memref<8x3x3x4xbf16>, memref<1x6x6x8xf32>
  return %y : memref<1x6x6x8xf32>
}

// Not hoisted: a call reading the input; a weight's copy the function
// returns (the runtime reads outputs from their buffers); a buffer that a
// second call writes; a broadcast of a bias to a whole activation (more than
// twice the bytes it is made from, kept for good if made at load); a
// training step's parameter (culib.state), which changes every step.
// CHECK-LABEL: func.func @not_hoisted
// CHECK-NOT: at_load
// CHECK: return
// REPORT: remark: culib-hoist-weight-calls: 0 call(s) run once at load
func.func @not_hoisted(%x: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<64x4xf32>, memref<4xf32>) {
  %w = culib.weight "w" dense<2.0> : tensor<4xf32> : memref<4xf32>
  %s = culib.state "p" dense<1.0> : tensor<4xf32> : memref<4xf32>
  %a = culib.alloc : memref<4xf32>
  culib.elementwise add ins(%x, %w) outs(%a) : memref<4xf32>, memref<4xf32>, memref<4xf32>
  %r = culib.alloc : memref<4xf32>
  culib.copy ins(%w) outs(%r) : memref<4xf32>, memref<4xf32>
  %twice = culib.alloc : memref<4xf32>
  culib.elementwise neg ins(%w) outs(%twice) : memref<4xf32>, memref<4xf32>
  culib.elementwise add ins(%twice, %x) outs(%twice) : memref<4xf32>, memref<4xf32>, memref<4xf32>
  %big = culib.alloc : memref<64x4xf32>
  culib.broadcast ins(%w) outs(%big) : memref<4xf32>, memref<64x4xf32>
  %p = culib.alloc : memref<4xf32>
  culib.elementwise neg ins(%s) outs(%p) : memref<4xf32>, memref<4xf32>
  return %a, %r, %twice, %big, %p : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<64x4xf32>, memref<4xf32>
}
