// The culib verifiers reject buffers that do not fit the call.
// RUN: mp-opt %s -split-input-file -verify-diagnostics

func.func @dynamic_alloc() {
  // expected-error @+1 {{'culib.alloc' op buffer must have a static shape, got 'memref<?x4xf32>'}}
  %0 = "culib.alloc"() : () -> memref<?x4xf32>
  return
}

// -----

func.func @negative_offset() {
  // expected-error @+1 {{offset must not be negative}}
  %0 = culib.alloc {offset = -64 : i64} : memref<4xf32>
  return
}

// -----

func.func @weight_mismatch() {
  // expected-error @+1 {{value of type 'tensor<3xf32>' does not match the buffer 'memref<4xf32>'}}
  %0 = culib.weight "w" dense<1.0> : tensor<3xf32> : memref<4xf32>
  return
}

// -----

func.func @matmul_contraction(%a: memref<2x3xf16>, %b: memref<4x5xf16>, %d: memref<2x5xf32>) {
  // expected-error @+1 {{contraction dims differ: 3 vs 4}}
  culib.matmul ins(%a, %b) outs(%d) {compute_type = f32} : memref<2x3xf16>, memref<4x5xf16>, memref<2x5xf32>
  return
}

// -----

func.func @matmul_result(%a: memref<2x3xf16>, %b: memref<5x3xf16>, %d: memref<2x3xf32>) {
  // expected-error @+1 {{D must be 2x5 in its last two dims}}
  culib.matmul ins(%a, %b) outs(%d) {compute_type = f32, trans_b = true} : memref<2x3xf16>, memref<5x3xf16>, memref<2x3xf32>
  return
}

// -----

