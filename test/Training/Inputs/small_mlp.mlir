// A two-layer MLP (8 samples of 16 features -> 16 -> 4) for the loss-scaling
// tests: its weights are ~0.1, so with inputs ~1e-3 and targets 0 its MSE
// gradients are ~1e-8..1e-10, below f16's smallest subnormal (6e-8).
func.func @main(%x: tensor<8x16xf32> {mp.name = "x"}) -> (tensor<8x4xf32> {mp.name = "y"}) {
  %w1 = mp.initializer "fc1.weight" dense<0.1> : tensor<16x16xf32>
  %w2 = mp.initializer "fc2.weight" dense<[[0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2], [0.1, -0.1, 0.2, -0.2]]> : tensor<16x4xf32>
  %none = mp.none
  %h = mp.gemm %x, %w1, %none : (tensor<8x16xf32>, tensor<16x16xf32>, none) -> tensor<8x16xf32> loc("fc1")
  %r = mp.relu %h : (tensor<8x16xf32>) -> tensor<8x16xf32> loc("relu")
  %y = mp.gemm %r, %w2, %none : (tensor<8x16xf32>, tensor<16x4xf32>, none) -> tensor<8x4xf32> loc("fc2")
  return %y : tensor<8x4xf32>
}
