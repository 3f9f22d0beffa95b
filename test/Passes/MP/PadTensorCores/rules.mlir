// mp-pad-tensor-cores, one function per rule.
// RUN: mp-opt %s --mp-pad-tensor-cores --split-input-file | FileCheck %s
// Round trip: the padded IR parses and prints the same.
// RUN: mp-opt %s --mp-pad-tensor-cores --split-input-file | mp-opt --split-input-file | FileCheck %s

// GEMM: N and K of both operands are padded (the weight at compile time,
// the activation with an mp.pad), the padded op runs, the columns are sliced
// off once at the output. M (26 rows) stays: tensor cores take any.
// CHECK-LABEL: func.func @matmul_mnk(
// CHECK-DAG: %[[PADS:.*]] = mp.constant {value = dense<[0, 0, 0, 3]> : tensor<4xi64>}
// CHECK-DAG: %[[A:.*]] = mp.pad %arg0, %[[PADS]], %{{.*}} : (tensor<26x61xf16>, tensor<4xi64>, none) -> tensor<26x64xf16>
// CHECK-DAG: %[[W:.*]] = mp.initializer "w" {{.*}} : tensor<64x128xf16>
// CHECK: %[[M:.*]] = mp.matmul %[[A]], %[[W]] : (tensor<26x64xf16>, tensor<64x128xf16>) -> tensor<26x128xf16>
// CHECK-DAG: %[[AXES:.*]] = mp.constant {value = dense<1> : tensor<1xi64>}
// CHECK: %[[OUT:.*]] = mp.slice %[[M]], %{{.*}}, %{{.*}}, %[[AXES]], %{{.*}} : {{.*}} -> tensor<26x125xf16>
// CHECK-NOT: mp.slice
// CHECK: return %[[OUT]]
func.func @matmul_mnk(%a: tensor<26x61xf16>) -> tensor<26x125xf16> {
  %w = mp.initializer "w" dense<0.5> : tensor<61x125xf16>
  %m = mp.matmul %a, %w : (tensor<26x61xf16>, tensor<61x125xf16>) -> tensor<26x125xf16> loc("mm")
  return %m : tensor<26x125xf16>
}

// -----

// Gemm with transB and a bias vector: B is (N, K), C grows with N.
// CHECK-LABEL: func.func @gemm_trans_b(
// CHECK-DAG: mp.initializer "w" {{.*}} : tensor<104x64xf16>
// CHECK-DAG: mp.initializer "b" {{.*}} : tensor<104xf16>
// CHECK: mp.gemm {{.*}}transB = 1 : i64{{.*}} : (tensor<16x64xf16>, tensor<104x64xf16>, tensor<104xf16>) -> tensor<16x104xf16>
// CHECK: mp.slice {{.*}} -> tensor<16x100xf16>
func.func @gemm_trans_b(%a: tensor<16x61xf16>) -> tensor<16x100xf16> {
  %w = mp.initializer "w" dense<0.5> : tensor<100x61xf16>
  %b = mp.initializer "b" dense<0.5> : tensor<100xf16>
  %y = mp.gemm %a, %w, %b {transB = 1 : i64} : (tensor<16x61xf16>, tensor<100x61xf16>, tensor<100xf16>) -> tensor<16x100xf16> loc("gemm")
  return %y : tensor<16x100xf16>
}

// -----

// Convolution: input and output channels; the filter and bias are padded at
// compile time with zeros.
// CHECK-LABEL: func.func @conv_channels(
// CHECK: %[[X:.*]] = mp.pad %arg0, {{.*}} -> tensor<1x16x8x8xf16>
// CHECK-DAG: %[[W:.*]] = mp.initializer "w" {{.*}} : tensor<24x16x3x3xf16>
// CHECK-DAG: %[[B:.*]] = mp.initializer "b" dense<{{.*}}> : tensor<24xf16>
// CHECK: mp.conv %[[X]], %[[W]], %[[B]] {{.*}} -> tensor<1x24x6x6xf16>
// CHECK: mp.slice {{.*}} -> tensor<1x22x6x6xf16>
func.func @conv_channels(%x: tensor<1x14x8x8xf16>) -> tensor<1x22x6x6xf16> {
  %w = mp.initializer "w" dense<0.5> : tensor<22x14x3x3xf16>
  %b = mp.initializer "b" dense<0.5> : tensor<22xf16>
  %y = mp.conv %x, %w, %b : (tensor<1x14x8x8xf16>, tensor<22x14x3x3xf16>, tensor<22xf16>) -> tensor<1x22x6x6xf16> loc("conv")
  return %y : tensor<1x22x6x6xf16>
}

// -----

