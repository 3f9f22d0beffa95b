// The refined IR prints in a form that parses back unchanged, and a second
// run of the pass changes nothing (the pass reaches a fixed point in one run).
// RUN: mp-opt %s --mp-infer-shapes > %t.1.mlir
// RUN: mp-opt %t.1.mlir > %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// RUN: mp-opt %t.1.mlir --mp-infer-shapes > %t.3.mlir
// RUN: diff %t.1.mlir %t.3.mlir
// RUN: mp-opt %s --mp-infer-shapes --mlir-print-op-generic | mp-opt > %t.4.mlir
// RUN: diff %t.1.mlir %t.4.mlir
// RUN: FileCheck %s --input-file=%t.2.mlir

// CHECK-LABEL: func.func @model(
// CHECK-SAME: %{{.*}}: tensor<?x8xf32> {mp.dim_params = ["batch", ""], mp.name = "x"}
// CHECK-SAME: -> (tensor<?x16xf32> {mp.name = "y"}, tensor<?x2x?xf32> {mp.name = "r"})
// CHECK: mp.gemm {{.*}} -> tensor<?x16xf32>
// CHECK: mp.sigmoid {{.*}} -> tensor<?x16xf32>
// CHECK: mp.mul {{.*}} -> tensor<?x16xf32>
// CHECK: mp.reshape {{.*}} -> tensor<?x2x?xf32>
func.func @model(%x: tensor<?x8xf32> {mp.dim_params = ["batch", ""], mp.name = "x"}) -> (tensor<*xf32> {mp.name = "y"}, !mp.unknown {mp.name = "r"}) attributes {mp.doc_string = "swish"} {
  %w = mp.initializer "w" dense<0.5> : tensor<16x8xf32>
  %b = mp.initializer "b" dense<0.0> : tensor<16xf32>
  %shape = mp.initializer "shape" dense<[0, 2, -1]> : tensor<3xi64>
  %g = mp.gemm %x, %w, %b {transB = 1 : i64, mp.outputs = ["g"]} : (tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<*xf32>
  %s = mp.sigmoid %g {mp.outputs = ["s"]} : (tensor<*xf32>) -> tensor<*xf32>
  %y = mp.mul %g, %s {mp.outputs = ["y"]} : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  %r = mp.reshape %y, %shape {mp.outputs = ["r"]} : (tensor<*xf32>, tensor<3xi64>) -> !mp.unknown
  return %y, %r : tensor<*xf32>, !mp.unknown
}
