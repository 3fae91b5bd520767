#include "cuda/read_in_flight.h"

#include <algorithm>
#include <cstdio>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/event_timing.h"
#include "cuda/kernels/mma_sm80.cuh"
#include "cuda/kernels/smem_ring.cuh"
#include "cuda/read_bandwidth.h"

namespace moe::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kStepBytes = 4096;  // a warp's step: 32 rows x 128 bytes
constexpr int kRowsPerTile = 32;

// Warp w walks the 32-row tiles w, w + W, ... and in each the 128-byte column steps 0, 1, ... of its rows,
// kSteps steps in flight at once: cp.async copies into the warp's ring of kSteps 4 KB slots in shared memory,
// one commit group a step, waiting for the oldest before reusing its slot (no registers held, so ptxas
// cannot fold a step early and shorten the stream: with register loads it interleaved their uses with the
// next loads). A step follows the swap-AB stages' layout: lane (gid, tig) copies 16 bytes of rows gid + 8q at
// byte 64s + 16tig of the step. Without L2's 256-byte prefetch hint (which would hand the warp its next step
// from L2, where in the swap-AB stages that step is another warp's), so the bytes in flight are the warps'.
template <int kSteps>
__global__ void __launch_bounds__(kThreads)
    in_flight_kernel(const uint8_t* base, long tiles, int row_bytes, uint32_t* sink) {
  extern __shared__ __align__(16) uint8_t ring[];  // [warp][kSteps][kStepBytes]
  const int lane = threadIdx.x % 32, gid = lane / 4, tig = lane % 4;
  const long warp = (static_cast<long>(blockIdx.x) * kThreads + threadIdx.x) / 32;
  const long warps = static_cast<long>(gridDim.x) * kThreads / 32;
  const int steps_per_row = row_bytes / 128;
  const long units = (tiles - warp + warps - 1) / warps * steps_per_row;  // this warp's steps in all
  uint8_t* slots = ring + (threadIdx.x / 32) * kSteps * kStepBytes;
  const auto issue = [&](long k) {  // step k into slot k % kSteps (a step past the end: an empty group)
    if (k < units) {
      const long tile = warp + (k / steps_per_row) * warps;
      const uint8_t* p =
          base + tile * kRowsPerTile * static_cast<long>(row_bytes) + (k % steps_per_row) * 128;
      uint8_t* slot = slots + (k % kSteps) * kStepBytes;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        cp_async16_to(slot + j * 512 + lane * 16,
                      p + static_cast<long>(gid + 8 * (j / 2)) * row_bytes + 64 * (j % 2) + tig * 16, true);
    }
    cp_async_commit();
  };
  for (int k = 0; k < kSteps - 1; ++k) issue(k);
  uint32_t acc = 0;
  for (long k = 0; k < units; ++k) {
    issue(k + kSteps - 1);
    cp_async_wait<kSteps - 1>();  // step k has landed
    acc ^= *reinterpret_cast<const uint32_t*>(slots + (k % kSteps) * kStepBytes + lane * 16);
    __syncwarp();  // every lane's read of the slot before any lane copies into it again
  }
  if (acc == 0x12345678u) *sink = acc;  // keeps the copies alive
}

template <int kSteps>
InFlightRow time_one(const DeviceBuffer& buf, DeviceBuffer& sink, int row_bytes, int blocks_per_sm, int sms) {
  const long tiles = static_cast<long>(buf.bytes() / (static_cast<size_t>(kRowsPerTile) * row_bytes));
  const int smem = (kThreads / 32) * kSteps * kStepBytes;
  auto kernel = in_flight_kernel<kSteps>;
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int resident = 0;
  MOE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, smem));
  const int per_sm = std::min(blocks_per_sm, resident);
  const std::vector<double> ms = time_each_ms(nullptr, 6, [&] {
    kernel<<<sms * per_sm, kThreads, smem>>>(buf.as<uint8_t>(), tiles, row_bytes, sink.as<uint32_t>());
    MOE_CUDA_CHECK_LAUNCH();
  });
  std::vector<double> rates;  // GB/s of each run after the first (a warm-up)
  for (size_t r = 1; r < ms.size(); ++r)
    rates.push_back(static_cast<double>(tiles) * kRowsPerTile * row_bytes / (ms[r] * 1e-3) / 1e9);
  const double kb = per_sm * (kThreads / 32) * kSteps * kStepBytes / 1024.0;
  return InFlightRow{row_bytes, per_sm, kSteps, kb, kb * sms / 1024.0, median(rates)};
}

}  // namespace

std::vector<InFlightRow> sweep_read_in_flight(const std::vector<int>& row_bytes) {
  DeviceBuffer buf(size_t{3} << 30), sink(4);
  MOE_CUDA_CHECK(cudaMemset(buf.get(), 1, buf.bytes()));
  int sms = 0;
  MOE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<InFlightRow> rows;
  for (const int pitch : row_bytes) {
    std::fprintf(stderr, "read sweep: rows of %d bytes...\n", pitch);
    for (const int per_sm : {1, 2, 3, 4, 6}) {
      rows.push_back(time_one<1>(buf, sink, pitch, per_sm, sms));
      rows.push_back(time_one<2>(buf, sink, pitch, per_sm, sms));
      rows.push_back(time_one<4>(buf, sink, pitch, per_sm, sms));
    }
  }
  return rows;
}

int run_read_in_flight_sweep() {
  const double full = measure_read_bandwidth() / 1e9;
  const std::vector<InFlightRow> rows = sweep_read_in_flight({128, 2048, 7168});
  std::printf("# read bandwidth by bytes in flight (measure_read_bandwidth: %.0f GB/s)\n", full);
  std::printf("%9s %7s %10s %10s %10s %8s %6s\n", "row_bytes", "blk/SM", "warp_steps", "KB/SM", "MB_total",
              "GB/s", "%full");
  for (const InFlightRow& r : rows)
    std::printf("%9d %7d %10d %10.0f %10.1f %8.0f %6.1f\n", r.row_bytes, r.blocks_per_sm, r.warp_steps,
                r.kb_per_sm, r.mb_total, r.gb_per_s, 100.0 * r.gb_per_s / full);
  return 0;
}

}  // namespace moe::cuda
