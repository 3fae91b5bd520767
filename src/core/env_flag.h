#pragma once
// On/off switches read from the environment (measuring and debugging knobs such as MOE_FUSED=1): set and a
// non-zero integer means on. Callers that read a switch on a hot path keep the answer in a static.
#include <cstdlib>

namespace moe {

inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && std::atoi(v) != 0;
}

}  // namespace moe
