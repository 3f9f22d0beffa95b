// mp-master-weights' errors: an update naming a global the module does not
// have (reported on the update), and a low-precision global whose value
// cannot be widened to f32 (reported on the global): an external value, a
// resource without data, or a resource of another size than its type.
// RUN: mp-opt %s -split-input-file --mp-master-weights -verify-diagnostics

func.func @missing_parameter(%g: tensor<4xf32>) {
  %none = mp.none
  // expected-error @+1 {{mp-master-weights: mp.sgd_update updates @w, which is not a global of the module}}
  mp.sgd_update %g, %none {lr = 0.1 : f32, param = @w, step = @w.step} : (tensor<4xf32>, none) -> ()
  return
}

// -----

module {
  ml_program.global private mutable @w(dense<1.0> : tensor<4xf16>) : tensor<4xf16>
  ml_program.global private mutable @w.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
  func.func @missing_momentum_buffer(%g: tensor<4xf32>) {
    %none = mp.none
    // expected-error @+1 {{mp-master-weights: mp.sgd_update updates @w.momentum, which is not a global of the module}}
    mp.sgd_update %g, %none {lr = 0.1 : f32, momentum = 0.9 : f32, momentum_buffer = @w.momentum, param = @w, step = @w.step} : (tensor<4xf32>, none) -> ()
    return
  }
}

// -----

module {
  ml_program.global private mutable @w(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
  ml_program.global private mutable @w.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
  func.func @missing_adam_moment(%g: tensor<4xf32>) {
    %none = mp.none
    // expected-error @+1 {{mp-master-weights: mp.adam_update updates @w.exp_avg, which is not a global of the module}}
    mp.adam_update %g, %none {lr = 0.1 : f32, param = @w, exp_avg = @w.exp_avg, exp_avg_sq = @w.exp_avg_sq, step = @w.step} : (tensor<4xf32>, none) -> ()
    return
  }
}

// -----

module {
  // expected-error @+1 {{mp-master-weights: cannot widen the value of @w to f32}}
  ml_program.global private mutable @w(#ml_program.extern : tensor<4xf16>) : tensor<4xf16>
  ml_program.global private mutable @w.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
  func.func @external_value(%g: tensor<4xf32>) {
    %none = mp.none
    mp.sgd_update %g, %none {lr = 0.1 : f32, param = @w, step = @w.step} : (tensor<4xf32>, none) -> ()
    return
  }
}

// -----

module {
  // expected-error @+1 {{mp-master-weights: cannot widen the value of @w to f32}}
  ml_program.global private mutable @w(dense_resource<no_data> : tensor<4xbf16>) : tensor<4xbf16>
  ml_program.global private mutable @w.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
  func.func @resource_without_data(%g: tensor<4xf32>) {
    %none = mp.none
    mp.sgd_update %g, %none {lr = 0.1 : f32, param = @w, step = @w.step} : (tensor<4xf32>, none) -> ()
    return
  }
}

// -----

// Two f16 values for a tensor of four.
module {
  // expected-error @+1 {{mp-master-weights: cannot widen the value of @w to f32}}
  ml_program.global private mutable @w(dense_resource<short> : tensor<4xf16>) : tensor<4xf16>
  ml_program.global private mutable @w.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
  func.func @resource_too_short(%g: tensor<4xf32>) {
    %none = mp.none
    mp.sgd_update %g, %none {lr = 0.1 : f32, param = @w, step = @w.step} : (tensor<4xf32>, none) -> ()
    return
  }
}
{-#
  dialect_resources: {
    builtin: {
      short: "0x02000000003C0040"
    }
  }
#-}
