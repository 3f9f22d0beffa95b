// Hand-written mp IR parses, verifies and prints back (custom and generic
// form); the printed form parses to the same IR.
// RUN: mp-opt %s | mp-opt | FileCheck %s
// RUN: mp-opt %s --mlir-print-op-generic | mp-opt | FileCheck %s
// RUN: mp-opt %s > %t.1.mlir && mp-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir

// CHECK-LABEL: func.func @structural
func.func @structural(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, none) {
  // CHECK: %[[NONE:.*]] = mp.none
  %none = mp.none
  // CHECK: %[[W:.*]] = mp.initializer "w" dense<1.000000e+00> : tensor<2x3xf32> {doc_string = "weights", input_index = 2 : i64}
  %w = mp.initializer "w" dense<1.0> : tensor<2x3xf32> {doc_string = "weights", input_index = 2 : i64}
  // CHECK: %[[S:.*]] = mp.initializer "s" dense<["a", "b"]> : tensor<2x!mp.string>
  %s = mp.initializer "s" dense<["a", "b"]> : tensor<2x!mp.string>
  // CHECK: mp.clip %{{.*}}, %[[NONE]], %[[NONE]] : (tensor<2x3xf32>, none, none) -> tensor<2x3xf32>
  %c = mp.clip %x, %none, %none : (tensor<2x3xf32>, none, none) -> tensor<2x3xf32>
  // CHECK: return %{{.*}}, %[[NONE]] : tensor<2x3xf32>, none
  return %c, %none : tensor<2x3xf32>, none
}

// CHECK-LABEL: func.func @types
// CHECK-SAME: (%{{.*}}: !mp.seq<tensor<?x3xf32>>, %{{.*}}: !mp.opt<tensor<4xi8>>, %{{.*}}: !mp.unknown, %{{.*}}: tensor<2x!mp.string>, %{{.*}}: !mp.seq<!mp.seq<tensor<*xf16>>>, %{{.*}}: !mp.opt<!mp.unknown>)
func.func @types(%a: !mp.seq<tensor<?x3xf32>>, %b: !mp.opt<tensor<4xi8>>, %c: !mp.unknown, %d: tensor<2x!mp.string>, %e: !mp.seq<!mp.seq<tensor<*xf16>>>, %f: !mp.opt<!mp.unknown>) -> !mp.seq<tensor<?x3xf32>> {
  // CHECK: mp.identity %{{.*}} : (!mp.seq<tensor<?x3xf32>>) -> !mp.seq<tensor<?x3xf32>>
  %0 = mp.identity %a : (!mp.seq<tensor<?x3xf32>>) -> !mp.seq<tensor<?x3xf32>>
  // CHECK: mp.identity %{{.*}} : (!mp.opt<tensor<4xi8>>) -> !mp.opt<tensor<4xi8>>
  %1 = mp.identity %b : (!mp.opt<tensor<4xi8>>) -> !mp.opt<tensor<4xi8>>
  // CHECK: mp.relu %{{.*}} : (!mp.unknown) -> !mp.unknown
  %2 = mp.relu %c : (!mp.unknown) -> !mp.unknown
  // An unknown operand's result may be given any type.
  // CHECK: mp.relu %{{.*}} : (!mp.unknown) -> tensor<4x5xf32>
  %3 = mp.relu %c : (!mp.unknown) -> tensor<4x5xf32>
  return %0 : !mp.seq<tensor<?x3xf32>>
}

