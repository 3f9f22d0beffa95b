// culib-fusion-report: the figures the fusion passes recorded
// (culib.fusion_record), with the calls left counted and the calls before
// added up, as a remark (no output), text or JSON; the records leave the IR.
// RUN: mp-opt %s --culib-fusion-report 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: mp-opt %s --culib-fusion-report=output=%t.json -o %t.mlir
// RUN: FileCheck %s --input-file=%t.json --check-prefix=JSON
// RUN: FileCheck %s --input-file=%t.mlir --check-prefix=IR
// RUN: mp-opt %s --culib-fusion-report=output=%t.txt -o /dev/null
// RUN: FileCheck %s --input-file=%t.txt --check-prefix=TEXT
// The passes record with record=true:
// RUN: mp-opt %s --culib-fuse-elementwise=record=true --culib-fusion-report=output=%t.2.txt -o /dev/null
// RUN: FileCheck %s --input-file=%t.2.txt --check-prefix=PASSES
// A file that cannot be written is an error.
// RUN: not mp-opt %s --culib-fusion-report=output=%t.missing/r.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERROR

// REMARK: remark: culib-fusion-report:
// REMARK-NEXT: function f: 5 calls -> 2; 96 intermediate bytes no longer written
// REMARK-NEXT: culib-fuse-norms decomposed layer norm: 1 fused call(s), 3 calls fewer, 96 bytes
// JSON: "bytes_not_written": 96,
// JSON-NEXT: "calls_after": 2,
// JSON-NEXT: "calls_before": 5,
// JSON-NEXT: "function": "f",
// JSON: "calls_removed": 3,
// JSON-NEXT: "fused": 1,
// JSON-NEXT: "pass": "culib-fuse-norms",
// JSON-NEXT: "pattern": "decomposed layer norm"
// IR-NOT: culib.fusion_record
// TEXT: function f: 5 calls -> 2;
// PASSES: function f: 5 calls -> 1; 120 intermediate bytes no longer written
// PASSES-NEXT: culib-fuse-norms decomposed layer norm: 1 fused call(s), 3 calls fewer, 96 bytes
// PASSES-NEXT: culib-fuse-elementwise ReLU gradient: 0 fused call(s), 0 calls fewer, 0 bytes
// PASSES-NEXT: culib-fuse-elementwise elementwise program: 1 fused call(s), 1 calls fewer, 24 bytes
// ERROR: error: cannot write the fusion report
func.func @f(%x: memref<2x3xf32>, %y: memref<2x3xf32>) attributes {culib.fusion_record = [{pass = "culib-fuse-norms", pattern = "decomposed layer norm", fused = 1 : i64, calls_removed = 3 : i64, bytes = 96 : i64}]} {
  %t = culib.alloc : memref<2x3xf32>
  culib.elementwise relu ins(%x) outs(%t) : memref<2x3xf32>, memref<2x3xf32>
  culib.cast ins(%t) outs(%y) : memref<2x3xf32>, memref<2x3xf32>
  return
}
