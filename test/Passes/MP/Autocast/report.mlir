// The report: text, JSON, DOT and SVG, from the pass option and from
// mp-opt's --mp-report.
// RUN: rm -rf %t && mkdir -p %t
// RUN: mp-opt %s --mp-autocast="report=%t/r.txt,%t/r.json,%t/r.dot" -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=WARN
// WARN: warning: mp-autocast: clamped 1 of 16 values of 'w'
// RUN: FileCheck %s --check-prefix=TEXT --input-file=%t/r.txt
// RUN: FileCheck %s --check-prefix=JSON --input-file=%t/r.json
// RUN: FileCheck %s --check-prefix=DOT --input-file=%t/r.dot
// RUN: mp-opt %s --mp-autocast-pipeline --mp-report=%t/flag.json -o /dev/null 2>&1
// RUN: diff %t/r.json %t/flag.json

// TEXT: mp-autocast report: target f16, level default
// TEXT: function @block
// TEXT-NEXT: converted 4/6 ops to f16 (66.7%) using 3 casts (128 bytes written per run); precision boundaries: 3 (0 served by casts already in the model)
// TEXT-NEXT: weights: 144 -> 112 bytes (saved 32)
// TEXT-NEXT: activations (dynamic dims counted as 1): 352 -> 240 bytes (saved 112)
// TEXT: constants converted with values out of range:
// TEXT-NEXT: 'w' (read by 'mm1'): 1 of 16 clamped, 0 flushed to zero
// TEXT: casts:
// TEXT-NEXT: 'x' f32 -> f16 (32 bytes)
// TEXT-NEXT: 'h2' f16 -> f32 (64 bytes)
// TEXT-NEXT: 'slice:0' f16 -> f32 (32 bytes)
// TEXT: nodes:
// TEXT-NEXT: f16  MatMul 'mm1'  [allow] default policy: MatMul is allow
// TEXT-NEXT: f16  Relu 'relu'  [infer] default policy: Relu is infer; low: between low-precision MatMul 'mm1' and MatMul 'mm2'
// TEXT-NEXT: f16  MatMul 'mm2'  [allow] default policy: MatMul is allow
// TEXT-NEXT: f32  Softmax 'softmax'  [deny] default policy: Softmax is deny
// TEXT-NEXT: f32  Mul 'scale'  [infer] default policy: Mul is infer; f32: downstream of f32 Softmax 'softmax'
// TEXT-NEXT: f16  Slice 'slice'  [clear] default policy: Slice is clear; low: clear op next to low-precision MatMul 'mm2'

// JSON: "casts": {
// JSON-NEXT: "bytes": 128,
// JSON-NEXT: "inserted": 3,
// JSON: "ops": {
// JSON-NEXT: "considered": 6,
// JSON-NEXT: "converted": 4
// JSON: "precision_boundaries": 3,
// JSON: "level": "default",
// JSON-NEXT: "target": "f16"

// DOT: digraph autocast {
// DOT: [label="MatMul\nmm1\nf16", fillcolor="#9fdf9f", shape=box, class="low"];
// DOT: [label="Cast to f32", fillcolor="#ffe08a", shape=ellipse, class="cast"];
// DOT: [label="Softmax\nsoftmax\nf32", fillcolor="#f4a6a6", shape=box, class="fp32"];

func.func @block(%x: tensor<4x4xf32> {mp.name = "x"}) -> (tensor<4x4xf32>, tensor<2x4xf32>) {
  %w = mp.initializer "w" dense<[[1.0e6, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]> : tensor<4x4xf32>
  %m1 = mp.matmul %x, %w {mp.outputs = ["h1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("mm1")
  %r = mp.relu %m1 {mp.outputs = ["r"]} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("relu")
  %m2 = mp.matmul %r, %w {mp.outputs = ["h2"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("mm2")
  %s = mp.softmax %m2 {axis = 1 : i64, mp.outputs = ["s"]} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("softmax")
  %half = mp.initializer "half" dense<0.5> : tensor<4x4xf32>
  %y = mp.mul %s, %half {mp.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc("scale")
  %starts = mp.constant {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %ends = mp.constant {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
  %none = mp.none
  %sl = mp.slice %m2, %starts, %ends, %none, %none : (tensor<4x4xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<2x4xf32> loc("slice")
  return %y, %sl : tensor<4x4xf32>, tensor<2x4xf32>
}
