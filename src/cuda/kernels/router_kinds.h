#pragma once
// The router kind as a template argument where a kernel's routing runs right after its programmatic wait:
// with the kind a parameter, warp_route chose its path by a jump table in constant bank 2, one more cold
// constant read (and an indirect branch to cold code) between the wait and the routing. SoftmaxTopk (Qwen3,
// Mixtral, OLMoE) gets its own instantiation; the other kinds share one that reads the kind at run time.
#include <type_traits>

#include "cuda/moe_params.h"

namespace moe::cuda {

constexpr int kAnyRouter = -1;  // warp_route reads RouterParams::kind

// f(std::integral_constant<int, K>) with K the kind, or kAnyRouter for a kind without its own code.
template <typename F>
void with_router_kind(Router kind, F&& f) {
  if (kind == Router::SoftmaxTopk)
    f(std::integral_constant<int, static_cast<int>(Router::SoftmaxTopk)>{});
  else
    f(std::integral_constant<int, kAnyRouter>{});
}

}  // namespace moe::cuda
