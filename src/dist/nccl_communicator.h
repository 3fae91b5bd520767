#pragma once
// NCCL communicators (CUDA builds with NCCL only; MOE_HAVE_NCCL is defined where this exists). Both
// constructors set NCCL_NVLS_ENABLE=0 before NCCL initialises: NVLink multicast (NVLS) must stay off on the
// machines we run on.
#include <array>
#include <memory>
#include <vector>

#include "dist/communicator.h"

namespace moe::dist {

// One process, one thread per GPU: communicator r drives devices[r] (ncclCommInitAll).
std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<int>& devices);

// One process per GPU: rank 0 calls nccl_unique_id() and hands the bytes to every rank out of band; each rank
// then calls make_nccl_communicator (ncclGetUniqueId + ncclCommInitRank).
using NcclId = std::array<char, 128>;
NcclId nccl_unique_id();
std::unique_ptr<Communicator> make_nccl_communicator(int rank, int size, int device, const NcclId& id);

}  // namespace moe::dist
