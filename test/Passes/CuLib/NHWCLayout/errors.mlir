// RUN: mp-opt %s --culib-nhwc-layout="dtypes=f8" -verify-diagnostics -split-input-file

// expected-error @+1 {{culib-nhwc-layout: unknown dtype 'f8' in 'dtypes' (f16, bf16, f32, f64, or none alone)}}
func.func @f() {
  return
}