// The first layer: 3 input channels with 32 or 64 output channels pad to 4,
// not 8.
// CHECK-LABEL: func.func @first_layer_three_to_four(
// CHECK: mp.pad %arg0, {{.*}} -> tensor<1x4x16x16xf16>
// CHECK: mp.conv {{.*}} : (tensor<1x4x16x16xf16>, tensor<32x4x3x3xf16>, none) -> tensor<1x32x14x14xf16>
func.func @first_layer_three_to_four(%x: tensor<1x3x16x16xf16>) -> tensor<1x32x14x14xf16> {
  %w = mp.initializer "w" dense<0.5> : tensor<32x3x3x3xf16>
  %none = mp.none
  %y = mp.conv %x, %w, %none : (tensor<1x3x16x16xf16>, tensor<32x3x3x3xf16>, none) -> tensor<1x32x14x14xf16> loc("conv1")
  return %y : tensor<1x32x14x14xf16>
}

// -----

// Grouped convolutions, aligned ops, f32 ops and ops that would grow past
// max-growth (1.35x) are left alone.
// CHECK-LABEL: func.func @skipped(
// CHECK-NOT: mp.pad
// CHECK-NOT: mp.slice
// CHECK: mp.conv {{.*}}group = 2 : i64{{.*}} -> tensor<1x6x6x6xf16>
// CHECK: mp.matmul {{.*}} : (tensor<16x64xf16>, tensor<64x64xf16>) -> tensor<16x64xf16>
// CHECK: mp.matmul {{.*}} : (tensor<16x61xf32>, tensor<61x61xf32>) -> tensor<16x61xf32>
// CHECK: mp.matmul {{.*}} : (tensor<16x5xf16>, tensor<5x5xf16>) -> tensor<16x5xf16>
func.func @skipped(%x: tensor<1x6x8x8xf16>, %a: tensor<16x64xf16>, %f: tensor<16x61xf32>, %s: tensor<16x5xf16>)
    -> (tensor<1x6x6x6xf16>, tensor<16x64xf16>, tensor<16x61xf32>, tensor<16x5xf16>) {
  %w = mp.initializer "w" dense<0.5> : tensor<6x3x3x3xf16>
  %none = mp.none
  %g = mp.conv %x, %w, %none {group = 2 : i64} : (tensor<1x6x8x8xf16>, tensor<6x3x3x3xf16>, none) -> tensor<1x6x6x6xf16> loc("grouped")
  %w2 = mp.initializer "w2" dense<0.5> : tensor<64x64xf16>
  %m = mp.matmul %a, %w2 : (tensor<16x64xf16>, tensor<64x64xf16>) -> tensor<16x64xf16> loc("aligned")
  %w3 = mp.initializer "w3" dense<0.5> : tensor<61x61xf32>
  %m2 = mp.matmul %f, %w3 : (tensor<16x61xf32>, tensor<61x61xf32>) -> tensor<16x61xf32> loc("f32")
  %w4 = mp.initializer "w4" dense<0.5> : tensor<5x5xf16>
  %m3 = mp.matmul %s, %w4 : (tensor<16x5xf16>, tensor<5x5xf16>) -> tensor<16x5xf16> loc("tiny")
  return %g, %m, %m2, %m3 : tensor<1x6x6x6xf16>, tensor<16x64xf16>, tensor<16x61xf32>, tensor<16x5xf16>
}

// -----

// A chain: the padded hidden width (1001 -> 1008) goes through the bias add
// and the ReLU into the next matmul, which reads it as K (its weight gets
// zero rows); one slice at the graph output, none between the layers.
// CHECK-LABEL: func.func @mlp_chain(
// CHECK: %[[M1:.*]] = mp.matmul {{.*}} -> tensor<16x1008xf16>
// CHECK-NEXT: %[[A1:.*]] = mp.add %[[M1]], %{{.*}} : (tensor<16x1008xf16>, tensor<1008xf16>) -> tensor<16x1008xf16>
// CHECK-NEXT: %[[R1:.*]] = mp.relu %[[A1]] : (tensor<16x1008xf16>) -> tensor<16x1008xf16>
// CHECK-NEXT: %[[M2:.*]] = mp.matmul %[[R1]], %{{.*}} : (tensor<16x1008xf16>, tensor<1008x1000xf16>) -> tensor<16x1000xf16>
// CHECK-NEXT: %[[M3:.*]] = mp.matmul %[[M2]], %{{.*}} : (tensor<16x1000xf16>, tensor<1000x1000xf16>) -> tensor<16x1000xf16>
// CHECK-COUNT-1: mp.slice
// CHECK-NOT: mp.slice
// CHECK: return
func.func @mlp_chain(%x: tensor<16x1000xf16>) -> tensor<16x999xf16> {
  %w1 = mp.initializer "w1" dense<0.5> : tensor<1000x1001xf16>
  %b1 = mp.initializer "b1" dense<0.25> : tensor<1001xf16>
  %w2 = mp.initializer "w2" dense<0.5> : tensor<1001x1000xf16>
  %w3 = mp.initializer "w3" dense<0.5> : tensor<1000x999xf16>
  %m1 = mp.matmul %x, %w1 : (tensor<16x1000xf16>, tensor<1000x1001xf16>) -> tensor<16x1001xf16> loc("fc1")
  %a1 = mp.add %m1, %b1 : (tensor<16x1001xf16>, tensor<1001xf16>) -> tensor<16x1001xf16> loc("bias1")
  %r1 = mp.relu %a1 : (tensor<16x1001xf16>) -> tensor<16x1001xf16> loc("relu1")
  %m2 = mp.matmul %r1, %w2 : (tensor<16x1001xf16>, tensor<1001x1000xf16>) -> tensor<16x1000xf16> loc("fc2")
  %m3 = mp.matmul %m2, %w3 : (tensor<16x1000xf16>, tensor<1000x999xf16>) -> tensor<16x999xf16> loc("fc3")
  return %m3 : tensor<16x999xf16>
}

