// Modules that are no ONNX model are rejected with a clear error and no
// output file.
// RUN: rm -f %t.onnx
// RUN: not mp-opt %s -o %t.onnx 2>&1 | FileCheck %s
// RUN: not test -e %t.onnx
// CHECK: error: cannot export: an ONNX model has one main graph, the module has 2 functions

func.func @a(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @b(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
