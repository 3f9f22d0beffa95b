// RUN: mp-opt %s --culib-plan-memory="alignment=48" -verify-diagnostics

// expected-error @+1 {{alignment must be a power of two, got 48}}
func.func @f() {
  return
}
