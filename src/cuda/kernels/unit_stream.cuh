#pragma once
// A warp's stream of dot-product units through a register ring. A unit is kRows weight rows of one
// projection dotted with up to T activation rows in shared memory; each lane group of `lpr` lanes splits K as
// the GEMV does (gemv_rows.cuh). The ring keeps kRing chunks (each kRows x 16 bytes) of the warp's next
// work in flight per lane, across unit boundaries: as soon as a chunk is used, the chunk kRing items ahead
// is requested in its place. prefill() issues the first loads, so a kernel can request weights before it
// waits for its activations.
#include <cuda_runtime.h>

#include "cuda/kernels/gemv_rows.cuh"

namespace moe::cuda {

constexpr int kUnitRows = 2;  // weight rows per lane group and unit
constexpr int kRing = 4;      // chunks in flight per lane

struct DotUnit {
  RowRef rows[kUnitRows];
  const float* act;  // first activation row of the unit
  int act_stride;    // floats between activation rows
  int chunks;        // 16-byte chunks per weight row
  int lpr;           // lanes per row (uniform over the warp for one unit)
  int k_phase;       // the rows' fp8 grid offset along K
};

__device__ __forceinline__ int unit_steps(const DotUnit& u) {
  return (u.chunks + u.lpr - 1) / u.lpr;
}

// UnitAt: DotUnit(int u), the warp's u-th unit (warp-uniform except the rows' addresses).
template <WFormat F, int T, class UnitAt>
class UnitStream {
 public:
  __device__ __forceinline__ UnitStream(UnitAt unit_at, int n_units) : unit_at_(unit_at), n_units_(n_units) {}

  __device__ __forceinline__ void prefill() {
    if (n_units_ <= 0) return;
    load_unit_ = unit_at_(0);
    load_steps_ = unit_steps(load_unit_);
#pragma unroll
    for (int c = 0; c < kRing; ++c) load_next(ring_[c]);
  }

  // Finish: void(int u, float (&acc)[T][kUnitRows]) with the lane-group sums of unit u (every lane holds
  // them); called by all lanes of the warp.
  template <class Finish>
  __device__ __forceinline__ void run(int nt, Finish finish) {
    constexpr int E = WeightTraits<F>::kElems;
    if (n_units_ <= 0) return;
    const int lane = threadIdx.x % 32;
    int cu = 0, cs = 0;
    DotUnit unit = unit_at_(0);
    int steps = unit_steps(unit);
    float acc[T][kUnitRows];
    zero(acc);
    while (cu < n_units_) {
#pragma unroll
      for (int c = 0; c < kRing; ++c) {
        if (cu < n_units_) {
          const int j = lane % unit.lpr + unit.lpr * cs;
          if (j < unit.chunks)
            accumulate_chunk<F, kUnitRows, T>(ring_[c], unit.act, unit.act_stride, j * E, nt, acc);
          load_next(ring_[c]);
          if (++cs == steps) {
#pragma unroll
            for (int t = 0; t < T; ++t)
#pragma unroll
              for (int r = 0; r < kUnitRows; ++r) acc[t][r] = lane_group_sum(acc[t][r], unit.lpr);
            finish(cu, acc);
            zero(acc);
            cs = 0;
            if (++cu < n_units_) {
              unit = unit_at_(cu);
              steps = unit_steps(unit);
            }
          }
        }
      }
    }
  }

 private:
  __device__ __forceinline__ static void zero(float (&acc)[T][kUnitRows]) {
#pragma unroll
    for (int t = 0; t < T; ++t)
#pragma unroll
      for (int r = 0; r < kUnitRows; ++r) acc[t][r] = 0.0f;
  }

  __device__ __forceinline__ void load_next(Chunk<F, kUnitRows>& c) {
    if (load_u_ >= n_units_) return;
    const int j = static_cast<int>(threadIdx.x % 32) % load_unit_.lpr + load_unit_.lpr * load_s_;
    load_chunk<F, kUnitRows>(c, load_unit_.rows, j, load_unit_.chunks, load_unit_.k_phase);
    if (++load_s_ == load_steps_) {
      load_s_ = 0;
      if (++load_u_ < n_units_) {
        load_unit_ = unit_at_(load_u_);
        load_steps_ = unit_steps(load_unit_);
      }
    }
  }

  UnitAt unit_at_;
  int n_units_;
  Chunk<F, kUnitRows> ring_[kRing];
  DotUnit load_unit_{};
  int load_u_ = 0, load_s_ = 0, load_steps_ = 1;
};

}  // namespace moe::cuda
