// Options: multiple, max-growth, op filters, all-types; the report.
// RUN: mp-opt %s --mp-pad-tensor-cores="multiple=16" | FileCheck %s --check-prefix=SIXTEEN
// RUN: mp-opt %s --mp-pad-tensor-cores="max-growth=3.0" | FileCheck %s --check-prefix=GROWTH
// RUN: mp-opt %s --mp-pad-tensor-cores="ops=Gemm" | FileCheck %s --check-prefix=FILTER
// RUN: mp-opt %s --mp-pad-tensor-cores="all-types=true" | FileCheck %s --check-prefix=ALL
// RUN: mp-opt %s --mp-pad-tensor-cores="report=%t.txt" -o /dev/null
// RUN: FileCheck %s --check-prefix=REPORT --input-file=%t.txt
// RUN: mp-opt %s --mp-pad-tensor-cores="report=%t.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON --input-file=%t.json

func.func @ops(%a: tensor<16x61xf16>, %s: tensor<16x5xf16>, %f: tensor<16x61xf32>) -> (tensor<16x100xf16>, tensor<16x5xf16>, tensor<16x61xf32>) {
  %w = mp.initializer "w" dense<0.5> : tensor<61x100xf16>
  %m = mp.matmul %a, %w : (tensor<16x61xf16>, tensor<61x100xf16>) -> tensor<16x100xf16> loc("mm")
  %w4 = mp.initializer "w4" dense<0.5> : tensor<5x5xf16>
  %t = mp.matmul %s, %w4 : (tensor<16x5xf16>, tensor<5x5xf16>) -> tensor<16x5xf16> loc("tiny")
  %w3 = mp.initializer "w3" dense<0.5> : tensor<61x61xf32>
  %g = mp.matmul %f, %w3 : (tensor<16x61xf32>, tensor<61x61xf32>) -> tensor<16x61xf32> loc("f32")
  return %m, %t, %g : tensor<16x100xf16>, tensor<16x5xf16>, tensor<16x61xf32>
}

// SIXTEEN: mp.matmul {{.*}} : (tensor<16x64xf16>, tensor<64x112xf16>) -> tensor<16x112xf16>
// GROWTH: mp.matmul {{.*}} : (tensor<16x8xf16>, tensor<8x8xf16>) -> tensor<16x8xf16>
// FILTER-NOT: mp.pad
// FILTER: mp.matmul {{.*}} : (tensor<16x61xf16>, tensor<61x100xf16>) -> tensor<16x100xf16>
// ALL: mp.matmul {{.*}} : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>

// REPORT: mp-pad-tensor-cores report: @ops, multiple 8, max-growth 1.35
// REPORT-NEXT: padded 1 ops, skipped 2; extra FLOPs 17792, extra bytes 1336
// REPORT-NEXT: padded  MatMul 'mm': M,N,K 16,100,61 -> 16,104,64 (+17792 FLOPs, +1336 bytes)
// REPORT-NEXT: skipped MatMul 'tiny': A would grow 1.60x (max-growth 1.35)
// REPORT-NEXT: skipped MatMul 'f32': not low precision

// JSON: "extra_flops": 17792,
// JSON: "padded": 1,
// JSON: "skipped": 2
