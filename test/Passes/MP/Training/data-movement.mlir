// Gradients of the data-movement ops through mp-training (optimizer=none,
// mse): Concat's are Slices of dY at each input's offset; Split's is the
// Concat of its outputs' gradients, zeros for an output the loss does not
// use; Slice's (step 1) is dY padded with zeros back to the input's shape.
// RUN: mp-opt %s --mp-training="optimizer=none loss=mse" | FileCheck %s

// CHECK-LABEL: func.func @data_movement(
// CHECK-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<2x5xf32> {mp.name = "y"}, tensor<2x8xf32> {mp.name = "grad:w"})
// CHECK:      %[[PARTS:.*]]:3 = mp.split
// CHECK:      %[[S:.*]] = mp.slice %[[PARTS]]#1,
// CHECK:      mp.concat %[[PARTS]]#0, %[[S]] {axis = 1 : i64}
// Concat: dY[:, 0:3] and dY[:, 3:5].
// CHECK:      %[[DY:.*]] = mp.add
// CHECK:      %[[B0:.*]] = mp.constant {value = dense<0> : tensor<1xi64>}
// CHECK-NEXT: %[[D0:.*]] = mp.slice %[[DY]], %[[B0]], %{{.*}}, %{{.*}}, %{{.*}} : ({{.*}}) -> tensor<2x3xf32>
// CHECK:      %[[B1:.*]] = mp.constant {value = dense<3> : tensor<1xi64>}
// CHECK-NEXT: %[[D1:.*]] = mp.slice %[[DY]], %[[B1]], %{{.*}}, %{{.*}}, %{{.*}} : ({{.*}}) -> tensor<2x2xf32>
// Slice [1:3] of 3 columns: one zero column before, none after.
// CHECK:      %[[PADS:.*]] = mp.constant {value = dense<[0, 1, 0, 0]> : tensor<4xi64>}
// CHECK-NEXT: %[[DS:.*]] = mp.pad %[[D1]], %[[PADS]], %{{.*}} {mode = "constant"} : (tensor<2x2xf32>, tensor<4xi64>, tensor<f32>) -> tensor<2x3xf32>
// Split: the third output is unused.
// CHECK-NEXT: %[[Z:.*]] = mp.constant {value = dense<0.000000e+00> : tensor<2x2xf32>}
// CHECK-NEXT: %[[DM:.*]] = mp.concat %[[D0]], %[[DS]], %[[Z]] {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %[[DW:.*]] = mp.mul %[[DM]], %{{.*}}
// CHECK-NEXT: return %{{.*}}, %{{.*}}, %[[DW]] :
func.func @data_movement(%x: tensor<2x8xf32> {mp.name = "x"}) -> (tensor<2x5xf32> {mp.name = "y"}) {
  %w = mp.initializer "w" dense<0.5> : tensor<2x8xf32>
  %none = mp.none
  %split = mp.constant {value = dense<[3, 3, 2]> : tensor<3xi64>} : () -> tensor<3xi64>
  %m = mp.mul %x, %w : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("mul")
  %a, %b, %c = mp.split %m, %split {axis = 1 : i64} : (tensor<2x8xf32>, tensor<3xi64>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>) loc("split")
  %starts = mp.constant {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %ends = mp.constant {value = dense<[3]> : tensor<1xi64>} : () -> tensor<1xi64>
  %axes = mp.constant {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %s = mp.slice %b, %starts, %ends, %axes, %none : (tensor<2x3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x2xf32> loc("slice")
  %y = mp.concat %a, %s {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x5xf32> loc("concat")
  return %y : tensor<2x5xf32>
}
