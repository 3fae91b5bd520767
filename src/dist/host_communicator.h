#pragma once
// In-process ranks: `size` communicators sharing one rendezvous, one per thread. For tests of the TP launch
// on a machine without GPUs, and for CPU ranks run in threads.
#include <memory>
#include <vector>

#include "dist/communicator.h"

namespace moe::dist {

// Communicator r is for rank r; each must be used by one thread only.
std::vector<std::unique_ptr<Communicator>> make_host_communicators(int size);

}  // namespace moe::dist
