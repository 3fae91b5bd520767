#include "cuda/l2_warm.h"

#include <atomic>
#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/kernels/bulk_copy.cuh"

namespace moe::cuda {
namespace {

constexpr size_t kBulkPiece = 16 * 1024;  // one cp.async.bulk.prefetch.L2 request at most
constexpr size_t kLine = 128;
std::atomic<long long> launches{0};

// Each row's requests (pieces or lines) dealt over every thread of the grid, row after row.
template <L2WarmKind kKind>
__global__ void l2_warm_kernel(L2WarmRows w) {
  constexpr size_t kUnit = kKind == L2WarmKind::Bulk ? kBulkPiece : kLine;
  const size_t row_end = w.row_bytes / 16 * 16;  // bulk requests take whole 16-byte units
  const size_t per_row = (row_end + kUnit - 1) / kUnit;
  const size_t total = per_row * static_cast<size_t>(w.rows);
  const size_t threads = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += threads) {
    const size_t row = i / per_row, off = (i % per_row) * kUnit;
    const auto* p = static_cast<const uint8_t*>(w.base) + row * w.pitch + off;
    if constexpr (kKind == L2WarmKind::Bulk) {
      const size_t n = row_end - off < kUnit ? row_end - off : kUnit;
      bulk_prefetch_l2(p, static_cast<uint32_t>(n));
    } else {
      asm volatile("prefetch.global.L2::evict_normal [%0];" ::"l"(p));
    }
  }
}

}  // namespace

void l2_warm(const L2WarmRows& rows, L2WarmKind kind, int blocks, cudaStream_t s) {
  if (!rows.base || rows.rows <= 0 || rows.row_bytes < 16 || blocks <= 0) return;
  if (kind == L2WarmKind::Bulk)
    l2_warm_kernel<L2WarmKind::Bulk><<<blocks, 64, 0, s>>>(rows);
  else
    l2_warm_kernel<L2WarmKind::Lines><<<blocks, 256, 0, s>>>(rows);
  MOE_CUDA_CHECK_LAUNCH();
  launches.fetch_add(1, std::memory_order_relaxed);
}

long long l2_warm_launches() {
  return launches.load(std::memory_order_relaxed);
}

}  // namespace moe::cuda
