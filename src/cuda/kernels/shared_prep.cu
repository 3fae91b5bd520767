// The shared expert's early inputs (shared_prep.h): one block, warp w quantises token rows w, w + 8, ...
#include "cuda/kernels/shared_prep.h"

#include "core/error.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

namespace moe::cuda {
namespace {

constexpr int kPrepThreads = 256;

__global__ void __launch_bounds__(kPrepThreads) shared_prep_kernel(SharedPrepArgs a) {
  pdl_wait();  // x comes from the previous kernel (a norm)
  // The shared expert's stage 1 may launch now and stage its first weights; it waits for this grid.
  pdl_trigger();
  const int warp = static_cast<int>(threadIdx.x / 32), warps = kPrepThreads / 32;
  if (a.x_codes) {
    const int groups = (a.hidden + 127) / 128;
    for (int t = warp; t < a.M; t += warps)
      warp_fp8_row(a.x + static_cast<size_t>(t) * a.hidden, a.hidden, 0, groups,
                   a.x_codes + static_cast<size_t>(t) * a.hidden,
                   a.x_scales + static_cast<size_t>(t) * groups);
  }
  for (int t = static_cast<int>(threadIdx.x); t < a.M; t += kPrepThreads) a.pairs[t] = t;
  if (threadIdx.x == 0) {
    a.offsets[0] = 0;
    a.offsets[1] = a.M;
    a.active[0] = 0;
    a.num_active[0] = 1;
  }
}

}  // namespace

void launch_shared_prep(const SharedPrepArgs& a, cudaStream_t stream) {
  require(a.M >= 1 && a.M <= kSharedPrepMaxTokens, "shared_prep: ", a.M, " tokens outside [1, ",
          kSharedPrepMaxTokens, "]");
  require(!a.x_codes || (a.hidden % 8 == 0 && reinterpret_cast<uintptr_t>(a.x) % 16 == 0),
          "shared_prep: fp8 rows need hidden % 8 == 0 (", a.hidden, ") and 16-byte aligned x");
  launch_overlapped(shared_prep_kernel, dim3(1), dim3(kPrepThreads), 0, stream, a);
}

}  // namespace moe::cuda
