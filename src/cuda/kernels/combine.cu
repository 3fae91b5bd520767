// The weighted combine: out[t] = sum over slots, in slot order, of weight * y[pair] (+ gate * shared expert),
// rounded to bf16 once. A fixed order and no atomics: the same bits on every run.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/kernels/launchers.h"

namespace moe::cuda {
namespace {

__global__ void combine_kernel(CombineArgs a) {
  const int t = blockIdx.x, K = a.top_k, H = a.hidden;
  const int* ids = a.topk_ids + static_cast<size_t>(t) * K;
  const float* w = a.topk_weights + static_cast<size_t>(t) * K;
  for (int h = threadIdx.x; h < H; h += blockDim.x) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      if (ids[k] < 0) continue;
      acc += w[k] * a.y[(static_cast<size_t>(t) * K + k) * H + h];
    }
    if (a.y_shared) acc += a.shared_gate[t] * a.y_shared[static_cast<size_t>(t) * H + h];
    a.out[static_cast<size_t>(t) * H + h] = f32_to_bf16(acc);
  }
}

}  // namespace

void launch_combine(const CombineArgs& a, int M, cudaStream_t stream) { combine_kernel<<<M, 256, 0, stream>>>(a); }

}  // namespace moe::cuda
