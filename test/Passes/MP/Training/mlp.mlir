// mp-training on an MLP (Gemm -> Relu -> Gemm -> Mul by a scalar -> Softmax):
// the cross-entropy loss is taken on the softmax's input (logits) with a new
// int64 `label` input; every float initializer the loss depends on becomes a
// mutable ml_program.global read by one global_load (the scalar one stays an
// initializer); the backward pass starts from the marked loss seed; each
// parameter gets its optimizer update with its state globals (sgd, sgd with
// momentum/dampening/nesterov, adam, adamw); the function returns
// (loss, prediction) and carries the mp.training attribute.
// RUN: mp-opt %s --mp-training | FileCheck %s --check-prefixes=CHECK,SGD
// RUN: mp-opt %s --mp-training="momentum=0.9 dampening=0.1 weight-decay=0.001 lr=0.5" | FileCheck %s --check-prefix=MOMENTUM
// RUN: mp-opt %s --mp-training="momentum=0.9 nesterov=true" | FileCheck %s --check-prefix=NESTEROV
// RUN: mp-opt %s --mp-training=optimizer=adam | FileCheck %s --check-prefix=ADAM
// RUN: mp-opt %s --mp-training="optimizer=adamw lr=0.001 beta1=0.8 beta2=0.99 eps=1e-6 weight-decay=0.01" | FileCheck %s --check-prefix=ADAMW
// RUN: mp-opt %s --mp-training="label=target" | FileCheck %s --check-prefix=TARGET

// Parameters first (in the order of their initializers), then the state.
// CHECK:      ml_program.global private mutable @fc1.weight(dense<1.000000e-01> : tensor<16x8xf32>) : tensor<16x8xf32>
// CHECK-NEXT: ml_program.global private mutable @fc1.bias(dense<0.000000e+00> : tensor<16xf32>) : tensor<16xf32>
// CHECK-NEXT: ml_program.global private mutable @fc2.weight(dense<2.000000e-01> : tensor<3x16xf32>) : tensor<3x16xf32>
// CHECK-NEXT: ml_program.global private mutable @fc2.bias(dense<0.000000e+00> : tensor<3xf32>) : tensor<3xf32>
// SGD-NEXT:   ml_program.global private mutable @fc1.weight.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// SGD-NEXT:   ml_program.global private mutable @fc1.bias.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// SGD-NEXT:   ml_program.global private mutable @fc2.weight.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// SGD-NEXT:   ml_program.global private mutable @fc2.bias.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// CHECK-NOT:  ml_program.global
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32> {mp.name = "x"}, %[[LBL:.*]]: tensor<4xi64> {mp.name = "label"})
// CHECK-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<4x3xf32> {mp.name = "probs"})
// CHECK-SAME: attributes {mp.training = {data_input = "x", label_input = "label", loss_output = "loss", prediction_output = "probs", task = "classification"}}
// CHECK-NEXT: %[[W1:.*]] = ml_program.global_load @fc1.weight : tensor<16x8xf32>
// CHECK-NEXT: %[[B1:.*]] = ml_program.global_load @fc1.bias : tensor<16xf32>
// CHECK-NEXT: %[[W2:.*]] = ml_program.global_load @fc2.weight : tensor<3x16xf32>
// CHECK-NEXT: %[[B2:.*]] = ml_program.global_load @fc2.bias : tensor<3xf32>
// A one-element initializer is not a parameter.
// CHECK-NEXT: %[[T:.*]] = mp.initializer "temperature" dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[H:.*]] = mp.gemm %[[X]], %[[W1]], %[[B1]] {transB = 1 : i64}
// CHECK-NEXT: %[[R:.*]] = mp.relu %[[H]]
// CHECK-NEXT: %[[L:.*]] = mp.gemm %[[R]], %[[W2]], %[[B2]] {transB = 1 : i64}
// CHECK-NEXT: %[[S:.*]] = mp.mul %[[L]], %[[T]]
// CHECK-NEXT: %[[P:.*]] = mp.softmax %[[S]] {axis = 1 : i64}
// The loss is on the softmax's input: softmax cross-entropy of the logits.
// CHECK:      %[[LOSS:.*]], %{{.*}} = mp.softmax_cross_entropy_loss %[[S]], %[[LBL]], %{{.*}} {reduction = "mean"} : (tensor<4x3xf32>, tensor<4xi64>, none) -> (tensor<f32>, tensor<4x3xf32>)
// CHECK-NEXT: %[[SEED:.*]] = mp.constant {mp.loss_seed, value = dense<1.000000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK:      %[[DS:.*]] = mp.softmax_cross_entropy_grad %[[S]], %[[LBL]], %[[SEED]], %{{.*}} : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>, none) -> tensor<4x3xf32>
// Only the logits get a gradient from the Mul, not the scalar.
// CHECK-NEXT: %[[DL:.*]] = mp.mul %[[DS]], %[[T]]
// CHECK:      %[[DR:.*]] = mp.gemm %[[DL]], %[[W2]], %{{.*}} : (tensor<4x3xf32>, tensor<3x16xf32>, none) -> tensor<4x16xf32>
// CHECK:      %[[DW2:.*]] = mp.gemm %[[DL]], %[[R]], %{{.*}} {transA = 1 : i64} : (tensor<4x3xf32>, tensor<4x16xf32>, none) -> tensor<3x16xf32>
// CHECK:      %[[DB2S:.*]] = mp.reduce_sum %[[DL]], %{{.*}} {keepdims = 1 : i64} : (tensor<4x3xf32>, tensor<1xi64>) -> tensor<1x3xf32>
// CHECK:      %[[DB2:.*]] = mp.reshape %[[DB2S]], %{{.*}} -> tensor<3xf32>
// CHECK:      %[[POS:.*]] = mp.greater %[[H]], %{{.*}}
// CHECK:      %[[DH:.*]] = mp.where %[[POS]], %[[DR]], %{{.*}}
// No gradient of the data input x: only dW1 from the first Gemm.
// CHECK-NOT:  mp.gemm %{{.*}}, %[[W1]]
// CHECK:      %[[DW1:.*]] = mp.gemm %[[DH]], %[[X]], %{{.*}} {transA = 1 : i64} : (tensor<4x16xf32>, tensor<4x8xf32>, none) -> tensor<16x8xf32>
// CHECK:      %[[DB1S:.*]] = mp.reduce_sum %[[DH]]
// CHECK:      %[[DB1:.*]] = mp.reshape %[[DB1S]]
// SGD:        mp.sgd_update %[[DW1]], %{{.*}} {lr = 0.00999999977 : f32, param = @fc1.weight, step = @fc1.weight.step} : (tensor<16x8xf32>, none) -> ()
// SGD:        mp.sgd_update %[[DB1]], %{{.*}} {lr = 0.00999999977 : f32, param = @fc1.bias, step = @fc1.bias.step} : (tensor<16xf32>, none) -> ()
// SGD:        mp.sgd_update %[[DW2]], %{{.*}} {lr = 0.00999999977 : f32, param = @fc2.weight, step = @fc2.weight.step} : (tensor<3x16xf32>, none) -> ()
// SGD:        mp.sgd_update %[[DB2]], %{{.*}} {lr = 0.00999999977 : f32, param = @fc2.bias, step = @fc2.bias.step} : (tensor<3xf32>, none) -> ()
// CHECK-NEXT: return %[[LOSS]], %[[P]] : tensor<f32>, tensor<4x3xf32>

