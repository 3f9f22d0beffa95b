// A two-layer MLP for the mp-loss-scale tests.
func.func @mlp(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x3xf32> {mp.name = "logits"}) {
  %w1 = mp.initializer "fc1.weight" dense<0.1> : tensor<8x16xf32>
  %w2 = mp.initializer "fc2.weight" dense<0.2> : tensor<16x3xf32>
  %h = mp.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc1")
  %r = mp.relu %h : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("relu")
  %l = mp.matmul %r, %w2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32> loc("fc2")
  return %l : tensor<4x3xf32>
}
