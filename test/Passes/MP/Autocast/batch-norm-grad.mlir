// The batch-norm gradient under autocast. By default (deny) it runs in f32
// between casts of x, dy and dx. With infer=BatchNormGrad it follows its
// neighbours like the forward: 16-bit x, dy and dx, while scale (a kept
// operand) and the scale and bias gradients (typed like scale) stay f32, as
// cuDNN's batch-norm backward takes them.
// RUN: mp-opt %s --mp-autocast --mlir-print-local-scope | FileCheck %s --check-prefix=DEFAULT
// RUN: mp-opt %s --mp-autocast="infer=BatchNormGrad" --mlir-print-local-scope | FileCheck %s --check-prefix=INFER
// Round trip of the result.
// RUN: mp-opt %s --mp-autocast="infer=BatchNormGrad" | mp-opt | FileCheck %s --check-prefix=INFER

func.func @bn_backward(%x: tensor<2x3x4x4xf32> {mp.name = "x"},
                       %w: tensor<4x3x3x3xf32> {mp.name = "w"},
                       %w4: tensor<4x4x3x3xf32> {mp.name = "w4"},
                       %scale: tensor<4xf32> {mp.name = "scale"},
                       %dy: tensor<2x4x4x4xf32> {mp.name = "dy"})
    -> (tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  %none = mp.none
  %c = mp.conv %x, %w, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>, none) -> tensor<2x4x4x4xf32> loc("conv")
  %dyc = mp.conv %dy, %w4, %none {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x4x4xf32>, tensor<4x4x3x3xf32>, none) -> tensor<2x4x4x4xf32> loc("dy")
  %dx, %dscale, %dbias = mp.batch_norm_grad %c, %scale, %dyc {epsilon = 1.0e-5 : f32} : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) loc("bn/grad")
  %dw = mp.conv_grad_filter %x, %dx {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x3x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<4x3x3x3xf32> loc("conv/grad")
  return %dw, %dscale, %dbias : tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>
}

// DEFAULT: mp.cast {{.*}} : (tensor<2x4x4x4xf16>) -> tensor<2x4x4x4xf32>
// DEFAULT: mp.cast {{.*}} : (tensor<2x4x4x4xf16>) -> tensor<2x4x4x4xf32>
// DEFAULT: %[[DX:.*]], %{{.*}}, %{{.*}} = mp.batch_norm_grad {{.*}} : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
// DEFAULT: %[[DX16:.*]] = mp.cast %[[DX]] {{.*}} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf16>
// DEFAULT: mp.conv_grad_filter %{{.*}}, %[[DX16]]

// INFER-NOT: mp.cast {{.*}} -> tensor<2x4x4x4xf32>
// INFER: %[[DX:.*]], %{{.*}}, %{{.*}} = mp.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {epsilon = {{.*}}} : (tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<2x4x4x4xf16>) -> (tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>)
// INFER-NOT: mp.cast
// INFER: mp.conv_grad_filter %{{.*}}, %[[DX]] {{.*}} : (tensor<2x3x4x4xf16>, tensor<2x4x4x4xf16>) -> tensor<4x3x3x3xf16>
