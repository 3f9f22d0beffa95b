// `none` stands alone in dtypes: next to an element type it is refused.
// RUN: mp-opt %s --culib-nhwc-layout="dtypes=none,f32" -verify-diagnostics

// expected-error @+1 {{culib-nhwc-layout: unknown dtype 'none' in 'dtypes' (f16, bf16, f32, f64, or none alone)}}
func.func @f() {
  return
}
