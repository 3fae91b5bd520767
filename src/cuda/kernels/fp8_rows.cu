// The row quantiser of fp8_rows.h.
#include "cuda/kernels/fp8_rows.h"

#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

namespace moe::cuda {
namespace {

// Groups of a row whose loads one warp has in flight together: a warp per group spent its time waiting on
// one 256-byte load and then on its reductions (the h rows of Qwen3-30B-A3B at M=4096 took 62 us at
// 1.2 TB/s).
constexpr int kGroupBatch = 8;

// One warp per row, kGroupBatch groups at a time; n and phase are multiples of 16, so each lane owns 4
// aligned values of a group.
__global__ void __launch_bounds__(256) fp8_rows_kernel(Fp8RowsArgs a) {
  pdl_wait();  // the rows come from the previous kernel
  pdl_trigger();
  const int i = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
  const int count = a.row_count ? *a.row_count : a.rows_bound;
  if (i >= count || i >= a.rows_bound) return;
  const int row = a.row_list ? a.row_list[i] : i;
  const size_t base = static_cast<size_t>(row) * a.n;
  const auto begin = [&](int g) { return max(0, g * 128 - a.phase); };
  const auto end = [&](int g) { return min(a.n, (g + 1) * 128 - a.phase); };
  for (int g0 = 0; g0 < a.groups; g0 += kGroupBatch) {
    uint2 raw[kGroupBatch];
#pragma unroll
    for (int b = 0; b < kGroupBatch; ++b)
      raw[b] =
          g0 + b < a.groups ? lane_group_bits(a.src + base, begin(g0 + b), end(g0 + b)) : make_uint2(0u, 0u);
#pragma unroll
    for (int b = 0; b < kGroupBatch; ++b) {
      const int g = g0 + b;
      if (g >= a.groups) break;
      const float s = warp_fp8_codes_from_bits(raw[b], begin(g), end(g), a.codes + base);
      if (lane == 0) a.scales[static_cast<size_t>(row) * a.groups + g] = s;
    }
  }
}

}  // namespace

void launch_fp8_rows(const Fp8RowsArgs& a, cudaStream_t stream) {
  launch_overlapped(fp8_rows_kernel, dim3(static_cast<unsigned>((a.rows_bound + 7) / 8)), dim3(256), 0,
                    stream, a);
}

}  // namespace moe::cuda
