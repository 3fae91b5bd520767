#pragma once
// Tuned kernel configurations, keyed by the layout plan's tuned_config_key (E, per-rank padded inter_dim, H,
// top_k, format). A lookup that finds nothing falls back to the kernels' built-in heuristics, and says so:
// once per key in the log, and in a counter that `/metrics` and `moe inspect` report (BACKGROUND.md section
// 2: 112 of 112 lookups silently fell back).
#include <cstdint>
#include <optional>
#include <string>

namespace moe {

struct TunedConfig {
  int stage1_lanes_per_row = 0;  // 0: heuristic
  int stage2_lanes_per_row = 0;
  const char* measured_on = "";  // GPU and date of the measurement behind the entry
};

std::optional<TunedConfig> find_tuned_config(const std::string& key);

// Looks up `key`; on a miss logs one line per key (stderr) and counts the fallback.
TunedConfig tuned_config_or_default(const std::string& key);
int64_t tuned_config_fallbacks();

}  // namespace moe
