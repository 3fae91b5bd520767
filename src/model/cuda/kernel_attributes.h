#pragma once
// A kernel's dynamic shared-memory limit, raised once per (kernel, device). Function attributes belong to a
// device, and tensor-parallel ranks drive several GPUs from their own threads, so a process-wide "done" flag
// would leave every GPU but the first without it (and race between the rank threads). Host code.
#include <cstddef>

namespace moe::model::gpu {

// Dynamic shared memory the decode GEMVs let a block have: Hopper's 227 KB per block less 1 KB for their
// static arrays (fp8_gemv_compact.cu, fp8_gemv_mma.cu).
constexpr size_t kGemvSmemPerBlock = 226 * 1024;

// On the calling thread's current device; the first call for a kernel there runs cudaFuncSetAttribute (the
// first step of every shape runs eagerly, so this is never first inside a graph capture).
void allow_dynamic_smem(const void* kernel, int bytes);

}  // namespace moe::model::gpu
