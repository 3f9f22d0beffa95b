// mp-raise-composites: the chains exporters write for LayerNormalization and
// GELU become mp.layer_normalization and mp.gelu; chains whose intermediate
// values are read elsewhere, or that compute something else, stay.
// RUN: mp-opt %s --mp-raise-composites --split-input-file | FileCheck %s
// RUN: mp-opt %s --mp-raise-composites --split-input-file | mp-opt --split-input-file | FileCheck %s

// torch's layer norm below opset 17 (Pow 2, scale, bias) over the last dim.
// CHECK-LABEL: func.func @layer_norm(
// CHECK-SAME: %[[X:.*]]: tensor<2x3x8xf32>, %[[S:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = mp.layer_normalization %[[X]], %[[S]], %[[B]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32, mp.outputs = ["y", "", ""]} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
// CHECK-NOT: mp.reduce_mean
// CHECK-NOT: mp.pow
// CHECK: return %[[Y]]
func.func @layer_norm(%x: tensor<2x3x8xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %m = mp.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %d = mp.sub %x, %m : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %two = mp.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %p = mp.pow %d, %two : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
  %v = mp.reduce_mean %p {axes = array<i64: -1>} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %eps = mp.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %ve = mp.add %v, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %r = mp.sqrt %ve : (tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %n = mp.div %d, %r : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %ns = mp.mul %s, %n : (tensor<8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %y = mp.add %ns, %b {mp.outputs = ["y"]} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

// -----

// Over the last two dims, the square as a product, eps on the left, no scale
// or bias: the op gets a scale of ones and no bias.
// CHECK-LABEL: func.func @layer_norm_two_axes(
// CHECK: %[[ONES:.*]] = mp.constant {{ *}}{value = dense<1.000000e+00> : tensor<3x8xf32>}
// CHECK: %[[NONE:.*]] = mp.none
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = mp.layer_normalization %arg0, %[[ONES]], %[[NONE]] {axis = 1 : i64, epsilon = 1.000000e-03 : f32, mp.outputs = ["n", "", ""]} : (tensor<2x3x8xf32>, tensor<3x8xf32>, none) -> (tensor<2x3x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
// CHECK: return %[[Y]]
func.func @layer_norm_two_axes(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %m = mp.reduce_mean %x {axes = array<i64: 2, 1>} : (tensor<2x3x8xf32>) -> tensor<2x1x1xf32>
  %d = mp.sub %x, %m : (tensor<2x3x8xf32>, tensor<2x1x1xf32>) -> tensor<2x3x8xf32>
  %p = mp.mul %d, %d : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %v = mp.reduce_mean %p {axes = array<i64: -2, -1>} : (tensor<2x3x8xf32>) -> tensor<2x1x1xf32>
  %eps = mp.constant {value = dense<1.0e-3> : tensor<1xf32>} : () -> tensor<1xf32>
  %ve = mp.add %eps, %v : (tensor<1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %r = mp.sqrt %ve : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %n = mp.div %d, %r {mp.outputs = ["n"]} : (tensor<2x3x8xf32>, tensor<2x1x1xf32>) -> tensor<2x3x8xf32>
  return %n : tensor<2x3x8xf32>
}

// -----

// The deviation is an output too: the chain stays.
// CHECK-LABEL: func.func @deviation_read_elsewhere(
// CHECK-NOT: mp.layer_normalization
// CHECK: mp.reduce_mean
func.func @deviation_read_elsewhere(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %m = mp.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %d = mp.sub %x, %m : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %p = mp.mul %d, %d : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %v = mp.reduce_mean %p {axes = array<i64: -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %eps = mp.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %ve = mp.add %v, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %r = mp.sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = mp.div %d, %r : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %n, %d : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Means over a leading dim, or over different dims: not a layer norm.
// CHECK-LABEL: func.func @not_trailing(
// CHECK-NOT: mp.layer_normalization
// CHECK-LABEL: func.func @different_axes(
// CHECK-NOT: mp.layer_normalization
func.func @not_trailing(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %m = mp.reduce_mean %x {axes = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<1x8xf32>
  %d = mp.sub %x, %m : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %p = mp.mul %d, %d : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %v = mp.reduce_mean %p {axes = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<1x8xf32>
  %eps = mp.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %ve = mp.add %v, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %r = mp.sqrt %ve : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %n = mp.div %d, %r : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  return %n : tensor<2x8xf32>
}
func.func @different_axes(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %m = mp.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %d = mp.sub %x, %m : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %p = mp.mul %d, %d : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %v = mp.reduce_mean %p {axes = array<i64: 1, 2>} : (tensor<2x3x8xf32>) -> tensor<2x1x1xf32>
  %eps = mp.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %ve = mp.add %v, %eps : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
  %r = mp.sqrt %ve : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %n = mp.div %d, %r : (tensor<2x3x8xf32>, tensor<2x1x1xf32>) -> tensor<2x3x8xf32>
  return %n : tensor<2x3x8xf32>
}

// -----

// GELU as torch writes it below opset 20: x * (1 + erf(x / sqrt 2)) * 0.5.
// CHECK-LABEL: func.func @gelu_erf(
// CHECK-NEXT: %[[G:.*]] = mp.gelu %arg0 {mp.outputs = ["g"]} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_erf(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %sqrt2 = mp.constant {value = dense<1.41421354> : tensor<f32>} : () -> tensor<f32>
  %s = mp.div %x, %sqrt2 : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %e = mp.erf %s : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %one = mp.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %t = mp.add %e, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %xt = mp.mul %x, %t : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %half = mp.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %g = mp.mul %xt, %half {mp.outputs = ["g"]} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}

// -----

// Hugging Face's order, (x * 0.5) * (1 + erf(x * (1 / sqrt 2))).
// CHECK-LABEL: func.func @gelu_erf_other_order(
// CHECK-NEXT: %[[G:.*]] = mp.gelu %arg0 : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_erf_other_order(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %half = mp.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %xh = mp.mul %half, %x : (tensor<f32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = mp.constant {value = dense<0.707106769> : tensor<f32>} : () -> tensor<f32>
  %s = mp.mul %x, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %e = mp.erf %s : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %one = mp.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %t = mp.add %one, %e : (tensor<f32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %g = mp.mul %xh, %t : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}

// -----

// The tanh approximation, x^3 as Pow 3 (GPT-2's NewGELU) and as x * x * x.
// CHECK-LABEL: func.func @gelu_tanh_pow(
// CHECK-NEXT: %[[G:.*]] = mp.gelu %arg0 {approximate = "tanh"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: return %[[G]]
// CHECK-LABEL: func.func @gelu_tanh_products(
// CHECK-NEXT: %[[G:.*]] = mp.gelu %arg0 {approximate = "tanh"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_tanh_pow(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %three = mp.constant {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %x3 = mp.pow %x, %three : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %c = mp.constant {value = dense<0.044715> : tensor<f32>} : () -> tensor<f32>
  %cx3 = mp.mul %c, %x3 : (tensor<f32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %inner = mp.add %x, %cx3 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %k = mp.constant {value = dense<0.797884583> : tensor<f32>} : () -> tensor<f32>
  %u = mp.mul %k, %inner : (tensor<f32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %th = mp.tanh %u : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %one = mp.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %t = mp.add %one, %th : (tensor<f32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %half = mp.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %xh = mp.mul %half, %x : (tensor<f32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %g = mp.mul %xh, %t : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}
func.func @gelu_tanh_products(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %xx = mp.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %xxx = mp.mul %xx, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = mp.constant {value = dense<0.044715> : tensor<f32>} : () -> tensor<f32>
  %cx3 = mp.mul %xxx, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %inner = mp.add %cx3, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %k = mp.constant {value = dense<0.797884583> : tensor<f32>} : () -> tensor<f32>
  %u = mp.mul %inner, %k : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %th = mp.tanh %u : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %one = mp.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %t = mp.add %th, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %half = mp.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %xt = mp.mul %x, %t : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %g = mp.mul %half, %xt : (tensor<f32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}

// -----

// Not GELU: the erf is read elsewhere; 0.6 is not a half; 1 + erf of x / 2.
// CHECK-LABEL: func.func @erf_read_elsewhere(
// CHECK-NOT: mp.gelu
// CHECK-LABEL: func.func @wrong_half(
// CHECK-NOT: mp.gelu
// CHECK-LABEL: func.func @wrong_scale(
// CHECK-NOT: mp.gelu
func.func @erf_read_elsewhere(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %sqrt2 = mp.constant {value = dense<1.41421354> : tensor<f32>} : () -> tensor<f32>
  %s = mp.div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = mp.erf %s : (tensor<4xf32>) -> tensor<4xf32>
  %one = mp.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %t = mp.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %xt = mp.mul %x, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %half = mp.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %g = mp.mul %xt, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %g, %e : tensor<4xf32>, tensor<4xf32>
}
func.func @wrong_half(%x: tensor<4xf32>) -> tensor<4xf32> {
  %sqrt2 = mp.constant {value = dense<1.41421354> : tensor<f32>} : () -> tensor<f32>
  %s = mp.div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = mp.erf %s : (tensor<4xf32>) -> tensor<4xf32>
  %one = mp.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %t = mp.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %xt = mp.mul %x, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %half = mp.constant {value = dense<0.6> : tensor<f32>} : () -> tensor<f32>
  %g = mp.mul %xt, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}
func.func @wrong_scale(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = mp.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %s = mp.div %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = mp.erf %s : (tensor<4xf32>) -> tensor<4xf32>
  %one = mp.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %t = mp.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %xt = mp.mul %x, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %half = mp.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %g = mp.mul %xt, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}