// Momentum: a zero-initialised momentum buffer per parameter, before its step.
// MOMENTUM:      ml_program.global private mutable @fc2.bias(
// MOMENTUM-NEXT: ml_program.global private mutable @fc1.weight.momentum(dense<0.000000e+00> : tensor<16x8xf32>) : tensor<16x8xf32>
// MOMENTUM-NEXT: ml_program.global private mutable @fc1.weight.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// MOMENTUM-NEXT: ml_program.global private mutable @fc1.bias.momentum(dense<0.000000e+00> : tensor<16xf32>) : tensor<16xf32>
// MOMENTUM-NEXT: ml_program.global private mutable @fc1.bias.step(
// MOMENTUM-NEXT: ml_program.global private mutable @fc2.weight.momentum(dense<0.000000e+00> : tensor<3x16xf32>) : tensor<3x16xf32>
// MOMENTUM-NEXT: ml_program.global private mutable @fc2.weight.step(
// MOMENTUM-NEXT: ml_program.global private mutable @fc2.bias.momentum(dense<0.000000e+00> : tensor<3xf32>) : tensor<3xf32>
// MOMENTUM-NEXT: ml_program.global private mutable @fc2.bias.step(
// MOMENTUM: mp.sgd_update %{{.*}}, %{{.*}} {dampening = 1.000000e-01 : f32, lr = 5.000000e-01 : f32, momentum = 0.899999976 : f32, momentum_buffer = @fc1.weight.momentum, param = @fc1.weight, step = @fc1.weight.step, weight_decay = 1.000000e-03 : f32} : (tensor<16x8xf32>, none) -> ()
// MOMENTUM: mp.sgd_update {{.*}}momentum_buffer = @fc1.bias.momentum, param = @fc1.bias, step = @fc1.bias.step
// MOMENTUM: mp.sgd_update {{.*}}momentum_buffer = @fc2.weight.momentum, param = @fc2.weight, step = @fc2.weight.step
// MOMENTUM: mp.sgd_update {{.*}}momentum_buffer = @fc2.bias.momentum, param = @fc2.bias, step = @fc2.bias.step

// NESTEROV: ml_program.global private mutable @fc1.weight.momentum(
// NESTEROV: mp.sgd_update %{{.*}}, %{{.*}} {lr = 0.00999999977 : f32, momentum = 0.899999976 : f32, momentum_buffer = @fc1.weight.momentum, nesterov = true, param = @fc1.weight, step = @fc1.weight.step} : (tensor<16x8xf32>, none) -> ()
// NESTEROV-COUNT-3: nesterov = true
// NESTEROV-NOT: nesterov

