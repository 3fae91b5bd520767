#pragma once
// Deterministic random device data for benchmarks: weights that look like real ones (finite, varied), made on
// the GPU so a 48-layer or 8-copy benchmark needs no host data.
#include <cstddef>
#include <cstdint>

namespace moe::cuda {

enum class RandomKind {
  Bf16,       // bf16 values, roughly N(0, 0.05)
  Fp8,        // e4m3 codes, never NaN
  Bytes,      // any byte (packed e2m1)
  Fp32Scale,  // fp32 in [1e-4, 2e-4]
  E8m0Scale,  // e8m0 codes 118..122
  Fp32Small,  // fp32 in [-0.05, 0.05]
  Fp32Logit,  // fp32 in [-4, 4]
};

// Synchronous with the default stream's work order (launched on stream 0).
void fill_random(void* dst, size_t bytes, RandomKind kind, uint64_t seed);

}  // namespace moe::cuda
