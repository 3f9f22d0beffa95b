// mp-master-weights after mp-training on an f16 model (f16 initializers):
// every global an optimizer update writes (parameters, momentum buffers, Adam
// moments) becomes f32, its value widened exactly (f16 0.1 is 0.0999755859);
// step counters stay i64. Each parameter is read once, as f32, and cast to
// f16 once, right after the load; that cast is shared by all its users
// (the tied weight's two forward Gemms and the backward Gemm). The
// gradients reach the updates in f32.
// RUN: mp-opt %s --mp-training=momentum=0.9 --mp-master-weights | FileCheck %s --check-prefixes=CHECK,SGD
// RUN: mp-opt %s --mp-training=optimizer=adam --mp-master-weights | FileCheck %s --check-prefixes=CHECK,ADAM
// A second run changes nothing.
// RUN: mp-opt %s --mp-training=momentum=0.9 --mp-master-weights > %t.1.mlir
// RUN: mp-opt %t.1.mlir --mp-master-weights > %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir

// CHECK:      ml_program.global private mutable @tied.weight(dense<0.0999755859> : tensor<16x8xf32>) : tensor<16x8xf32>
// CHECK-NEXT: ml_program.global private mutable @hidden.bias(dense<0.000000e+00> : tensor<16xf32>) : tensor<16xf32>
// SGD-NEXT:   ml_program.global private mutable @tied.weight.momentum(dense<0.000000e+00> : tensor<16x8xf32>) : tensor<16x8xf32>
// SGD-NEXT:   ml_program.global private mutable @tied.weight.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// SGD-NEXT:   ml_program.global private mutable @hidden.bias.momentum(dense<0.000000e+00> : tensor<16xf32>) : tensor<16xf32>
// SGD-NEXT:   ml_program.global private mutable @hidden.bias.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// ADAM-NEXT:  ml_program.global private mutable @tied.weight.exp_avg(dense<0.000000e+00> : tensor<16x8xf32>) : tensor<16x8xf32>
// ADAM-NEXT:  ml_program.global private mutable @tied.weight.exp_avg_sq(dense<0.000000e+00> : tensor<16x8xf32>) : tensor<16x8xf32>
// ADAM-NEXT:  ml_program.global private mutable @tied.weight.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// ADAM-NEXT:  ml_program.global private mutable @hidden.bias.exp_avg(dense<0.000000e+00> : tensor<16xf32>) : tensor<16xf32>
// ADAM-NEXT:  ml_program.global private mutable @hidden.bias.exp_avg_sq(dense<0.000000e+00> : tensor<16xf32>) : tensor<16xf32>
// ADAM-NEXT:  ml_program.global private mutable @hidden.bias.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// CHECK-NOT:  ml_program.global
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf16> {mp.name = "x"}
// The graph keeps its types: f16 data, f16 loss and outputs.
// CHECK-SAME: -> (tensor<f16> {mp.name = "loss"}, tensor<4x8xf16> {mp.name = "logits"})
// CHECK-NEXT: %[[W32:.*]] = ml_program.global_load @tied.weight : tensor<16x8xf32>
// CHECK-NEXT: %[[W:.*]] = mp.cast %[[W32]] {to = 10 : i64} : (tensor<16x8xf32>) -> tensor<16x8xf16>
// CHECK-NEXT: %[[B32:.*]] = ml_program.global_load @hidden.bias : tensor<16xf32>
// CHECK-NEXT: %[[B:.*]] = mp.cast %[[B32]] {to = 10 : i64} : (tensor<16xf32>) -> tensor<16xf16>
// CHECK-NOT:  ml_program.global_load
// CHECK:      %[[H:.*]] = mp.gemm %[[X]], %[[W]], %[[B]] {transB = 1 : i64} : (tensor<4x8xf16>, tensor<16x8xf16>, tensor<16xf16>) -> tensor<4x16xf16>
// CHECK:      mp.gemm %{{.*}}, %[[W]], %{{.*}} : (tensor<4x16xf16>, tensor<16x8xf16>, none) -> tensor<4x8xf16>
// CHECK:      mp.gemm %{{.*}}, %[[W]], %{{.*}} {transB = 1 : i64} : (tensor<4x8xf16>, tensor<16x8xf16>, none) -> tensor<4x16xf16>
// The tied weight's gradient: the sum of both uses', in f16, cast to f32.
// CHECK:      %[[DW:.*]] = mp.add %{{.*}}, %{{.*}} : (tensor<16x8xf16>, tensor<16x8xf16>) -> tensor<16x8xf16>
// CHECK:      %[[DW32:.*]] = mp.cast %[[DW]] {to = 1 : i64} : (tensor<16x8xf16>) -> tensor<16x8xf32>
// SGD-NEXT:   mp.sgd_update %[[DW32]], %{{.*}} {{{.*}}momentum_buffer = @tied.weight.momentum, param = @tied.weight, step = @tied.weight.step} : (tensor<16x8xf32>, none) -> ()
// ADAM-NEXT:  mp.adam_update %[[DW32]], %{{.*}} {exp_avg = @tied.weight.exp_avg, exp_avg_sq = @tied.weight.exp_avg_sq, lr = 0.00999999977 : f32, param = @tied.weight, step = @tied.weight.step} : (tensor<16x8xf32>, none) -> ()
// CHECK:      %[[DB32:.*]] = mp.cast %{{.*}} {to = 1 : i64} : (tensor<16xf16>) -> tensor<16xf32>
// SGD-NEXT:   mp.sgd_update %[[DB32]], {{.*}}param = @hidden.bias
// ADAM-NEXT:  mp.adam_update %[[DB32]], {{.*}}param = @hidden.bias
// CHECK-NOT:  mp.cast
// CHECK:      return

func.func @main(%x: tensor<4x8xf16> {mp.name = "x"}) -> (tensor<4x8xf16> {mp.name = "logits"}) {
  %w = mp.initializer "tied.weight" dense<0.1> : tensor<16x8xf16>
  %b = mp.initializer "hidden.bias" dense<0.0> : tensor<16xf16>
  %none = mp.none
  %h = mp.gemm %x, %w, %b {transB = 1 : i64} : (tensor<4x8xf16>, tensor<16x8xf16>, tensor<16xf16>) -> tensor<4x16xf16> loc("encode")
  %r = mp.relu %h : (tensor<4x16xf16>) -> tensor<4x16xf16> loc("relu")
  %l = mp.gemm %r, %w, %none : (tensor<4x16xf16>, tensor<16x8xf16>, none) -> tensor<4x8xf16> loc("decode")
  return %l : tensor<4x8xf16>
}
