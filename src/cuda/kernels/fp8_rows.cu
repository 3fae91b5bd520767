// The row quantiser of fp8_rows.h.
#include "cuda/kernels/fp8_rows.h"

#include <cstdint>

#include "core/error.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

namespace moe::cuda {
namespace {

// One warp per row (warp_fp8_row: 16-byte loads, a half warp per group, the row's loads in flight together).
// The warp-per-row form with 8-byte loads and a whole warp per group took 50 us for the h rows of
// Qwen3-30B-A3B at M=4096 (ncu, 75 MB moved: 1.5 TB/s).
__global__ void __launch_bounds__(256) fp8_rows_kernel(Fp8RowsArgs a) {
  pdl_wait();  // the rows come from the previous kernel
  pdl_trigger();
  const int i = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  if (i >= a.rows_bound) return;
  const int count = a.row_count ? *a.row_count : a.rows_bound;
  if (i >= count) return;
  const int row = a.row_list ? a.row_list[i] : i;
  const size_t base = static_cast<size_t>(row) * a.n;
  warp_fp8_row(a.src + base, a.n, a.phase, a.groups, a.codes + base,
               a.scales + static_cast<size_t>(row) * a.groups);
}

}  // namespace

void launch_fp8_rows(const Fp8RowsArgs& a, cudaStream_t stream) {
  // warp_fp8_row's 16-byte loads and 8-byte stores (the layout plan checks the same: multiples of 16).
  require(a.n % 8 == 0 && a.phase % 8 == 0, "fp8_rows: row length ", a.n, " and phase ", a.phase,
          " must be multiples of 8");
  require(reinterpret_cast<uintptr_t>(a.src) % 16 == 0, "fp8_rows: rows must start 16-byte aligned");
  launch_overlapped(fp8_rows_kernel, dim3(static_cast<unsigned>((a.rows_bound + 7) / 8)), dim3(256), 0,
                    stream, a);
}

}  // namespace moe::cuda
