#pragma once
// The tensor-parallel flags that moe logits, run and serve share: --tp N, --moe-parallel tp|ep and
// --tp-comm auto|nccl|host (docs/tensor-parallel.md).
#include <set>
#include <string>

#include "cli/args.h"
#include "model/backend.h"

namespace moe::cli {

// `options` plus the tensor-parallel ones, for Args.
std::set<std::string> with_tp_options(std::set<std::string> options);

// Reads the flags into opts' tp_size, expert_parallel and tp_comm; InputError for a bad value.
void read_tp_flags(const Args& a, model::BackendOptions& opts);

}  // namespace moe::cli
