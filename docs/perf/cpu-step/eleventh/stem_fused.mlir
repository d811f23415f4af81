// cnn3d stem weight gradient: the window gather and a per-image contraction in one hand-written flow.dispatch.region
// (with a pinned tile on the contraction; without its compilation_info attribute it is IREE's own). iree-benchmark-module on 2 workers:
// 10.0-10.3 ms without the tile, 14.1-14.3 with it (IREE compiled the fused contraction to scalar code), against
// 1.44-1.60 ms for the shipped per_image_nn form (docs/perf/cpu-step/tenth/stem_per_image_nn.mlir). Compile with
// --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=host
// --iree-global-opt-propagate-transposes=false
!x = tensor<4x3x8x32x32xf32>
!grad_out = tensor<4x16x8x32x32xf32>
!grad_w = tensor<16x3x3x3x3xf32>
!x_padded = tensor<4x3x10x34x34xf32>
!cols = tensor<4x3x3x3x3x8x32x32xf32>
!got = tensor<4x8x32x32x16xf32>
!pi = tensor<4x3x3x3x3x16xf32>

func.func @stem(%x: !x, %grad_out: !grad_out) -> !grad_w {
  %zero = arith.constant 0.0 : f32
  %x_padded = tensor.pad %x low[0, 0, 1, 1, 1] high[0, 0, 1, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : !x to !x_padded
  %got_empty = tensor.empty() : !got
  %got = linalg.transpose ins(%grad_out : !grad_out) outs(%got_empty : !got) permutation = [0, 2, 3, 4, 1]
  %per_image = flow.dispatch.region -> (!pi) {
    %cols_empty = tensor.empty() : !cols
    %cols = linalg.generic {indexing_maps = [affine_map<(n, c, f0, f1, f2, o0, o1, o2) -> (n, c, o0 + f0, o1 + f1, o2 + f2)>, affine_map<(n, c, f0, f1, f2, o0, o1, o2) -> (n, c, f0, f1, f2, o0, o1, o2)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
        ins(%x_padded : !x_padded) outs(%cols_empty : !cols) {
    ^bb0(%xv: f32, %unused: f32):
      linalg.yield %xv : f32
    } -> !cols
    %pi_empty = tensor.empty() : !pi
    %pi_zero = linalg.fill ins(%zero : f32) outs(%pi_empty : !pi) -> !pi
    %pi = linalg.generic {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [1, 1, 3, 3, 3, 16, 0, 0, 0], vector_common_parallel = [1, 1, 1, 3, 3, 16, 0, 0, 0], vector_reduction = [0, 0, 0, 0, 0, 0, 1, 1, 16]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>>, indexing_maps = [
        affine_map<(n, c, f0, f1, f2, k, o0, o1, o2) -> (n, c, f0, f1, f2, o0, o1, o2)>,
        affine_map<(n, c, f0, f1, f2, k, o0, o1, o2) -> (n, o0, o1, o2, k)>,
        affine_map<(n, c, f0, f1, f2, k, o0, o1, o2) -> (n, c, f0, f1, f2, k)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%cols, %got : !cols, !got) outs(%pi_zero : !pi) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> !pi
    flow.return %pi : !pi
  }
  %gw_empty = tensor.empty() : !grad_w
  %gw_zero = linalg.fill ins(%zero : f32) outs(%gw_empty : !grad_w) -> !grad_w
  %gw = linalg.generic {indexing_maps = [affine_map<(n, k, c, f0, f1, f2) -> (n, c, f0, f1, f2, k)>, affine_map<(n, k, c, f0, f1, f2) -> (k, c, f0, f1, f2)>], iterator_types = ["reduction", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%per_image : !pi) outs(%gw_zero : !grad_w) {
  ^bb0(%p: f32, %s: f32):
    %t = arith.addf %s, %p : f32
    linalg.yield %t : f32
  } -> !grad_w
  return %gw : !grad_w
}
