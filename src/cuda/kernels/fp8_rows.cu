// The row quantiser of fp8_rows.h.
#include "cuda/kernels/fp8_rows.h"

#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

namespace moe::cuda {
namespace {

// One warp per (row, group); n and phase are multiples of 16, so each lane owns 4 aligned values.
__global__ void __launch_bounds__(256) fp8_rows_kernel(Fp8RowsArgs a) {
  pdl_wait();  // the rows come from the previous kernel
  pdl_trigger();
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = threadIdx.x % 32;
  const int i = warp / a.groups, g = warp % a.groups;
  const int count = a.row_count ? *a.row_count : a.rows_bound;
  if (i >= count || i >= a.rows_bound) return;
  const int row = a.row_list ? a.row_list[i] : i;
  const int g0 = max(0, g * 128 - a.phase), g1 = min(a.n, (g + 1) * 128 - a.phase);
  const size_t base = static_cast<size_t>(row) * a.n;
  const float s = warp_quantize_fp8_codes(a.src + base, g0, g1, a.codes + base);
  if (lane == 0) a.scales[static_cast<size_t>(row) * a.groups + g] = s;
}

}  // namespace

void launch_fp8_rows(const Fp8RowsArgs& a, cudaStream_t stream) {
  const long long warps = static_cast<long long>(a.rows_bound) * a.groups;
  launch_overlapped(fp8_rows_kernel, dim3(static_cast<unsigned>((warps + 7) / 8)), dim3(256), 0, stream, a);
}

}  // namespace moe::cuda
