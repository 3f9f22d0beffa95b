// The layouts the culib ops accept after culib-nhwc-layout.
// RUN: mp-opt %s -verify-diagnostics -split-input-file

func.func @pool_indices_nhwc(%x: memref<1x4x4x3xf16>, %y: memref<1x2x2x3xf16>, %i: memref<1x2x2x3xi64>) {
  // expected-error @+1 {{indices are ONNX's NCHW indices: layout must be nchw}}
  culib.pool ins(%x) outs(%y) indices(%i) {layout = #culib.layout<nhwc>, mode = "max", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>} : memref<1x4x4x3xf16>, memref<1x2x2x3xf16>, memref<1x2x2x3xi64>
  return
}

// -----

func.func @batch_norm_layout(%x: memref<2x4x4x3xf16>, %s: memref<3xf32>) {
  // expected-error @+2 {{expected ::mp::culib::Layout to be one of: nchw, nhwc}}
  // expected-error @+1 {{failed to parse CuLib_LayoutAttr parameter 'value'}}
  culib.batch_norm_inference ins(%x, %s, %s, %s, %s) outs(%x) {epsilon = 1.0e-5 : f32, layout = #culib.layout<hwcn>} : memref<2x4x4x3xf16>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<2x4x4x3xf16>
  return
}

// -----

// NHWC: the channels are the last dim (3), not dim 1 (4).
func.func @batch_norm_channels(%x: memref<2x3x4x4xf16>, %s: memref<3xf32>) {
  // expected-error @+1 {{scale, bias and statistics}}
  culib.batch_norm_inference ins(%x, %s, %s, %s, %s) outs(%x) {epsilon = 1.0e-5 : f32, layout = #culib.layout<nhwc>} : memref<2x3x4x4xf16>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>, memref<2x3x4x4xf16>
  return
}

// -----

func.func @pool_channels(%x: memref<1x4x4x3xf16>, %y: memref<1x2x2x4xf16>) {
  // expected-error @+1 {{X and Y must agree in batch and channels}}
  culib.pool ins(%x) outs(%y) {layout = #culib.layout<nhwc>, mode = "avg", pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, window = array<i64: 2, 2>} : memref<1x4x4x3xf16>, memref<1x2x2x4xf16>
  return
}
