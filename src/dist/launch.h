#pragma once
// The multi-rank launch: one thread per rank, each bound to its communicator (its GPU for NCCL), running the
// same function; the TP model backend's rank objects live inside `fn` (docs/tensor-parallel.md says what is
// left to plug in). Every rank must reach every collective: a rank that throws between collectives leaves the
// others waiting, so `fn` should validate before its first collective.
#include <functional>
#include <memory>
#include <vector>

#include "dist/communicator.h"

namespace moe::dist {

// Runs fn(comm) for every communicator on its own thread and joins them all; then rethrows the exception of
// the lowest rank that threw, if any.
void run_ranks(const std::vector<std::unique_ptr<Communicator>>& comms,
               const std::function<void(Communicator&)>& fn);

}  // namespace moe::dist
