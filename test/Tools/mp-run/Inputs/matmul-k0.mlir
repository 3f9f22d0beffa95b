// A matmul over an empty inner dim (K = 0): y is zeros on the CPU; the CUDA
// backend refuses it (cuBLASLt has no K = 0).
func.func @f(%x: tensor<2x0xf32> {mp.name = "x"}, %w: tensor<0x3xf32> {mp.name = "w"}) -> (tensor<2x3xf32> {mp.name = "y"}) {
  %y = mp.matmul %x, %w : (tensor<2x0xf32>, tensor<0x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