func.func @matmul_gradient_without_aux(%dy: memref<4x8xf32>, %w: memref<8x16xf32>, %dx: memref<4x16xf32>) {
  // expected-error @+1 {{epilogue gelu_grad needs aux (the activation's input)}}
  culib.matmul ins(%dy, %w) outs(%dx) {compute_type = f32, epilogue = #culib.epilogue<gelu_grad>} : memref<4x8xf32>, memref<8x16xf32>, memref<4x16xf32>
  return
}

// -----

func.func @matmul_aux_without_gradient(%dy: memref<4x8xf32>, %w: memref<8x16xf32>, %x: memref<4x16xf32>, %dx: memref<4x16xf32>) {
  // expected-error @+1 {{aux goes with an activation-gradient epilogue}}
  culib.matmul ins(%dy, %w) aux(%x) outs(%dx) {compute_type = f32, epilogue = #culib.epilogue<relu>} : memref<4x8xf32>, memref<8x16xf32>, memref<4x16xf32>, memref<4x16xf32>
  return
}

// -----

func.func @matmul_gradient_with_bias(%dy: memref<4x8xf32>, %w: memref<8x16xf32>, %b: memref<16xf32>, %x: memref<4x16xf32>, %dx: memref<4x16xf32>) {
  // expected-error @+1 {{epilogue relu_grad takes no bias}}
  culib.matmul ins(%dy, %w) bias(%b) aux(%x) outs(%dx) {compute_type = f32, epilogue = #culib.epilogue<relu_grad>} : memref<4x8xf32>, memref<8x16xf32>, memref<16xf32>, memref<4x16xf32>, memref<4x16xf32>
  return
}

// -----

func.func @matmul_aux_shape(%dy: memref<4x8xf32>, %w: memref<8x16xf32>, %x: memref<16x4xf32>, %dx: memref<4x16xf32>) {
  // expected-error @+1 {{aux}}
  culib.matmul ins(%dy, %w) aux(%x) outs(%dx) {compute_type = f32, epilogue = #culib.epilogue<gelu_tanh_grad>} : memref<4x8xf32>, memref<8x16xf32>, memref<16x4xf32>, memref<4x16xf32>
  return
}

// -----

func.func @conv_gradient_activation(%x: memref<1x2x3x3xf32>, %w: memref<2x2x1x1xf32>, %y: memref<1x2x3x3xf32>) {
  // expected-error @+1 {{activation gelu_grad is a matmul's epilogue (with aux)}}
  culib.conv_fwd ins(%x, %w) outs(%y) {activation = #culib.epilogue<gelu_grad>, compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x2x3x3xf32>, memref<2x2x1x1xf32>, memref<1x2x3x3xf32>
  return
}

// -----

func.func @matmul_bias_grad_count(%x: memref<64x24xf32>, %dy: memref<64x12xf32>, %dw: memref<24x12xf32>, %db: memref<2x12xf32>) {
  // expected-error @+1 {{bias_grad must hold the 12 sums of op(B) over K in its last dim, got 'memref<2x12xf32>'}}
  culib.matmul ins(%x, %dy) outs(%dw) bias_grad(%db) {compute_type = f32, trans_a = true} : memref<64x24xf32>, memref<64x12xf32>, memref<24x12xf32>, memref<2x12xf32>
  return
}

// -----

func.func @matmul_bias_grad_type(%x: memref<64x24xbf16>, %dy: memref<64x12xbf16>, %dw: memref<24x12xbf16>, %db: memref<12xf32>) {
  // expected-error @+1 {{bias_grad must have B's element type, got 'memref<12xf32>'}}
  culib.matmul ins(%x, %dy) outs(%dw) bias_grad(%db) {compute_type = f32, trans_a = true} : memref<64x24xbf16>, memref<64x12xbf16>, memref<24x12xbf16>, memref<12xf32>
  return
}

// -----

func.func @matmul_bias_grad_batched(%x: memref<2x32x24xf32>, %dy: memref<2x32x12xf32>, %dw: memref<2x24x12xf32>, %db: memref<12xf32>) {
  // expected-error @+1 {{bias_grad needs B of rank 2, got 'memref<2x32x12xf32>'}}
  culib.matmul ins(%x, %dy) outs(%dw) bias_grad(%db) {compute_type = f32, trans_a = true} : memref<2x32x24xf32>, memref<2x32x12xf32>, memref<2x24x12xf32>, memref<12xf32>
  return
}

// -----

func.func @matmul_bias_grad_of_a(%dy: memref<64x12xf32>, %x: memref<64x24xf32>, %dw: memref<12x24xf32>, %db: memref<24xf32>) {
  // expected-error @+1 {{bias_grad must hold the 12 sums of op(A) over K in its last dim, got 'memref<24xf32>'}}
  culib.matmul ins(%dy, %x) outs(%dw) bias_grad(%db) {bias_grad_of_a = true, compute_type = f32, trans_a = true} : memref<64x12xf32>, memref<64x24xf32>, memref<12x24xf32>, memref<24xf32>
  return
}

// -----

func.func @matmul_bias_grad_of_a_alone(%x: memref<64x24xf32>, %dy: memref<64x12xf32>, %dw: memref<24x12xf32>) {
  // expected-error @+1 {{bias_grad_of_a without a bias_grad}}
  culib.matmul ins(%x, %dy) outs(%dw) {bias_grad_of_a = true, compute_type = f32, trans_a = true} : memref<64x24xf32>, memref<64x12xf32>, memref<24x12xf32>
  return
}

// -----

func.func @matmul_batch(%a: memref<3x2x4xf32>, %b: memref<2x4x5xf32>, %d: memref<3x2x5xf32>) {
  // expected-error @+1 {{batch dim 0 of 'memref<2x4x5xf32>' does not broadcast to 'memref<3x2x5xf32>'}}
  culib.matmul ins(%a, %b) outs(%d) {compute_type = f32} : memref<3x2x4xf32>, memref<2x4x5xf32>, memref<3x2x5xf32>
  return
}

// -----

func.func @matmul_compute(%a: memref<2x3xf32>, %b: memref<3x5xf32>, %d: memref<2x5xf32>) {
  // expected-error @+1 {{compute type 'f16' cannot accumulate 'f32' inputs}}
  culib.matmul ins(%a, %b) outs(%d) {compute_type = f16} : memref<2x3xf32>, memref<3x5xf32>, memref<2x5xf32>
  return
}

// -----

func.func @matmul_bias(%a: memref<2x3xf32>, %b: memref<3x5xf32>, %bias: memref<2xf32>, %d: memref<2x5xf32>) {
  // expected-error @+1 {{bias must be a vector of 5 elements, got 'memref<2xf32>'}}
  culib.matmul ins(%a, %b) bias(%bias) outs(%d) {compute_type = f32} : memref<2x3xf32>, memref<3x5xf32>, memref<2xf32>, memref<2x5xf32>
  return
}

// -----

func.func @conv_channels(%x: memref<1x3x8x8xf32>, %w: memref<4x2x3x3xf32>, %y: memref<1x4x6x6xf32>) {
  // expected-error @+1 {{X has 3 channels; W expects 2 per group in 1 groups}}
  culib.conv_fwd ins(%x, %w) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf32>, memref<4x2x3x3xf32>, memref<1x4x6x6xf32>
  return
}

// -----

func.func @conv_output(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<1x4x8x8xf32>) {
  // expected-error @+1 {{spatial dim 0 of Y must be 3, got 'memref<1x4x8x8xf32>'}}
  culib.conv_fwd ins(%x, %w) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x8x8xf32>
  return
}

// -----

func.func @conv_attrs(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<1x4x6x6xf32>) {
  // expected-error @+1 {{needs 4 pads and 2 strides and dilations}}
  culib.conv_fwd ins(%x, %w) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x6x6xf32>
  return
}

// -----

func.func @conv_layout(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<1x4x6x6xf32>) {
  // expected-error @+2 {{expected ::mp::culib::Layout to be one of: nchw, nhwc}}
  // expected-error @+1 {{failed to parse CuLib_LayoutAttr parameter 'value'}}
  culib.conv_fwd ins(%x, %w) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, layout = #culib.layout<chwn>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x6x6xf32>
  return
}

// -----

// A layout given as a string (the form before enum attributes).
func.func @conv_layout_string(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<1x4x6x6xf32>) {
  // expected-error @+1 {{attribute 'layout' failed to satisfy constraint: the layout of an activation}}
  culib.conv_fwd ins(%x, %w) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, layout = "nhwc", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x6x6xf32>
  return
}

// -----

func.func @conv_clip_without_bounds(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<1x4x6x6xf32>) {
  // expected-error @+1 {{clip_min and clip_max go with activation clip, and only with it}}
  culib.conv_fwd ins(%x, %w) outs(%y) {activation = #culib.epilogue<clip>, clip_min = 0.0 : f32, compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x6x6xf32>
  return
}

// -----

func.func @conv_bounds_without_clip(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<1x4x6x6xf32>) {
  // expected-error @+1 {{clip_min and clip_max go with activation clip, and only with it}}
  culib.conv_fwd ins(%x, %w) outs(%y) {activation = #culib.epilogue<relu>, clip_min = 0.0 : f32, clip_max = 6.0 : f32, compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x6x6xf32>
  return
}

// -----

func.func @conv_clip_reversed(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<1x4x6x6xf32>) {
  // expected-error @+1 {{clip_min must not exceed clip_max}}
  culib.conv_fwd ins(%x, %w) outs(%y) {activation = #culib.epilogue<clip>, clip_min = 6.0 : f32, clip_max = 0.0 : f32, compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x6x6xf32>
  return
}

// -----

func.func @matmul_clip(%a: memref<2x3xf32>, %b: memref<3x5xf32>, %d: memref<2x5xf32>) {
  // expected-error @+1 {{epilogue clip is conv_fwd's only}}
  culib.matmul ins(%a, %b) outs(%d) {compute_type = f32, epilogue = #culib.epilogue<clip>} : memref<2x3xf32>, memref<3x5xf32>, memref<2x5xf32>
  return
}

// -----

func.func @pool_mode(%x: memref<1x3x8x8xf32>, %y: memref<1x3x4x4xf32>) {
  // expected-error @+1 {{unknown mode 'min' (max, avg, avg_include_pad)}}
  culib.pool ins(%x) outs(%y) {mode = "min", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>} : memref<1x3x8x8xf32>, memref<1x3x4x4xf32>
  return
}

// -----

func.func @pool_indices(%x: memref<1x3x8x8xf32>, %y: memref<1x3x4x4xf32>, %i: memref<1x3x4x4xi64>) {
  // expected-error @+1 {{only max pooling has indices}}
  culib.pool ins(%x) outs(%y) indices(%i) {mode = "avg", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>} : memref<1x3x8x8xf32>, memref<1x3x4x4xf32>, memref<1x3x4x4xi64>
  return
}

// -----

func.func @batch_norm_channels(%x: memref<2x3x4x4xf16>, %s: memref<4xf32>, %y: memref<2x3x4x4xf16>) {
  // expected-error @+1 {{scale, bias and statistics must be a vector of 3 elements, got 'memref<4xf32>'}}
  culib.batch_norm_inference ins(%x, %s, %s, %s, %s) outs(%y) {epsilon = 1.0e-5 : f32} : memref<2x3x4x4xf16>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<2x3x4x4xf16>
  return
}

// -----

func.func @batch_norm_f16_statistics(%x: memref<2x3x4x4xf16>, %s: memref<3xf16>, %y: memref<2x3x4x4xf16>) {
  // expected-error @+1 {{operand #1 must be memref of 32-bit float values}}
  culib.batch_norm_inference ins(%x, %s, %s, %s, %s) outs(%y) {epsilon = 1.0e-5 : f32} : memref<2x3x4x4xf16>, memref<3xf16>, memref<3xf16>, memref<3xf16>, memref<3xf16>, memref<2x3x4x4xf16>
  return
}

// -----

func.func @softmax_axis(%x: memref<2x10xf32>, %y: memref<2x10xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  culib.softmax ins(%x) outs(%y) {axis = 2 : i64} : memref<2x10xf32>, memref<2x10xf32>
  return
}

// -----

func.func @softmax_shape(%x: memref<2x10xf32>, %y: memref<2x9xf32>) {
  // expected-error @+1 {{X and Y must have the same shape}}
  culib.softmax ins(%x) outs(%y) {axis = 1 : i64} : memref<2x10xf32>, memref<2x9xf32>
  return
}

// -----

func.func @unknown_fn(%a: memref<2xf32>, %y: memref<2xf32>) {
  // expected-error @+2 {{unknown elementwise function 'frobnicate'}}
  // expected-error @+1 {{failed to parse CuLib_ElementwiseFnAttr parameter 'value'}}
  culib.elementwise frobnicate ins(%a) outs(%y) : memref<2xf32>, memref<2xf32>
  return
}

// -----

func.func @arity(%a: memref<2xf32>, %y: memref<2xf32>) {
  // expected-error @+1 {{'add' takes 2 inputs, got 1}}
  culib.elementwise add ins(%a) outs(%y) : memref<2xf32>, memref<2xf32>
  return
}

// -----

func.func @broadcast(%a: memref<4xf32>, %y: memref<2x3xf32>) {
  // expected-error @+1 {{input 'memref<4xf32>' does not broadcast to 'memref<2x3xf32>'}}
  culib.elementwise relu ins(%a) outs(%y) : memref<4xf32>, memref<2x3xf32>
  return
}

// -----

func.func @compare_result(%a: memref<2xf32>, %y: memref<2xf32>) {
  // expected-error @+1 {{'equal' writes a bool (i1) buffer}}
  culib.elementwise equal ins(%a, %a) outs(%y) : memref<2xf32>, memref<2xf32>, memref<2xf32>
  return
}

// -----

func.func @reduce_shape(%a: memref<2x3xf32>, %y: memref<3xf32>) {
  // expected-error @+1 {{is not x reduced over the axes}}
  culib.reduce sum ins(%a) outs(%y) {axes = array<i64: 1>, compute_type = f32} : memref<2x3xf32>, memref<3xf32>
  return
}

// -----

func.func @transpose_perm(%a: memref<2x3xf32>, %y: memref<3x2xf32>) {
  // expected-error @+1 {{perm is not a permutation}}
  culib.transpose ins(%a) outs(%y) {perm = array<i64: 1, 1>} : memref<2x3xf32>, memref<3x2xf32>
  return
}

// -----

func.func @copy_count(%a: memref<2x3xf32>, %y: memref<5xf32>) {
  // expected-error @+1 {{must have the same element type and count}}
  culib.copy ins(%a) outs(%y) : memref<2x3xf32>, memref<5xf32>
  return
}

// -----

func.func @concat_total(%a: memref<2x3xf32>, %y: memref<2x7xf32>) {
  // expected-error @+1 {{inputs add up to 6 along the axis, y has 7}}
  culib.concat ins(%a, %a) outs(%y) {axis = 1 : i64} : memref<2x3xf32>, memref<2x3xf32>, memref<2x7xf32>
  return
}

// -----

func.func @unknown_epilogue(%a: memref<2x3xf32>, %b: memref<3x5xf32>, %d: memref<2x5xf32>) {
  // expected-error @+2 {{expected ::mp::culib::Epilogue to be one of: none, relu, gelu, clip, silu, sigmoid, tanh, hard_swish}}
  // expected-error @+1 {{failed to parse CuLib_EpilogueAttr parameter 'value'}}
  culib.matmul ins(%a, %b) outs(%d) {compute_type = f32, epilogue = #culib.epilogue<swish>} : memref<2x3xf32>, memref<3x5xf32>, memref<2x5xf32>
  return
}

// -----

func.func @unknown_reduction(%x: memref<2x3xf32>, %y: memref<2xf32>) {
  // expected-error @+2 {{unknown reduction 'median'}}
  // expected-error @+1 {{failed to parse CuLib_ReduceFnAttr parameter 'value'}}
  culib.reduce median ins(%x) outs(%y) {axes = array<i64: 1>, compute_type = f32} : memref<2x3xf32>, memref<2xf32>
  return
}

// -----

func.func @attention_view_outside(%qkv: memref<5x2x18xf32>, %o: memref<10x6xf32>) {
  // expected-error @+1 {{'culib.attention' op v view reaches element 180 of a buffer of 180}}
  culib.attention ins(%qkv, %qkv, %qkv) outs(%o) {shape = array<i64: 2, 2, 5, 5, 3, 3>, q_view = array<i64: 0, 18, 3, 36, 1>, k_view = array<i64: 6, 18, 3, 36, 1>, v_view = array<i64: 13, 18, 3, 36, 1>, o_view = array<i64: 0, 6, 3, 12, 1>, scale = 1.0 : f32} : memref<5x2x18xf32>, memref<5x2x18xf32>, memref<5x2x18xf32>, memref<10x6xf32>
  return
}

// -----

func.func @attention_writes_twice(%qkv: memref<5x2x18xf32>, %o: memref<10x6xf32>) {
  // expected-error @+1 {{'culib.attention' op o view writes some elements twice}}
  culib.attention ins(%qkv, %qkv, %qkv) outs(%o) {shape = array<i64: 2, 2, 5, 5, 3, 3>, q_view = array<i64: 0, 18, 3, 36, 1>, k_view = array<i64: 6, 18, 3, 36, 1>, v_view = array<i64: 12, 18, 3, 36, 1>, o_view = array<i64: 0, 6, 1, 12, 1>, scale = 1.0 : f32} : memref<5x2x18xf32>, memref<5x2x18xf32>, memref<5x2x18xf32>, memref<10x6xf32>
  return
}

// -----

func.func @attention_mask_view_without_mask(%qkv: memref<5x2x18xf32>, %o: memref<10x6xf32>) {
  // expected-error @+1 {{'culib.attention' op mask_view must be given exactly with a mask}}
  culib.attention ins(%qkv, %qkv, %qkv) outs(%o) {shape = array<i64: 2, 2, 5, 5, 3, 3>, q_view = array<i64: 0, 18, 3, 36, 1>, k_view = array<i64: 6, 18, 3, 36, 1>, v_view = array<i64: 12, 18, 3, 36, 1>, o_view = array<i64: 0, 6, 3, 12, 1>, mask_view = array<i64: 0, 0, 0, 5, 1>, scale = 1.0 : f32} : memref<5x2x18xf32>, memref<5x2x18xf32>, memref<5x2x18xf32>, memref<10x6xf32>
  return
}

// -----

func.func @attention_short_shape(%qkv: memref<5x2x18xf32>, %o: memref<10x6xf32>) {
  // expected-error @+1 {{'culib.attention' op shape must have 6 elements (batch, heads, queries, keys, head_dim, value_dim)}}
  culib.attention ins(%qkv, %qkv, %qkv) outs(%o) {shape = array<i64: 2, 2, 5, 5, 3>, q_view = array<i64: 0, 18, 3, 36, 1>, k_view = array<i64: 6, 18, 3, 36, 1>, v_view = array<i64: 12, 18, 3, 36, 1>, o_view = array<i64: 0, 6, 3, 12, 1>, scale = 1.0 : f32} : memref<5x2x18xf32>, memref<5x2x18xf32>, memref<5x2x18xf32>, memref<10x6xf32>
  return
}

// -----

func.func @conv_residual_type(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %r: memref<1x4x6x6xf16>, %y: memref<1x4x6x6xf32>) {
  // expected-error @+1 {{'culib.conv_fwd' op residual must have Y's type 'memref<1x4x6x6xf32>', got 'memref<1x4x6x6xf16>'}}
  culib.conv_fwd ins(%x, %w) residual(%r) outs(%y) {compute_type = f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x6x6xf16>, memref<1x4x6x6xf32>
  return
}

// -----

func.func @scaled_softmax_mask(%x: memref<2x3x8xf16>, %mask: memref<3x4xf16>, %y: memref<2x3x8xf16>) {
  // expected-error @+1 {{mask does not broadcast to X's shape}}
  culib.scaled_softmax ins(%x) mask(%mask) outs(%y) : memref<2x3x8xf16>, memref<3x4xf16>, memref<2x3x8xf16>
  return
}

// -----

func.func @scaled_softmax_mask_type(%x: memref<2x3x8xf16>, %mask: memref<8xbf16>, %y: memref<2x3x8xf16>) {
  // expected-error @+1 {{mask must have X's element type or f32}}
  culib.scaled_softmax ins(%x) mask(%mask) outs(%y) : memref<2x3x8xf16>, memref<8xbf16>, memref<2x3x8xf16>
  return
}

// -----

// A call at load reads only weights and buffers made at load.
func.func @at_load_reads_input(%x: memref<4xf32>) {
  %a = culib.alloc at_load : memref<4xf32>
  // expected-error @+1 {{a call at load reads only weights and buffers made at load; its 'inputs' is neither}}
  culib.elementwise neg ins(%x) outs(%a) {culib.at_load} : memref<4xf32>, memref<4xf32>
  return
}

// -----

func.func @at_load_writes_arena() {
  %w = culib.weight "w" dense<1.0> : tensor<4xf32> : memref<4xf32>
  %a = culib.alloc : memref<4xf32>
  // expected-error @+1 {{a call at load writes only buffers made at load (culib.alloc at_load); its 'y' is not one}}
  culib.elementwise neg ins(%w) outs(%a) {culib.at_load} : memref<4xf32>, memref<4xf32>
  return
}

// -----

func.func @at_load_not_a_call() {
  // expected-error @+1 {{'culib.at_load' marks culib calls only}}
  %w = culib.weight "w" dense<1.0> : tensor<4xf32> {culib.at_load} : memref<4xf32>
  return
}

// -----

func.func @at_load_not_unit() {
  %w = culib.weight "w" dense<1.0> : tensor<4xf32> : memref<4xf32>
  %a = culib.alloc at_load : memref<4xf32>
  // expected-error @+1 {{'culib.at_load' is a unit attribute}}
  culib.elementwise neg ins(%w) outs(%a) {culib.at_load = 1 : i64} : memref<4xf32>, memref<4xf32>
  return
}

// -----

// A buffer made at load is written only at load, and is not in the arena.
func.func @made_at_load_written_on_every_run(%x: memref<4xf32>) {
  %w = culib.weight "w" dense<1.0> : tensor<4xf32> : memref<4xf32>
  // expected-error @+1 {{'culib.alloc' op a buffer made at load is written only by calls at load ('culib.at_load'), not by culib.elementwise}}
  %a = culib.alloc at_load : memref<4xf32>
  culib.elementwise neg ins(%w) outs(%a) {culib.at_load} : memref<4xf32>, memref<4xf32>
  culib.elementwise neg ins(%x) outs(%a) : memref<4xf32>, memref<4xf32>
  return
}

// -----

func.func @made_at_load_with_offset() {
  // expected-error @+1 {{'culib.alloc' op a buffer made at load is not in the arena: it has no offset}}
  %a = culib.alloc at_load {offset = 0 : i64} : memref<4xf32>
  return
}

// -----

func.func @view_changes_count(%x: memref<2x4xf32>) {
  // expected-error @+1 {{'culib.view' op a view of 'memref<2x4xf32>' as 'memref<9xf32>' must keep the element type and count}}
  %v = culib.view %x : memref<2x4xf32> to memref<9xf32>
  return
}

// -----

func.func @all_reduce_counts(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-error @+1 {{'culib.all_reduce' op needs as many outputs as inputs (and at least one), got 2 and 1}}
  culib.all_reduce <mean> ins(%a, %b) outs(%a) {reduce_type = f32} : memref<4xf32>, memref<4xf32> -> memref<4xf32>
  return
}

// -----

func.func @all_reduce_shape(%a: memref<4xf32>, %b: memref<2x2xf32>) {
  // expected-error @+1 {{'culib.all_reduce' op output 'memref<2x2xf32>' does not have the type of its input 'memref<4xf32>'}}
  culib.all_reduce <mean> ins(%a) outs(%b) {reduce_type = bf16} : memref<4xf32> -> memref<2x2xf32>
  return
}

// -----

func.func @all_reduce_wire(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-error @+1 {{'culib.all_reduce' op reduce_type must be f32, bf16 or f16, got 'f64'}}
  culib.all_reduce <max> ins(%a) outs(%b) {reduce_type = f64} : memref<4xf32> -> memref<4xf32>
  return
}
