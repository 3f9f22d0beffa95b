// Verifier and shape-inference errors of mp ops. A shape function error is
// reported as "ONNX <op type>: <message>", followed by the generic
// "failed to infer returned types".
// RUN: mp-opt %s -split-input-file -verify-diagnostics

func.func @conv_rank_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX Conv: X has rank 4 but W has rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.conv %x, %w, %none : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @conv_channel_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX Conv: X has 3 channels but W expects 2 x group 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.conv %x, %w, %none {group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @conv_group_mismatch(%x: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX Conv: output channels 3 are not divisible by group 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.conv %x, %w, %none {group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{ONNX Conv: B must be a vector of the output channel count}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.conv %x, %w, %b : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @conv_strides_count(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX Conv: 'strides' must have 2 values, has 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.conv %x, %w, %none {strides = array<i64: 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @conv_auto_pad(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX Conv: unknown auto_pad 'SAME'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.conv %x, %w, %none {auto_pad = "SAME"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @conv_kernel_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX Conv: kernel_shape does not match W}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.conv %x, %w, %none {kernel_shape = array<i64: 3, 5>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @conv_result_type(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %none = mp.none
  // The result type contradicts the inferred 1x4x6x6.
  // expected-error @+2 {{'mp.conv' op inferred type(s) 'tensor<1x4x6x6xf32>' are incompatible with return type(s) of operation 'tensor<1x4x8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.conv %x, %w, %none : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_transpose_negative(%x: tensor<1x1x2x2xf32>, %w: tensor<1x1x3x3xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX ConvTranspose: pads remove more than the 4 elements of output dim 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.conv_transpose %x, %w, %none {pads = array<i64: 5, 5, 5, 5>} : (tensor<1x1x2x2xf32>, tensor<1x1x3x3xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @pool_kernel_count(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{ONNX AveragePool: 'kernel_shape' has 3 values for 2 spatial dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.average_pool %x {kernel_shape = array<i64: 2, 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<3x8xf32>) {
  // expected-error @+2 {{ONNX GlobalAveragePool: X must have rank >= 3, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.global_average_pool %x : (tensor<3x8xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @max_pool_needs_kernel(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{'mp.max_pool' op requires attribute 'kernel_shape'}}
  %0:2 = mp.max_pool %x : (tensor<1x1x4x4xf32>) -> (tensor<*xf32>, tensor<*xi64>)
  return
}

// -----

func.func @max_pool_results(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{'mp.max_pool' op expected 2 results}}
  %0 = mp.max_pool %x {kernel_shape = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @gemm_not_matrix(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX Gemm: A and B must be matrices}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.gemm %a, %b, %none : (tensor<2x3x4xf32>, tensor<4x5xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @gemm_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX Gemm: contraction dims differ: 3 vs 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.gemm %a, %b, %none : (tensor<2x3xf32>, tensor<4x5xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @gemm_bias(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %c: tensor<4x5xf32>) {
  // expected-error @+2 {{ONNX Gemm: C is not unidirectionally broadcastable to [M, N]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.gemm %a, %b, %c : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<4x5xf32>) -> tensor<*xf32>
  return
}

// -----

// C may not grow a dim of 1 of [M, N] either.
func.func @gemm_bias_grows(%a: tensor<1x3xf32>, %b: tensor<3x5xf32>, %c: tensor<4x5xf32>) {
  // expected-error @+2 {{ONNX Gemm: C is not unidirectionally broadcastable to [M, N]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.gemm %a, %b, %c : (tensor<1x3xf32>, tensor<3x5xf32>, tensor<4x5xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{ONNX MatMul: contraction dims differ: 3 vs 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) {
  // expected-error @+2 {{ONNX MatMul: batch dims are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{ONNX MatMul: operands must not be scalars}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @einsum_terms(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{ONNX Einsum: equation has 2 inputs but the op has 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.einsum %a {equation = "ij,jk->ik"} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @einsum_rank(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{ONNX Einsum: term 'ijk' does not match operand rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.einsum %a {equation = "ijk->k"} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @add_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{ONNX Add: operand shapes are not broadcastable: tensor<2x3xf32>, tensor<4x3xf32>}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.add %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @sum_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2xf32>) {
  // expected-error @+2 {{ONNX Sum: operand shapes are not broadcastable: tensor<2x3xf32>, tensor<3xf32>, tensor<2xf32>}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.sum %a, %b, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<2xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @add_element_types(%a: tensor<2x3xf32>) {
  // The result keeps the operands' element type.
  // expected-error @+2 {{'mp.add' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.add %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf16>
  return
}

// -----

func.func @less_not_bool(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'mp.less' op result #0 must be bool tensor, but got 'tensor<2x3xf32>'}}
  %0 = mp.less %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @exp_int(%x: tensor<2xi32>) {
  // expected-error @+1 {{'mp.exp' op operand #0 must be floating-point tensor, but got 'tensor<2xi32>'}}
  %0 = mp.exp %x : (tensor<2xi32>) -> tensor<2xi32>
  return
}

// -----

func.func @where_condition(%c: tensor<2xf32>, %x: tensor<2xf32>) {
  // expected-error @+1 {{'mp.where' op operand #0 must be bool tensor, but got 'tensor<2xf32>'}}
  %0 = mp.where %c, %x, %x : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @relu_shape(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'mp.relu' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.relu %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @relu_rank(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'mp.relu' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x3x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.relu %a : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  return
}

// -----

func.func @transpose_perm(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{ONNX Transpose: perm is not a permutation of 0..1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.transpose %a {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @transpose_perm_length(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{ONNX Transpose: perm has 3 values for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.transpose %a {perm = array<i64: 0, 1, 2>} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) {
  %s = mp.initializer "s" dense<[4, 2]> : tensor<2xi64>
  // expected-error @+2 {{ONNX Reshape: cannot reshape 6 elements into 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.reshape %a, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @reshape_infer(%a: tensor<2x3xf32>) {
  %s = mp.initializer "s" dense<[4, -1]> : tensor<2xi64>
  // expected-error @+2 {{ONNX Reshape: cannot reshape 6 elements into the requested shape}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.reshape %a, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @reshape_two_minus_one(%a: tensor<2x3xf32>) {
  %s = mp.constant {value = dense<[-1, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error @+2 {{ONNX Reshape: shape has more than one -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.reshape %a, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @reshape_result(%a: tensor<2x3xf32>) {
  %s = mp.initializer "s" dense<[3, 2]> : tensor<2xi64>
  // expected-error @+2 {{'mp.reshape' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.reshape %a, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{ONNX Concat: axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{ONNX Concat: inputs differ in dim 1 outside the concatenation axis}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @concat_ranks(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+2 {{ONNX Concat: inputs have different ranks}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  // expected-error @+2 {{ONNX Concat: inputs have different element types}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<*xf32>
  return
}

// -----

func.func @concat_needs_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'mp.concat' op requires attribute 'axis'}}
  %0 = mp.concat %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @cast_unknown_to(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{ONNX Cast: 'to' is not a known ONNX data type: 99}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.cast %a {to = 99 : i64} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @cast_result(%x: tensor<2xf32>) {
  // expected-error @+2 {{'mp.cast' op inferred type(s) 'tensor<2xf16>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.cast %x {to = 10 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @split_sizes_sum(%a: tensor<2x6xf32>) {
  %s = mp.initializer "s" dense<[1, 2]> : tensor<2xi64>
  // expected-error @+1 {{'mp.split' op 'split' sizes add up to 3 but the axis has 6 elements}}
  %0:2 = mp.split %a, %s {axis = 1 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  return
}

// -----

func.func @split_sizes_count(%a: tensor<2x6xf32>) {
  %s = mp.initializer "s" dense<[2, 4, 0]> : tensor<3xi64>
  // expected-error @+1 {{'mp.split' op 'split' gives 3 sizes for 2 outputs}}
  %0:2 = mp.split %a, %s {axis = 1 : i64} : (tensor<2x6xf32>, tensor<3xi64>) -> (tensor<2x2xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @split_sizes_negative(%a: tensor<2x6xf32>) {
  %s = mp.initializer "s" dense<[-2, 8]> : tensor<2xi64>
  // expected-error @+1 {{'mp.split' op 'split' sizes must not be negative}}
  %0:2 = mp.split %a, %s {axis = 1 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> (tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

// Output types that contradict the sizes.
func.func @split_sizes_vs_types(%a: tensor<2x6xf32>) {
  %s = mp.initializer "s" dense<[2, 4]> : tensor<2xi64>
  // expected-error @+1 {{'mp.split' op output #0 has 3 elements along the axis but the split gives it 2}}
  %0:2 = mp.split %a, %s {axis = 1 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  return
}

// -----

// Without sizes the parts are equal.
func.func @split_equal_parts(%a: tensor<2x6xf32>) {
  %none = mp.none
  // expected-error @+1 {{'mp.split' op output #1 has 4 elements along the axis but the split gives it 3}}
  %0:2 = mp.split %a, %none {axis = 1 : i64} : (tensor<2x6xf32>, none) -> (tensor<2x?xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @split_uneven(%a: tensor<2x5xf32>) {
  %none = mp.none
  // expected-error @+1 {{'mp.split' op cannot split the axis of 5 elements into 2 equal parts}}
  %0:2 = mp.split %a, %none {axis = 1 : i64} : (tensor<2x5xf32>, none) -> (tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

func.func @split_axis(%a: tensor<2x6xf32>) {
  %none = mp.none
  // expected-error @+1 {{'mp.split' op axis 2 is out of range for rank 2}}
  %0:2 = mp.split %a, %none {axis = 2 : i64} : (tensor<2x6xf32>, none) -> (tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

func.func @split_rank(%a: tensor<2x6xf32>) {
  %none = mp.none
  // expected-error @+1 {{'mp.split' op outputs must have the input's rank 2}}
  %0:2 = mp.split %a, %none {axis = 1 : i64} : (tensor<2x6xf32>, none) -> (tensor<2x3x1xf32>, tensor<*xf32>)
  return
}

// -----

func.func @split_other_dim(%a: tensor<2x6xf32>) {
  %none = mp.none
  // expected-error @+1 {{'mp.split' op output dim 0 is 3 but the input's is 2}}
  %0:2 = mp.split %a, %none {axis = 1 : i64} : (tensor<2x6xf32>, none) -> (tensor<3x3xf32>, tensor<*xf32>)
  return
}

// -----

func.func @split_element_type(%a: tensor<2x6xf32>) {
  %none = mp.none
  // expected-error @+1 {{'mp.split' op outputs must have the input's element type}}
  %0:2 = mp.split %a, %none {axis = 1 : i64} : (tensor<2x6xf32>, none) -> (tensor<2x3xf16>, tensor<*xf32>)
  return
}

// -----

func.func @split_no_outputs(%a: tensor<2x6xf32>) {
  %none = mp.none
  // expected-error @+1 {{'mp.split' op must have at least one output}}
  mp.split %a, %none {axis = 1 : i64} : (tensor<2x6xf32>, none) -> ()
  return
}

// -----

func.func @squeeze_non_one(%a: tensor<2x1xf32>) {
  %axes = mp.initializer "axes" dense<0> : tensor<1xi64>
  // expected-error @+2 {{ONNX Squeeze: cannot squeeze dim 0 of size 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.squeeze %a, %axes : (tensor<2x1xf32>, tensor<1xi64>) -> tensor<*xf32>
  return
}

// -----

// More (non-constant) axes than dims: an error, not a crash.
func.func @squeeze_too_many_axes(%x: tensor<3xf32>, %axes: tensor<2xi64>) {
  // expected-error @+2 {{ONNX Squeeze: axes has 2 values for rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.squeeze %x, %axes : (tensor<3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @unsqueeze_twice(%a: tensor<2x3xf32>) {
  %axes = mp.initializer "axes" dense<[1, -3]> : tensor<2xi64>
  // expected-error @+2 {{ONNX Unsqueeze: axes contain 1 twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.unsqueeze %a, %axes : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @gather_axis(%a: tensor<2x3xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{ONNX Gather: axis -3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.gather %a, %i {axis = -3 : i64} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @slice_step_zero(%a: tensor<2x3xf32>) {
  %c0 = mp.initializer "c0" dense<0> : tensor<1xi64>
  %c2 = mp.initializer "c2" dense<2> : tensor<1xi64>
  // expected-error @+2 {{ONNX Slice: steps must not be 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.slice %a, %c0, %c2, %c0, %c0 : (tensor<2x3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @pad_count(%a: tensor<2x3xf32>) {
  %p = mp.initializer "p" dense<[1, 1]> : tensor<2xi64>
  %none = mp.none
  // expected-error @+2 {{ONNX Pad: pads has 2 values for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.pad %a, %p, %none : (tensor<2x3xf32>, tensor<2xi64>, none) -> tensor<*xf32>
  return
}

// -----

// Negative pads crop, but not below zero elements.
func.func @pad_negative_dim(%x: tensor<2x3xf32>) {
  %p = mp.initializer "p" dense<[0, -2, 0, -2]> : tensor<4xi64>
  %none = mp.none
  // expected-error @+2 {{ONNX Pad: pads remove more than the 3 elements of dim 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.pad %x, %p, %none : (tensor<2x3xf32>, tensor<4xi64>, none) -> tensor<*xf32>
  return
}

// -----

func.func @pad_mode(%a: tensor<2x3xf32>, %p: tensor<4xi64>) {
  %none = mp.none
  // expected-error @+2 {{ONNX Pad: unknown mode 'mirror'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.pad %a, %p, %none {mode = "mirror"} : (tensor<2x3xf32>, tensor<4xi64>, none) -> tensor<*xf32>
  return
}

// -----

func.func @resize_negative_sizes(%x: tensor<2x3xf32>) {
  %s = mp.initializer "s" dense<[2, -3]> : tensor<2xi64>
  %none = mp.none
  // expected-error @+2 {{ONNX Resize: sizes must not be negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.resize %x, %none, %none, %s : (tensor<2x3xf32>, none, none, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @resize_scales(%x: tensor<2x3xf32>) {
  %s = mp.initializer "s" dense<[1.0, 0.0]> : tensor<2xf32>
  %none = mp.none
  // expected-error @+2 {{ONNX Resize: scales must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.resize %x, %none, %s, %none : (tensor<2x3xf32>, none, tensor<2xf32>, none) -> tensor<*xf32>
  return
}

// -----

func.func @expand_negative(%x: tensor<3x1xf32>) {
  %s = mp.initializer "s" dense<[-1, 3, 4]> : tensor<3xi64>
  // expected-error @+2 {{ONNX Expand: shape must not have negative dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.expand %x, %s : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @expand_not_broadcastable(%x: tensor<3x2xf32>) {
  %s = mp.initializer "s" dense<[3, 4]> : tensor<2xi64>
  // expected-error @+2 {{ONNX Expand: input is not broadcastable to the requested shape}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.expand %x, %s : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @tile_count(%x: tensor<3x2xf32>) {
  %r = mp.initializer "r" dense<[3]> : tensor<1xi64>
  // expected-error @+2 {{ONNX Tile: repeats has 1 values for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.tile %x, %r : (tensor<3x2xf32>, tensor<1xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @topk_too_large(%x: tensor<3x4xf32>) {
  %k = mp.initializer "k" dense<5> : tensor<1xi64>
  // expected-error @+2 {{ONNX TopK: K 5 exceeds the axis size 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = mp.top_k %x, %k : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<*xf32>, tensor<*xi64>)
  return
}

// -----

func.func @batch_norm_scale(%x: tensor<2x3x4x4xf32>, %c: tensor<3xf32>, %d: tensor<4xf32>) {
  // expected-error @+2 {{ONNX BatchNormalization: B must be a vector of the channel count 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = mp.batch_normalization %x, %c, %d, %c, %c : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x3xf32>, %s: tensor<3xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX LayerNormalization: axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = mp.layer_normalization %x, %s, %none {axis = 2 : i64} : (tensor<2x3xf32>, tensor<3xf32>, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

func.func @reduce_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{ONNX ReduceMean: axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.reduce_mean %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @lstm_direction(%x: tensor<3x4x5xf32>, %w: tensor<1x8x5xf32>, %r: tensor<1x8x2xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX LSTM: unknown direction 'both'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = mp.lstm %x, %w, %r, %none, %none, %none, %none, %none {direction = "both"} : (tensor<3x4x5xf32>, tensor<1x8x5xf32>, tensor<1x8x2xf32>, none, none, none, none, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

func.func @gru_num_directions(%x: tensor<3x4x5xf32>, %w: tensor<1x6x5xf32>, %r: tensor<1x6x2xf32>) {
  %none = mp.none
  // expected-error @+2 {{ONNX GRU: W's first dim must be num_directions 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = mp.gru %x, %w, %r, %none, %none, %none {direction = "bidirectional"} : (tensor<3x4x5xf32>, tensor<1x6x5xf32>, tensor<1x6x2xf32>, none, none, none) -> (tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

func.func @loss_reduction(%s: tensor<2x3xf32>, %l: tensor<2xi64>) {
  %none = mp.none
  // expected-error @+2 {{ONNX NegativeLogLikelihoodLoss: unknown reduction 'max'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.negative_log_likelihood_loss %s, %l, %none {reduction = "max"} : (tensor<2x3xf32>, tensor<2xi64>, none) -> tensor<*xf32>
  return
}

// -----

func.func @depth_to_space(%x: tensor<1x6x2x2xf32>) {
  // expected-error @+2 {{ONNX DepthToSpace: channels must be divisible by blocksize^2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.depth_to_space %x {blocksize = 2 : i64} : (tensor<1x6x2x2xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @range_delta() {
  %a = mp.initializer "a" dense<1> : tensor<i64>
  %zero = mp.initializer "zero" dense<0> : tensor<i64>
  // expected-error @+2 {{ONNX Range: delta must not be 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.range %a, %a, %zero : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<*xi64>
  return
}

// -----

func.func @range_scalars(%a: tensor<1xi64>) {
  // expected-error @+2 {{ONNX Range: start, limit and delta must be scalars}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.range %a, %a, %a : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xi64>
  return
}

// -----

func.func @constant_two_values() {
  // expected-error @+2 {{ONNX Constant: exactly one value attribute must be set, found 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.constant {value_int = 1 : i64, value_float = 1.0 : f32} : () -> tensor<i64>
  return
}

// -----

func.func @constant_no_value() {
  // expected-error @+2 {{ONNX Constant: exactly one value attribute must be set, found 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.constant : () -> tensor<i64>
  return
}

// -----

func.func @constant_of_shape_negative() {
  %s = mp.initializer "s" dense<[2, -1]> : tensor<2xi64>
  // expected-error @+2 {{ONNX ConstantOfShape: shape must not have negative dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = mp.constant_of_shape %s : (tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @onnx_op_region_names(%a: tensor<i1>) {
  // expected-error @+1 {{'mp.onnx_op' op has 2 subgraph regions but 1 region names}}
  %0 = mp.onnx_op "" "If" version 13 (%a) {region_names = ["then_branch"]} subgraphs {
    mp.yield
  }, {
    mp.yield
  } : (tensor<i1>) -> tensor<2xf32>
  return
}

// -----

func.func @onnx_op_region_names_without_regions(%a: tensor<i1>) {
  // expected-error @+1 {{'mp.onnx_op' op has 0 subgraph regions but 1 region names}}
  %0 = mp.onnx_op "" "If" version 13 (%a) {region_names = ["then_branch"]} : (tensor<i1>) -> tensor<2xf32>
  return
}

// -----

func.func @onnx_op_yield(%a: tensor<i1>) {
  // expected-error @+1 {{'mp.onnx_op' op subgraph regions must end with mp.yield}}
  mp.onnx_op "" "If" version 13 (%a) {region_names = ["then_branch"]} subgraphs {
    func.return
  } : (tensor<i1>) -> ()
  return
}

// -----

func.func @onnx_op_version(%a: tensor<2x6xf32>) {
  // expected-error @+1 {{'mp.onnx_op' op opset version must be positive, got 0}}
  mp.onnx_op "" "Foo" version 0 (%a) : (tensor<2x6xf32>) -> ()
  return
}

// -----

func.func @onnx_op_type(%a: tensor<2x6xf32>) {
  // expected-error @+1 {{'mp.onnx_op' op op_type must not be empty}}
  mp.onnx_op "com.example" "" version 1 (%a) : (tensor<2x6xf32>) -> ()
  return
}

// -----

func.func @yield_outside(%a: tensor<2xf32>) {
  // expected-error @+1 {{'mp.yield' op must be the last operation in the parent block}}
  mp.yield %a : tensor<2xf32>
  return
}

// -----

func.func @initializer_without_name() {
  // expected-error @+1 {{'mp.initializer' op initializer must have a name}}
  %0 = mp.initializer "" dense<1.0> : tensor<2xf32>
  return
}

// -----

func.func @initializer_vector() {
  // expected-error @+1 {{'mp.initializer' op result #0 must be tensor of any type values, but got 'vector<2xf32>'}}
  %0 = mp.initializer "v" dense<1.0> : vector<2xf32>
  return
}

// -----

func.func @initializer_result_type() {
  // expected-error @+2 {{'mp.initializer' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "mp.initializer"() <{name = "v", value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return
}

// -----

func.func @none_result_type() {
  // expected-error @+1 {{'mp.none' op result #0 must be none type, but got 'tensor<f32>'}}
  %0 = "mp.none"() : () -> tensor<f32>
  return
}

// -----

// expected-error @+1 {{type `nosuchtype` in dialect `mp`}}
func.func private @bad_type(!mp.nosuchtype)

// -----

// batch_norm_grad: the scale and bias gradients have scale's type.
func.func @batch_norm_grad_types(%x: tensor<2x4x3xf16>, %scale: tensor<4xf32>, %dy: tensor<2x4x3xf16>) {
  // expected-error @+2 {{'mp.batch_norm_grad' op inferred type(s) 'tensor<2x4x3xf16>', 'tensor<4xf32>', 'tensor<4xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %ds, %db = mp.batch_norm_grad %x, %scale, %dy {epsilon = 1.0e-5 : f32} : (tensor<2x4x3xf16>, tensor<4xf32>, tensor<2x4x3xf16>) -> (tensor<2x4x3xf16>, tensor<4xf16>, tensor<4xf16>)
  return
}

// -----

// all_reduce: each output has its input's type; known reductions and
// reduce types only.
func.func @all_reduce_types(%g: tensor<4xf32>) {
  // expected-error @+1 {{'mp.all_reduce' op output 'tensor<4xf16>' does not have the type of its input 'tensor<4xf32>'}}
  %r = mp.all_reduce %g {reduce_type = f32, reduction = "mean"} : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @all_reduce_product(%g: tensor<4xf32>) {
  // expected-error @+1 {{'mp.all_reduce' op reduction must be mean, sum or max, got 'prod'}}
  %r = mp.all_reduce %g {reduce_type = f32, reduction = "prod"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @all_reduce_f64_wire(%g: tensor<4xf32>) {
  // expected-error @+1 {{'mp.all_reduce' op reduce_type must be f32, bf16 or f16, got 'f64'}}
  %r = mp.all_reduce %g {reduce_type = f64, reduction = "sum"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}
