#pragma once
// The router kind as a template argument where a kernel's routing runs right after its programmatic wait:
// with the kind a parameter, warp_route chose its path by a jump table in constant bank 2, one more cold
// constant read (and an indirect branch to cold code) between the wait and the routing. SoftmaxTopk (Qwen3,
// Mixtral, OLMoE) and SigmoidGrouped (DeepSeek-V3) get their own instantiations; the other kinds share one
// that reads the kind at run time. (DeepSeek's one-block prologue at one token spent ~38 us on its routing
// warp's ~1.6k distinct instructions, each run once: its own instantiation carries none of the other kinds'
// branches on that path.)
#include <type_traits>

#include "cuda/moe_params.h"

namespace moe::cuda {

constexpr int kAnyRouter = -1;  // warp_route reads RouterParams::kind

// f(std::integral_constant<int, K>) with K the kind, or kAnyRouter for a kind without its own code.
template <typename F>
void with_router_kind(Router kind, F&& f) {
  if (kind == Router::SoftmaxTopk)
    f(std::integral_constant<int, static_cast<int>(Router::SoftmaxTopk)>{});
  else if (kind == Router::SigmoidGrouped)
    f(std::integral_constant<int, static_cast<int>(Router::SigmoidGrouped)>{});
  else
    f(std::integral_constant<int, kAnyRouter>{});
}

}  // namespace moe::cuda
