#pragma once
// GPU ranks whose all-reduce goes through host memory: each rank copies its device buffer to the host, the
// ranks sum in rank order as the host communicator does (fp32, bf16 rounded once), and each copies the sum
// back. Several ranks may share one GPU, so tensor parallelism runs, and is checked, on a machine with fewer
// GPUs than ranks (or without NCCL). Every call waits on the host: not capturable in a CUDA graph, and slow;
// a check mode, not a serving one. CUDA builds only.
#include <memory>
#include <vector>

#include "dist/communicator.h"

namespace moe::dist {

// Communicator r drives devices[r] (entries may repeat); each must be used by one thread only.
std::vector<std::unique_ptr<Communicator>> make_staged_communicators(const std::vector<int>& devices);

}  // namespace moe::dist