// CHECK-LABEL: func.func @typed_ops
func.func @typed_ops(%x: tensor<?x4x9x9xf32>, %w: tensor<8x2x3x3xf32>, %b: tensor<8xf32>, %m: tensor<4x5xf32>, %shape: tensor<2xi64>, %m6: tensor<4x6xf32>,
                     %lx: tensor<3x4x5xf32>, %lw: tensor<1x8x5xf32>, %lr: tensor<1x8x2xf32>, %v5: tensor<5xf32>) -> tensor<?x8x5x5xf32> {
  %none = mp.none
  // CHECK: %[[CONV:.*]] = mp.conv %{{.*}}, %{{.*}}, %{{.*}} {group = 2 : i64, mp.outputs = ["y"], pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x4x9x9xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<?x8x5x5xf32>
  %conv = mp.conv %x, %w, %b {group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, mp.outputs = ["y"]} : (tensor<?x4x9x9xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<?x8x5x5xf32>
  // Declared types may refine the inferred ones: `?` to a static dim.
  // CHECK: mp.conv %{{.*}}, %{{.*}}, %{{.*}} {group = 2 : i64} : (tensor<?x4x9x9xf32>, tensor<8x2x3x3xf32>, none) -> tensor<1x8x7x7xf32>
  %refined = mp.conv %x, %w, %none {group = 2 : i64} : (tensor<?x4x9x9xf32>, tensor<8x2x3x3xf32>, none) -> tensor<1x8x7x7xf32>
  // CHECK: %{{.*}}, %{{.*}} = mp.max_pool %{{.*}} {kernel_shape = array<i64: 3, 3>} : (tensor<?x4x9x9xf32>) -> (tensor<?x4x7x7xf32>, tensor<?x4x7x7xi64>)
  %y, %idx = mp.max_pool %x {kernel_shape = array<i64: 3, 3>} : (tensor<?x4x9x9xf32>) -> (tensor<?x4x7x7xf32>, tensor<?x4x7x7xi64>)
  // CHECK: mp.gemm %{{.*}}, %{{.*}}, %{{.*}} {alpha = 5.000000e-01 : f32, transB = 1 : i64} : (tensor<4x5xf32>, tensor<4x5xf32>, none) -> tensor<4x4xf32>
  %g = mp.gemm %m, %m, %none {alpha = 0.5 : f32, transB = 1 : i64} : (tensor<4x5xf32>, tensor<4x5xf32>, none) -> tensor<4x4xf32>
  // CHECK: mp.reshape %{{.*}}, %{{.*}} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %r = mp.reshape %m, %shape : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  // CHECK: mp.reshape %{{.*}}, %{{.*}} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<2x10xf32>
  %r2 = mp.reshape %m, %shape : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<2x10xf32>
  // CHECK: mp.cast %{{.*}} {saturate = 0 : i64, to = 10 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf16>
  %h = mp.cast %m {to = 10 : i64, saturate = 0 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf16>
  // CHECK: mp.add %{{.*}}, %{{.*}} : (tensor<4x5xf16>, tensor<4x5xf16>) -> tensor<4x5xf16>
  %sum = mp.add %h, %h : (tensor<4x5xf16>, tensor<4x5xf16>) -> tensor<4x5xf16>
  // CHECK: mp.sum %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  %s3 = mp.sum %m, %m, %m : (tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  // CHECK: mp.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x10xf32>
  %cat = mp.concat %m, %m {axis = 1 : i64} : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x10xf32>
  // CHECK: %{{.*}}:2 = mp.split %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x6xf32>, none) -> (tensor<4x3xf32>, tensor<4x3xf32>)
  %sp:2 = mp.split %m6, %none {axis = 1 : i64} : (tensor<4x6xf32>, none) -> (tensor<4x3xf32>, tensor<4x3xf32>)
  // CHECK: mp.constant {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %k = mp.constant {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  // CHECK: mp.constant {value_strings = ["a", "b", "c"]} : () -> tensor<3x!mp.string>
  %ks = mp.constant {value_strings = ["a", "b", "c"]} : () -> tensor<3x!mp.string>
  // Constant operands are read by the shape functions.
  // CHECK: mp.unsqueeze %{{.*}}, %{{.*}} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<4x1x1x5xf32>
  %u = mp.unsqueeze %m, %k : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<4x1x1x5xf32>
  // CHECK: = mp.lstm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activations = ["Sigmoid", "Tanh", "Tanh"], direction = "reverse", hidden_size = 2 : i64}
  // CHECK-SAME: -> (tensor<3x1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>)
  %ly:3 = mp.lstm %lx, %lw, %lr, %none, %none, %none, %none, %none {activations = ["Sigmoid", "Tanh", "Tanh"], direction = "reverse", hidden_size = 2 : i64} : (tensor<3x4x5xf32>, tensor<1x8x5xf32>, tensor<1x8x2xf32>, none, none, none, none, none) -> (tensor<3x1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>)
  // CHECK: mp.layer_normalization %{{.*}}, %{{.*}}, %{{.*}} {axis = -1 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<3x4x5xf32>, tensor<5xf32>, none) -> (tensor<3x4x5xf32>, tensor<3x4x1xf32>, tensor<3x4x1xf32>)
  %ln:3 = mp.layer_normalization %lx, %v5, %none {axis = -1 : i64, epsilon = 1.0e-5 : f32} : (tensor<3x4x5xf32>, tensor<5xf32>, none) -> (tensor<3x4x5xf32>, tensor<3x4x1xf32>, tensor<3x4x1xf32>)
  return %conv : tensor<?x8x5x5xf32>
}

// The generic op: any domain, attributes, several results, subgraph regions
// with block arguments that use values of the enclosing region.
// CHECK-LABEL: func.func @generic
func.func @generic(%c: tensor<i1>, %x: tensor<2xf32>) -> (tensor<2xf32>, !mp.unknown) {
  // CHECK: %[[IF:.*]] = mp.onnx_op "" "If" version 13(%{{.*}}) {mp.outputs = ["y"], region_names = ["then_branch", "else_branch"]} subgraphs {
  // CHECK-NEXT: mp.yield %[[X:.*]] : tensor<2xf32> {graph_name = "then", input_names = [], output_names = ["x"]}
  // CHECK-NEXT: }, {
  // CHECK-NEXT: %[[N:.*]] = mp.neg %[[X]] : (tensor<2xf32>) -> tensor<2xf32>
  // CHECK-NEXT: mp.yield %[[N]] : tensor<2xf32>
  // CHECK-NEXT: } : (tensor<i1>) -> tensor<2xf32>
  %y = mp.onnx_op "" "If" version 13 (%c) {mp.outputs = ["y"], region_names = ["then_branch", "else_branch"]} subgraphs {
    mp.yield %x : tensor<2xf32> {graph_name = "then", input_names = [], output_names = ["x"]}
  }, {
    %n = mp.neg %x : (tensor<2xf32>) -> tensor<2xf32>
    mp.yield %n : tensor<2xf32>
  } : (tensor<i1>) -> tensor<2xf32>
  // CHECK: %{{.*}}:2 = mp.onnx_op "com.example" "Multi" version 3(%[[X]], %[[IF]]) {onnx_attrs = {f = 1.500000e+00 : f32, i = 1 : i64, ints = array<i64: 1, 2>, s = "s", t = dense<1> : tensor<2xi8>}} : (tensor<2xf32>, tensor<2xf32>) -> (!mp.unknown, tensor<?xf32>)
  %m:2 = mp.onnx_op "com.example" "Multi" version 3 (%x, %y) {onnx_attrs = {i = 1 : i64, f = 1.5 : f32, s = "s", ints = array<i64: 1, 2>, t = dense<1> : tensor<2xi8>}} : (tensor<2xf32>, tensor<2xf32>) -> (!mp.unknown, tensor<?xf32>)
  // No inputs, no results, a region with block arguments.
  // CHECK: mp.onnx_op "com.example" "Sink" version 1() {region_names = ["body"]} subgraphs {
  // CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2xf32>, %{{.*}}: !mp.seq<tensor<2xf32>>):
  // CHECK-NEXT: mp.yield %[[A]] : tensor<2xf32>
  // CHECK-NEXT: } : () -> ()
  mp.onnx_op "com.example" "Sink" version 1 () {region_names = ["body"]} subgraphs {
  ^bb0(%a: tensor<2xf32>, %s: !mp.seq<tensor<2xf32>>):
    mp.yield %a : tensor<2xf32>
  } : () -> ()
  // An empty yield.
  // CHECK: mp.onnx_op "" "Loop" version 16(%{{.*}}) {region_names = ["body"]} subgraphs {
  // CHECK-NEXT: mp.yield{{$}}
  mp.onnx_op "" "Loop" version 16 (%c) {region_names = ["body"]} subgraphs {
    mp.yield
  } : (tensor<i1>) -> ()
  return %y, %m#0 : tensor<2xf32>, !mp.unknown
}
