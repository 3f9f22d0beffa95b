// mp-loss-scale mode=auto (the default): an f16 step is scaled as with
// mode=dynamic; a step that computes in bf16 (or f32) only is left as
// mp-training built it, with a remark: bf16 has f32's exponent range, so its
// gradients do not underflow. mode=dynamic scales it anyway.
// RUN: mp-opt %S/Inputs/mlp.mlir --mp-training --mp-autocast=target=f16 --mp-master-weights --mp-loss-scale | FileCheck %s --check-prefix=F16
// RUN: mp-opt %S/Inputs/mlp.mlir --mp-training --mp-autocast=target=bf16 --mp-master-weights --mp-loss-scale 2>&1 | FileCheck %s --check-prefix=BF16
// RUN: mp-opt %S/Inputs/mlp.mlir --mp-training --mp-autocast=target=bf16 --mp-master-weights > %t.unscaled.mlir
// RUN: mp-opt %S/Inputs/mlp.mlir --mp-training --mp-autocast=target=bf16 --mp-master-weights --mp-loss-scale 2>/dev/null > %t.auto.mlir
// RUN: diff %t.unscaled.mlir %t.auto.mlir
// RUN: mp-opt %S/Inputs/mlp.mlir --mp-training --mp-autocast=target=bf16 --mp-master-weights --mp-loss-scale=mode=dynamic | FileCheck %s --check-prefix=FORCED
// RUN: mp-opt %S/Inputs/mlp.mlir --mp-training --mp-loss-scale 2>&1 | FileCheck %s --check-prefix=BF16

// F16: mp.loss_scaled = "dynamic"
// F16: mp.unscale_check_finite
// F16: mp.loss_scale_update

// BF16: remark: mp-loss-scale: @mlp computes in no f16: bf16 and f32 have f32's exponent range, so its gradients need no loss scaling (mode=dynamic or static scales them anyway)
// BF16-NOT: mp.unscale_check_finite
// BF16-NOT: mp.loss_scaled

// FORCED: mp.loss_scaled = "dynamic"
// FORCED: mp.unscale_check_finite