// -----

// A conv stack: padded output channels go through batch norm (new channels:
// scale 0, bias 0, mean 0, variance 1), ReLU and max pooling into the next
// convolution; the softmax observes the original shape and gets the slice.
// CHECK-LABEL: func.func @conv_chain(
// CHECK: %[[C1:.*]] = mp.conv {{.*}} -> tensor<1x24x8x8xf16>
// CHECK: mp.batch_normalization %[[C1]], {{.*}} : (tensor<1x24x8x8xf16>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> (tensor<1x24x8x8xf16>, tensor<24xf32>, tensor<24xf32>)
// CHECK: mp.relu {{.*}} -> tensor<1x24x8x8xf16>
// CHECK: mp.max_pool {{.*}} -> (tensor<1x24x4x4xf16>, tensor<1x24x4x4xi64>)
// CHECK: %[[C2:.*]] = mp.conv {{.*}} : (tensor<1x24x4x4xf16>, tensor<16x24x1x1xf16>, none) -> tensor<1x16x4x4xf16>
// CHECK: %[[S:.*]] = mp.softmax %[[C2]]
// CHECK-NOT: mp.slice
func.func @conv_chain(%x: tensor<1x16x8x8xf16>) -> tensor<1x16x4x4xf16> {
  %w = mp.initializer "w" dense<0.5> : tensor<20x16x1x1xf16>
  %none = mp.none
  %c = mp.conv %x, %w, %none : (tensor<1x16x8x8xf16>, tensor<20x16x1x1xf16>, none) -> tensor<1x20x8x8xf16> loc("conv1")
  %s = mp.initializer "s" dense<1.0> : tensor<20xf32>
  %b = mp.initializer "bb" dense<0.5> : tensor<20xf32>
  %mean = mp.initializer "mean" dense<0.1> : tensor<20xf32>
  %var = mp.initializer "var" dense<2.0> : tensor<20xf32>
  %n, %rm, %rv = mp.batch_normalization %c, %s, %b, %mean, %var : (tensor<1x20x8x8xf16>, tensor<20xf32>, tensor<20xf32>, tensor<20xf32>, tensor<20xf32>) -> (tensor<1x20x8x8xf16>, tensor<20xf32>, tensor<20xf32>) loc("bn")
  %r = mp.relu %n : (tensor<1x20x8x8xf16>) -> tensor<1x20x8x8xf16> loc("relu")
  %p, %i = mp.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x20x8x8xf16>) -> (tensor<1x20x4x4xf16>, tensor<1x20x4x4xi64>) loc("pool")
  %w2 = mp.initializer "w2" dense<0.5> : tensor<16x20x1x1xf16>
  %c2 = mp.conv %p, %w2, %none : (tensor<1x20x4x4xf16>, tensor<16x20x1x1xf16>, none) -> tensor<1x16x4x4xf16> loc("conv2")
  %sm = mp.softmax %c2 {axis = 1 : i64} : (tensor<1x16x4x4xf16>) -> tensor<1x16x4x4xf16> loc("softmax")
  return %sm : tensor<1x16x4x4xf16>
}

// -----

// A value observed in its original shape by a shape-sensitive op mid-chain
// (a softmax over the padded axis) gets one slice, shared by its readers.
// CHECK-LABEL: func.func @observed(
// CHECK: %[[M:.*]] = mp.matmul {{.*}} -> tensor<8x104xf16>
// CHECK: %[[S:.*]] = mp.slice %[[M]], {{.*}} -> tensor<8x100xf16>
// CHECK: mp.softmax %[[S]]
// CHECK: mp.reshape %[[S]]
func.func @observed(%x: tensor<8x64xf16>) -> (tensor<8x100xf16>, tensor<800xf16>) {
  %w = mp.initializer "w" dense<0.5> : tensor<64x100xf16>
  %m = mp.matmul %x, %w : (tensor<8x64xf16>, tensor<64x100xf16>) -> tensor<8x100xf16> loc("mm")
  %s = mp.softmax %m {axis = 1 : i64} : (tensor<8x100xf16>) -> tensor<8x100xf16> loc("softmax")
  %shape = mp.constant {value = dense<[800]> : tensor<1xi64>} : () -> tensor<1xi64>
  %r = mp.reshape %m, %shape : (tensor<8x100xf16>, tensor<1xi64>) -> tensor<800xf16> loc("reshape")
  return %s, %r : tensor<8x100xf16>, tensor<800xf16>
}
