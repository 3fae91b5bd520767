#pragma once
// The grouped GEMM's tiles on sm_90a warpgroup MMAs (expert_wgmma.cu): same arguments, tiles and outputs as
// the mma.sync kernel of expert_mma.cu, which calls this where the device has wgmma (see
// grouped_gemm_uses_wgmma in expert_mma.h).
#include <cuda_runtime.h>

namespace moe::cuda {

struct MmaKernelArgs;

// Stage `stage` (1 or 2) of the grouped GEMM over the tile list in `k`, for fp8 codes or bf16.
void launch_wgmma_gemm(const MmaKernelArgs& k, bool fp8, int stage, int max_tiles, cudaStream_t stream);

// The same with the operands swapped (expert_wgmma_swap.cu): 128 weight rows x pair tiles of `pair_tile`
// (16, 32 or 64) pairs; the tile list in `k` must have been made with that many rows per tile.
void launch_wgmma_swap_gemm(const MmaKernelArgs& k, bool fp8, int stage, int pair_tile, int max_tiles,
                            cudaStream_t stream);

// A measuring build's (MOE_WGMMA_CYCLES) cycle accounting of the wgmma kernel since the last report, per
// stage: where its consumer warps' and copier's cycles went (expert_wgmma.cu). Prints nothing in a normal
// build.
void grouped_gemm_cycles_report();
// The same for the swapped kernel (expert_wgmma_swap.cu).
void grouped_gemm_swap_cycles_report();

}  // namespace moe::cuda
