#include "moe/tuned_config.h"

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>

namespace moe {
namespace {

// Entries come from `moe bench` sweeps on real hardware; none is recorded yet, so every lookup falls back to
// the heuristic tile choice (src/cuda/kernels/expert_gemv.cu: choose_tile) and is counted.
const std::map<std::string, TunedConfig>& table() {
  static const std::map<std::string, TunedConfig> t = {};
  return t;
}

std::atomic<int64_t> g_fallbacks{0};

}  // namespace

std::optional<TunedConfig> find_tuned_config(const std::string& key) {
  const auto it = table().find(key);
  if (it == table().end()) return std::nullopt;
  return it->second;
}

TunedConfig tuned_config_or_default(const std::string& key) {
  if (auto c = find_tuned_config(key)) return *c;
  ++g_fallbacks;
  static std::mutex mu;
  static std::set<std::string> logged;
  std::lock_guard<std::mutex> lock(mu);
  if (logged.insert(key).second)
    std::fprintf(stderr, "moe: no tuned config for %s; using the default heuristics\n", key.c_str());
  return {};
}

int64_t tuned_config_fallbacks() {
  return g_fallbacks.load();
}

}  // namespace moe
