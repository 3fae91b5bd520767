// The grouped GEMM's tiles on sm_90a's warpgroup MMA (wgmma), which runs fp8 on the tensor cores (Hopper's
// mma.sync e4m3 is emulated through f16 HMMAs: expert_mma.cu's kernel reached 160 TFLOP/s at M=4096). Same
// tiles, operand copies and outputs as expert_mma.cu (expert_mma_tile.cuh): 128 pairs x 128 weight rows per
// block, a 4-stage cp.async pipeline of swizzled 128-byte rows, which is the layout wgmma reads with its
// 128-byte swizzle. Warpgroup g (threads 128g..128g+127) owns tile rows 64g..64g+63 and all 128 columns: per
// K step four m64n128 instructions of 32 bytes of K. For fp8 each K step (one 128-wide scale block) goes into
// a fresh fp32 partial that is added to the result times the block's activation and weight scales, as the
// mma.sync kernel does; bf16 accumulates straight into the result. No split K, no atomics: the same bits on
// every run.
#include "cuda/kernels/expert_wgmma.h"

#include "cuda/cuda_check.h"
#include "cuda/kernels/expert_mma_tile.cuh"
#include "cuda/kernels/wgmma_sm90.cuh"

namespace moe::cuda {
namespace {

constexpr int kStages = 4;
// wgmma's swizzle is a function of the shared address: every slot's tiles start on 1024-byte boundaries.
constexpr int kSwizzleAlign = 1024;

template <bool kFp8>
constexpr int slot_bytes() {
  return (mma_stage_bytes<kFp8>() + kSwizzleAlign - 1) / kSwizzleAlign * kSwizzleAlign;
}

template <bool kFp8>
constexpr int smem_bytes() {
  return kStages * slot_bytes<kFp8>() + kSwizzleAlign;  // + room to align the dynamic base
}

template <bool kFp8, int kStage>
__global__ void __launch_bounds__(kMmaThreads, 1) expert_wgmma_kernel(MmaKernelArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if (static_cast<int>(blockIdx.x) >= *a.num_tiles) return;
  constexpr int kSlot = slot_bytes<kFp8>();
  const int2 tile = a.tiles[blockIdx.x];
  const int e = tile.x, m0 = tile.y, m_end = a.offsets[e + 1];
  const int n0 = blockIdx.y * (kStage == 1 ? kMmaBN / 2 : kMmaBN);
  const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32, wq = (tid % 128) / 32;
  const int gid = lane / 4, tig = lane % 4;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  const uint32_t raw0 = smem_addr(smem_raw);
  const uint32_t smem0 = (raw0 + kSwizzleAlign - 1) & ~static_cast<uint32_t>(kSwizzleAlign - 1);
  const uint8_t* smem = smem_raw + (smem0 - raw0);
  const MmaTileLoader<kFp8, kStage> loader(a, e, m0, m_end, n0);

  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < a.steps) loader.load(a, smem0 + s * kSlot, s);
    cp_async_commit();
  }

  // This thread's two tile rows (accumulator halves h = 0, 1).
  const int row0 = 64 * wg + 16 * wq + gid;
  for (int step = 0; step < a.steps; ++step) {
    cp_async_wait<kStages - 2>();
    fence_proxy_async_shared();  // this thread's copies of the step, before the wgmma reads them
    __syncthreads();  // every thread's copies are in; everyone's wgmma of the slot refilled next are done
    if (step + kStages - 1 < a.steps)
      loader.load(a, smem0 + ((step + kStages - 1) % kStages) * kSlot, step + kStages - 1);
    cp_async_commit();

    const int slot = step % kStages;
    const uint32_t a_base = smem0 + slot * kSlot + wg * 64 * kTileRowBytes;
    const uint32_t b_base = smem0 + slot * kSlot + kMmaTileBytes;
    if constexpr (kFp8) {
      float part[64];
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        wgmma_m64n128_32B<true>(part, wgmma_desc_sw128(a_base + 32 * ks), wgmma_desc_sw128(b_base + 32 * ks),
                                ks > 0);
      wgmma_commit();
      wgmma_wait<0>();
      wgmma_fence_operands(part);
      const float* sa = reinterpret_cast<const float*>(smem + slot * kSlot + 2 * kMmaTileBytes);
      const float* sb = sa + kMmaBM;
      const float sa0 = sa[row0], sa1 = sa[row0 + 8];
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const float2 sbj = *reinterpret_cast<const float2*>(sb + 8 * j + 2 * tig);
        acc[4 * j + 0] = fmaf(part[4 * j + 0], sa0 * sbj.x, acc[4 * j + 0]);
        acc[4 * j + 1] = fmaf(part[4 * j + 1], sa0 * sbj.y, acc[4 * j + 1]);
        acc[4 * j + 2] = fmaf(part[4 * j + 2], sa1 * sbj.x, acc[4 * j + 2]);
        acc[4 * j + 3] = fmaf(part[4 * j + 3], sa1 * sbj.y, acc[4 * j + 3]);
      }
    } else {
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        wgmma_m64n128_32B<false>(acc, wgmma_desc_sw128(a_base + 32 * ks), wgmma_desc_sw128(b_base + 32 * ks),
                                 true);
      wgmma_commit();
      wgmma_wait<0>();
      wgmma_fence_operands(acc);
    }
  }
  cp_async_wait<0>();

  const int H = a.w.hidden, P = a.w.inter;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int p = m0 + row0 + 8 * h;
    if (p >= m_end) continue;
    const size_t pair = static_cast<size_t>(a.sorted_pairs[p]);
    if (kStage == 1) {
      // Columns 32jj..32jj+15 are gate rows of outputs n0 + 16jj + (0..15), the next 16 their up rows.
#pragma unroll
      for (int jj = 0; jj < 4; ++jj)
#pragma unroll
        for (int jl = 0; jl < 2; ++jl) {
          const int j = 4 * jj + jl, n = n0 + 16 * jj + 8 * jl + 2 * tig;
          if (n < P)
            store_h_pair(a, e, pair, n, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1], acc[4 * (j + 2) + 2 * h],
                         acc[4 * (j + 2) + 2 * h + 1]);
        }
    } else {
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const int n = n0 + 8 * j + 2 * tig;
        if (n < H) store_y_pair(a, e, pair, n, make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]));
      }
    }
  }
#else
  __trap();  // built for a target without wgmma: launch_wgmma_gemm is only called where it exists
#endif
}

template <bool kFp8, int kStage>
void launch(const MmaKernelArgs& k, int max_tiles, cudaStream_t stream) {
  const int out = kStage == 1 ? k.w.inter : k.w.hidden, per_block = kStage == 1 ? kMmaBN / 2 : kMmaBN;
  const dim3 grid(static_cast<unsigned>(max_tiles), static_cast<unsigned>((out + per_block - 1) / per_block));
  constexpr int smem = smem_bytes<kFp8>();
  auto kernel = expert_wgmma_kernel<kFp8, kStage>;
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<grid, kMmaThreads, smem, stream>>>(k);
  MOE_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_wgmma_gemm(const MmaKernelArgs& k, bool fp8, int stage, int max_tiles, cudaStream_t stream) {
  if (fp8)
    stage == 1 ? launch<true, 1>(k, max_tiles, stream) : launch<true, 2>(k, max_tiles, stream);
  else
    stage == 1 ? launch<false, 1>(k, max_tiles, stream) : launch<false, 2>(k, max_tiles, stream);
}

}  // namespace moe::cuda