// Adam: exp_avg, exp_avg_sq and step per parameter, in that order.
// ADAM:      ml_program.global private mutable @fc2.bias(
// ADAM-NEXT: ml_program.global private mutable @fc1.weight.exp_avg(dense<0.000000e+00> : tensor<16x8xf32>) : tensor<16x8xf32>
// ADAM-NEXT: ml_program.global private mutable @fc1.weight.exp_avg_sq(dense<0.000000e+00> : tensor<16x8xf32>) : tensor<16x8xf32>
// ADAM-NEXT: ml_program.global private mutable @fc1.weight.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// ADAM-NEXT: ml_program.global private mutable @fc1.bias.exp_avg(dense<0.000000e+00> : tensor<16xf32>) : tensor<16xf32>
// ADAM-NEXT: ml_program.global private mutable @fc1.bias.exp_avg_sq(
// ADAM-NEXT: ml_program.global private mutable @fc1.bias.step(
// ADAM-NEXT: ml_program.global private mutable @fc2.weight.exp_avg(
// ADAM-NEXT: ml_program.global private mutable @fc2.weight.exp_avg_sq(
// ADAM-NEXT: ml_program.global private mutable @fc2.weight.step(
// ADAM-NEXT: ml_program.global private mutable @fc2.bias.exp_avg(
// ADAM-NEXT: ml_program.global private mutable @fc2.bias.exp_avg_sq(
// ADAM-NEXT: ml_program.global private mutable @fc2.bias.step(
// ADAM-NOT:  momentum
// Defaults (beta1 0.9, beta2 0.999, eps 1e-8, no weight decay) are not spelled out.
// ADAM: mp.adam_update %{{.*}}, %{{.*}} {exp_avg = @fc1.weight.exp_avg, exp_avg_sq = @fc1.weight.exp_avg_sq, lr = 0.00999999977 : f32, param = @fc1.weight, step = @fc1.weight.step} : (tensor<16x8xf32>, none) -> ()
// ADAM: mp.adam_update %{{.*}}, %{{.*}} {exp_avg = @fc1.bias.exp_avg, exp_avg_sq = @fc1.bias.exp_avg_sq, lr = 0.00999999977 : f32, param = @fc1.bias, step = @fc1.bias.step} : (tensor<16xf32>, none) -> ()
// ADAM: mp.adam_update %{{.*}}, %{{.*}} {exp_avg = @fc2.weight.exp_avg, exp_avg_sq = @fc2.weight.exp_avg_sq, lr = 0.00999999977 : f32, param = @fc2.weight, step = @fc2.weight.step} : (tensor<3x16xf32>, none) -> ()
// ADAM: mp.adam_update %{{.*}}, %{{.*}} {exp_avg = @fc2.bias.exp_avg, exp_avg_sq = @fc2.bias.exp_avg_sq, lr = 0.00999999977 : f32, param = @fc2.bias, step = @fc2.bias.step} : (tensor<3xf32>, none) -> ()
// ADAM-NOT: sgd_update

// AdamW: decoupled weight decay.
// ADAMW: ml_program.global private mutable @fc1.weight.exp_avg(
// ADAMW: mp.adam_update %{{.*}}, %{{.*}} {beta1 = 8.000000e-01 : f32, beta2 = 9.900000e-01 : f32, decoupled_weight_decay = true, eps = 9.99999997E-7 : f32, exp_avg = @fc1.weight.exp_avg, exp_avg_sq = @fc1.weight.exp_avg_sq, lr = 1.000000e-03 : f32, param = @fc1.weight, step = @fc1.weight.step, weight_decay = 0.00999999977 : f32} : (tensor<16x8xf32>, none) -> ()
// ADAMW-COUNT-3: mp.adam_update {{.*}}decoupled_weight_decay = true

// TARGET: func.func @main(%{{.*}}: tensor<4x8xf32> {mp.name = "x"}, %{{.*}}: tensor<4xi64> {mp.name = "target"})
// TARGET-SAME: label_input = "target"

func.func @main(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "probs"}) {
  %w1 = mp.initializer "fc1.weight" dense<0.1> : tensor<16x8xf32>
  %b1 = mp.initializer "fc1.bias" dense<0.0> : tensor<16xf32>
  %w2 = mp.initializer "fc2.weight" dense<0.2> : tensor<3x16xf32>
  %b2 = mp.initializer "fc2.bias" dense<0.0> : tensor<3xf32>
  %t = mp.initializer "temperature" dense<0.5> : tensor<f32>
  %h = mp.gemm %x, %w1, %b1 {transB = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("fc1")
  %r = mp.relu %h : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("relu")
  %l = mp.gemm %r, %w2, %b2 {transB = 1 : i64} : (tensor<4x16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> tensor<4x3xf32> loc("fc2")
  %s = mp.mul %l, %t : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32> loc("temperature_scale")
  %p = mp.softmax %s {axis = 1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32> loc("softmax")
  return %p : tensor<4x3xf32>
}
