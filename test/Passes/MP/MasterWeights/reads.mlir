// mp-master-weights on a hand-written step: a global read several times is
// read once, and each low-precision type it is cast to gets one cast, right
// after the load, shared by all users (also for an f32 global, which is not
// widened). A dense_resource f16 value is widened exactly. Globals the step
// stores to (BN running statistics) keep all their reads. Globals no update
// writes (the statistics) keep their type.
// RUN: mp-opt %s --mp-master-weights | FileCheck %s
// RUN: mp-opt %s --mp-master-weights | mp-opt | FileCheck %s

// CHECK:      ml_program.global private mutable @w(dense<[1.000000e+00, 2.000000e+00, 1.500000e+00, -2.000000e+00]> : tensor<4xf32>) : tensor<4xf32>
// CHECK-NEXT: ml_program.global private mutable @w.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// CHECK-NEXT: ml_program.global private mutable @v(dense<5.000000e-01> : tensor<4xf32>) : tensor<4xf32>
// CHECK-NEXT: ml_program.global private mutable @v.momentum(dense<0.000000e+00> : tensor<4xf32>) : tensor<4xf32>
// CHECK-NEXT: ml_program.global private mutable @v.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
// CHECK-NEXT: ml_program.global private mutable @stat(dense<1.000000e+00> : tensor<4xf16>) : tensor<4xf16>
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4xf16>, %[[Y:[^:]*]]: tensor<4xbf16>)
// CHECK-NEXT: %[[W:.*]] = ml_program.global_load @w : tensor<4xf32>
// CHECK-NEXT: %[[WH:.*]] = mp.cast %[[W]] {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT: %[[M1:.*]] = mp.mul %[[X]], %[[WH]]
// CHECK-NEXT: %[[M2:.*]] = mp.add %[[M1]], %[[WH]]
// CHECK-NEXT: %[[V:.*]] = ml_program.global_load @v : tensor<4xf32>
// CHECK-NEXT: %[[VB:.*]] = mp.cast %[[V]] {to = 16 : i64} : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK-NEXT: %[[VH:.*]] = mp.cast %[[V]] {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT: %[[M3:.*]] = mp.mul %[[M2]], %[[VH]]
// CHECK-NEXT: %[[M4:.*]] = mp.mul %[[M3]], %[[VH]]
// CHECK-NEXT: %[[M5:.*]] = mp.mul %[[Y]], %[[VB]]
// CHECK-NEXT: %[[M6:.*]] = mp.mul %[[M5]], %[[VB]]
// CHECK-NEXT: %[[S1:.*]] = ml_program.global_load @stat : tensor<4xf16>
// CHECK-NEXT: ml_program.global_store @stat = %[[M4]] : tensor<4xf16>
// CHECK-NEXT: %[[S2:.*]] = ml_program.global_load @stat : tensor<4xf16>
// CHECK-NEXT: %[[G:.*]] = mp.cast %[[M4]] {to = 1 : i64}
// CHECK-NEXT: %[[N:.*]] = mp.none
// CHECK-NEXT: mp.sgd_update %[[G]], %[[N]] {lr = 1.000000e-01 : f32, param = @w, step = @w.step}
// CHECK-NEXT: %[[G2:.*]] = mp.cast %[[M6]] {to = 1 : i64}
// CHECK-NEXT: mp.sgd_update %[[G2]], %[[N]] {lr = 1.000000e-01 : f32, momentum = 0.899999976 : f32, momentum_buffer = @v.momentum, param = @v, step = @v.step}
// CHECK-NEXT: return %[[M4]], %[[M6]], %[[S1]], %[[S2]] :
module {
  ml_program.global private mutable @w(dense_resource<w16> : tensor<4xf16>) : tensor<4xf16>
  ml_program.global private mutable @w.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
  ml_program.global private mutable @v(dense<0.5> : tensor<4xf32>) : tensor<4xf32>
  ml_program.global private mutable @v.momentum(dense<0.0> : tensor<4xf32>) : tensor<4xf32>
  ml_program.global private mutable @v.step(dense<0> : tensor<1xi64>) : tensor<1xi64>
  ml_program.global private mutable @stat(dense<1.0> : tensor<4xf16>) : tensor<4xf16>
  func.func @step(%x: tensor<4xf16>, %y: tensor<4xbf16>) -> (tensor<4xf16>, tensor<4xbf16>, tensor<4xf16>, tensor<4xf16>) {
    %a = ml_program.global_load @w : tensor<4xf16>
    %m1 = mp.mul %x, %a : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
    %b = ml_program.global_load @w : tensor<4xf16>
    %m2 = mp.add %m1, %b : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
    %v1 = ml_program.global_load @v : tensor<4xf32>
    %v1h = mp.cast %v1 {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
    %m3 = mp.mul %m2, %v1h : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
    %v2 = ml_program.global_load @v : tensor<4xf32>
    %v2h = mp.cast %v2 {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
    %m4 = mp.mul %m3, %v2h : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
    %v1b = mp.cast %v1 {to = 16 : i64} : (tensor<4xf32>) -> tensor<4xbf16>
    %m5 = mp.mul %y, %v1b : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
    %v2b = mp.cast %v2 {to = 16 : i64} : (tensor<4xf32>) -> tensor<4xbf16>
    %m6 = mp.mul %m5, %v2b : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
    %s1 = ml_program.global_load @stat : tensor<4xf16>
    ml_program.global_store @stat = %m4 : tensor<4xf16>
    %s2 = ml_program.global_load @stat : tensor<4xf16>
    %g = mp.cast %m4 {to = 1 : i64} : (tensor<4xf16>) -> tensor<4xf32>
    %none = mp.none
    mp.sgd_update %g, %none {lr = 0.1 : f32, param = @w, step = @w.step} : (tensor<4xf32>, none) -> ()
    %g2 = mp.cast %m6 {to = 1 : i64} : (tensor<4xbf16>) -> tensor<4xf32>
    mp.sgd_update %g2, %none {lr = 0.1 : f32, momentum = 0.9 : f32, momentum_buffer = @v.momentum, param = @v, step = @v.step} : (tensor<4xf32>, none) -> ()
    return %m4, %m6, %s1, %s2 : tensor<4xf16>, tensor<4xbf16>, tensor<4xf16>, tensor<4xf16>
  }
}
{-#
  dialect_resources: {
    builtin: {
      w16: "0x02000000003C0040003E00C0"
    }
  }
#-}
