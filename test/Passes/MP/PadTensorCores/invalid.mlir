// RUN: mp-opt %s --mp-pad-tensor-cores="multiple=0" -verify-diagnostics

// expected-error @+1 {{mp-pad-tensor-cores: multiple must be >= 1 and max-growth >= 1, got 0 and 1.35}}
func.func @f(%a: tensor<4x4xf16>) -> tensor<4x4xf16> {
  return %a : tensor<4x4xf16>
}
