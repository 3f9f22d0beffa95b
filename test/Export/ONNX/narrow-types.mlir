// ONNX's narrow types round-trip through an export: int4, uint4, int2, uint2
// and float4e2m1 are stored one element per byte in the IR and packed in the
// ONNX file (two or four to a byte, the first element in the lowest bits);
// float8e8m0 is one byte each.
// REQUIRES: python-onnx
// RUN: mp-opt %s --emit=onnx -o %t.onnx
// RUN: mp-opt %t.onnx | FileCheck %s
// CHECK: mp.initializer "w4" dense<[1, -2, 7, -8, 3]> : tensor<5xi4>
// CHECK: mp.initializer "u4" dense<[0, 15, 9, 1, 8]> : tensor<5xui4>
// CHECK: mp.initializer "w2" dense<[1, -2, 0, -1, 1]> : tensor<5xi2>
// CHECK: mp.initializer "u2" dense<[3, 0, 2, 1, 3]> : tensor<5xui2>
// CHECK: mp.initializer "f4" dense<[5.000000e-01, -6.000000e+00, 1.500000e+00, 0.000000e+00, 3.000000e+00]> : tensor<5xf4E2M1FN>
// CHECK: mp.initializer "e8" dense<[1.000000e+00, 2.000000e+00, 5.000000e-01, 1.024000e+03, 1.250000e-01]> : tensor<5xf8E8M0FNU>
//
// The packed bytes as ONNX defines them (data types 21-26).
// RUN: %python -c "from onnx import load; m = load('%t.onnx'); [print(t.name, t.data_type, t.raw_data.hex()) for t in m.graph.initializer]" | FileCheck %s --check-prefix=BYTES
// BYTES: w4 22 e18703
// BYTES-NEXT: u4 21 f01908
// BYTES-NEXT: w2 26 c901
// BYTES-NEXT: u2 25 6303
// BYTES-NEXT: f4 23 f10305
// BYTES-NEXT: e8 24 7f807e897c
module attributes {mp.ir_version = 10 : i64, mp.opset_import = {ai.onnx = 21 : i64}} {
  func.func @g(%arg0: tensor<5xf32> {mp.name = "x"}) -> (tensor<5xf32> {mp.name = "y"}) {
    %0 = mp.initializer "w4" dense<[1, -2, 7, -8, 3]> : tensor<5xi4>
    %1 = mp.initializer "u4" dense<[0, 15, 9, 1, 8]> : tensor<5xui4>
    %2 = mp.initializer "w2" dense<[1, -2, 0, -1, 1]> : tensor<5xi2>
    %3 = mp.initializer "u2" dense<[3, 0, 2, 1, 3]> : tensor<5xui2>
    %4 = mp.initializer "f4" dense<[0.5, -6.0, 1.5, 0.0, 3.0]> : tensor<5xf4E2M1FN>
    %5 = mp.initializer "e8" dense<[1.0, 2.0, 0.5, 1024.0, 0.125]> : tensor<5xf8E8M0FNU>
    %6 = mp.relu %arg0 {mp.outputs = ["y"]} : (tensor<5xf32>) -> tensor<5xf32>
    return %6 : tensor<5xf32>
  }
}
