// mp-training with optimizer=none: no update and no optimizer state; the
// gradient of every parameter becomes an output named grad:<parameter>, after
// loss and prediction; with wrt-inputs also grad:<input> for every float
// input (zeros for one the loss does not depend on). Frozen initializers stay
// constants (no global, no gradient), with any optimizer.
// RUN: mp-opt %s --mp-training=optimizer=none | FileCheck %s --check-prefix=NONE
// RUN: mp-opt %s --mp-training="optimizer=none wrt-inputs=true frozen=fc1.bias,fc2.weight" | FileCheck %s --check-prefix=WRT
// RUN: mp-opt %s --mp-training="frozen=fc1.weight frozen=fc2.bias" | FileCheck %s --check-prefix=FROZEN

// NONE:      ml_program.global private mutable @fc1.weight(
// NONE-NEXT: ml_program.global private mutable @fc1.bias(
// NONE-NEXT: ml_program.global private mutable @fc2.weight(
// NONE-NEXT: ml_program.global private mutable @fc2.bias(
// NONE-NOT:  ml_program.global
// NONE-LABEL: func.func @main(
// NONE-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<4x3xf32> {mp.name = "logits"}, tensor<8x16xf32> {mp.name = "grad:fc1.weight"}, tensor<16xf32> {mp.name = "grad:fc1.bias"}, tensor<16x3xf32> {mp.name = "grad:fc2.weight"}, tensor<3xf32> {mp.name = "grad:fc2.bias"})
// NONE-SAME: mp.training = {data_input = "x", label_input = "label", loss_output = "loss", prediction_output = "logits", task = "classification"}
// NONE-NOT:  _update
// NONE:      %[[DL:.*]] = mp.softmax_cross_entropy_grad
// NONE:      %[[DW2:.*]] = mp.gemm %{{.*}}, %[[DL]], %{{.*}} {transA = 1 : i64} : (tensor<4x16xf32>, tensor<4x3xf32>, none) -> tensor<16x3xf32>
// NONE:      %[[DB2:.*]] = mp.reshape {{.*}} -> tensor<3xf32>
// Tanh: dy * (1 - y*y).
// NONE:      %[[YY:.*]] = mp.mul %[[Y:.*]], %[[Y]] : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// NONE:      %[[OM:.*]] = mp.sub %{{.*}}, %[[YY]]
// NONE:      %[[DH:.*]] = mp.mul %{{.*}}, %[[OM]]
// NONE:      %[[DW1:.*]] = mp.gemm %{{.*}}, %[[DH]], %{{.*}} {transA = 1 : i64} : (tensor<4x8xf32>, tensor<4x16xf32>, none) -> tensor<8x16xf32>
// NONE:      %[[DB1:.*]] = mp.reshape {{.*}} -> tensor<16xf32>
// NONE-NOT:  _update
// NONE:      return %{{.*}}, %{{.*}}, %[[DW1]], %[[DB1]], %[[DW2]], %[[DB2]] :

// Only the two trained parameters are globals; the frozen ones stay
// initializers and have no gradient output.
// WRT:      ml_program.global private mutable @fc1.weight(
// WRT-NEXT: ml_program.global private mutable @fc2.bias(
// WRT-NOT:  ml_program.global
// WRT-LABEL: func.func @main(
// WRT-SAME: %[[X:[^:]*]]: tensor<4x8xf32> {mp.name = "x"}, %[[SHIFT:[^:]*]]: tensor<4x3xf32> {mp.name = "shift"}, %{{[^:]*}}: tensor<2xf32> {mp.name = "unused"}, %{{[^:]*}}: tensor<4xi64> {mp.name = "label"})
// WRT-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<4x3xf32> {mp.name = "logits"}, tensor<8x16xf32> {mp.name = "grad:fc1.weight"}, tensor<3xf32> {mp.name = "grad:fc2.bias"}, tensor<4x8xf32> {mp.name = "grad:x"}, tensor<4x3xf32> {mp.name = "grad:shift"}, tensor<2xf32> {mp.name = "grad:unused"})
// WRT-NEXT: %[[W1:.*]] = ml_program.global_load @fc1.weight
// WRT-NEXT: mp.initializer "fc1.bias" dense<0.000000e+00> : tensor<16xf32>
// WRT-NEXT: %[[W2:.*]] = mp.initializer "fc2.weight" dense<2.000000e-01> : tensor<16x3xf32>
// WRT-NEXT: ml_program.global_load @fc2.bias
// The gradient of the shift input is the loss gradient itself (Add).
// WRT:      %[[DL:.*]] = mp.softmax_cross_entropy_grad
// WRT:      mp.gemm %[[DL]], %[[W2]], %{{.*}} {transB = 1 : i64}
// No gradient for the frozen fc2.weight.
// WRT-NOT:  -> tensor<16x3xf32>
// WRT:      %[[DX:.*]] = mp.gemm %[[DH:.*]], %[[W1]], %{{.*}} {transB = 1 : i64} : (tensor<4x16xf32>, tensor<8x16xf32>, none) -> tensor<4x8xf32>
// WRT:      %[[DW1:.*]] = mp.gemm %[[X]], %[[DH]], %{{.*}} {transA = 1 : i64}
// WRT:      %[[ZEROS:.*]] = mp.constant {value = dense<0.000000e+00> : tensor<2xf32>} : () -> tensor<2xf32>
// WRT-NEXT: return %{{.*}}, %{{.*}}, %[[DW1]], %{{.*}}, %[[DX]], %[[DL]], %[[ZEROS]] :

// FROZEN:      ml_program.global private mutable @fc1.bias(
// FROZEN-NEXT: ml_program.global private mutable @fc2.weight(
// FROZEN-NEXT: ml_program.global private mutable @fc1.bias.step(
// FROZEN-NEXT: ml_program.global private mutable @fc2.weight.step(
// FROZEN-NOT:  ml_program.global
// FROZEN:      mp.initializer "fc1.weight" dense<1.000000e-01> : tensor<8x16xf32>
// FROZEN:      mp.initializer "fc2.bias" dense<0.000000e+00> : tensor<3xf32>
// FROZEN-NOT:  grad:
// FROZEN:      mp.sgd_update {{.*}}param = @fc1.bias
// FROZEN-NEXT: mp.none
// FROZEN-NEXT: mp.sgd_update {{.*}}param = @fc2.weight
// FROZEN-NEXT: return

func.func @main(%x: tensor<4x8xf32> {mp.name = "x"}, %shift: tensor<4x3xf32> {mp.name = "shift"}, %unused: tensor<2xf32> {mp.name = "unused"}) -> (tensor<4x3xf32> {mp.name = "logits"}) {
  %w1 = mp.initializer "fc1.weight" dense<0.1> : tensor<8x16xf32>
  %b1 = mp.initializer "fc1.bias" dense<0.0> : tensor<16xf32>
  %w2 = mp.initializer "fc2.weight" dense<0.2> : tensor<16x3xf32>
  %b2 = mp.initializer "fc2.bias" dense<0.0> : tensor<3xf32>
  %h = mp.gemm %x, %w1, %b1 : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("fc1")
  %r = mp.tanh %h : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("tanh")
  %l = mp.gemm %r, %w2, %b2 : (tensor<4x16xf32>, tensor<16x3xf32>, tensor<3xf32>) -> tensor<4x3xf32> loc("fc2")
  %y = mp.add %l, %shift : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc("shift_add")
  return %y : tensor<4x3xf32>
}
