// An integer Shrink: the CPU backend runs it, the CUDA backend does not.
func.func @f(%x: tensor<4xi32> {mp.name = "x"}) -> (tensor<4xi32> {mp.name = "y"}) {
  %y = mp.shrink %x {bias = 1.0 : f32, lambd = 2.0 : f32} : (tensor<4xi32>) -> tensor<4xi32>
  return %y : tensor<4xi32>
}
