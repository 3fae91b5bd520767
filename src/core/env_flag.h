#pragma once
// On/off switches read from the environment (measuring and debugging knobs such as MOE_FUSED=1): set and a
// non-zero integer means on. Callers that read a switch on a hot path keep the answer in a static.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace moe {

namespace env_detail {
// Every EnvSwitch and EnvCount of the process, with how to make it read the environment again.
struct Registered {
  void* setting;
  void (*forget)(void*);
};
inline std::vector<Registered>& registry() {
  static std::vector<Registered> all;
  return all;
}
inline void unregister(void* setting) {
  std::vector<Registered>& all = registry();
  all.erase(std::remove_if(all.begin(), all.end(), [&](const Registered& r) { return r.setting == setting; }),
            all.end());
}
}  // namespace env_detail

// Has every EnvSwitch and EnvCount read the environment again at its next get(), dropping what set() gave
// it: for a measuring tool that changes the environment between runs in one process (moe bench --env-ab).
// Code that keeps a setting's answer in a static of its own does not see the change.
inline void reread_env_settings() {
  for (const env_detail::Registered& r : env_detail::registry()) r.forget(r.setting);
}

inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && std::atoi(v) != 0;
}

// A switch with a default that the environment overrides (read at the first get()): NAME=0 turns it off,
// any other value on; unset keeps the default. Code may set it (tests that compare both settings).
class EnvSwitch {
 public:
  explicit EnvSwitch(const char* name, bool default_on = true) : name_(name), default_on_(default_on) {
    env_detail::registry().push_back({this, [](void* s) { static_cast<EnvSwitch*>(s)->state_ = -1; }});
  }
  ~EnvSwitch() { env_detail::unregister(this); }
  EnvSwitch(const EnvSwitch&) = delete;  // registered by address
  EnvSwitch& operator=(const EnvSwitch&) = delete;
  bool get() {
    if (state_ < 0) {
      const char* v = std::getenv(name_);
      state_ = !v ? (default_on_ ? 1 : 0) : std::strcmp(v, "0") == 0 ? 0 : 1;
    }
    return state_ == 1;
  }
  void set(bool on) { state_ = on ? 1 : 0; }

 private:
  const char* name_;
  bool default_on_;
  int state_ = -1;  // -1: not read yet
};

// A small count with a default that the environment overrides (read at the first get(); values outside
// [lo, hi] are clamped into it). Code may set it (tests that compare settings).
class EnvCount {
 public:
  EnvCount(const char* name, int default_value, int lo, int hi)
      : name_(name), default_(default_value), lo_(lo), hi_(hi) {
    env_detail::registry().push_back({this, [](void* s) { static_cast<EnvCount*>(s)->read_ = false; }});
  }
  ~EnvCount() { env_detail::unregister(this); }
  EnvCount(const EnvCount&) = delete;  // registered by address
  EnvCount& operator=(const EnvCount&) = delete;
  int get() {
    if (!read_) {
      const char* v = std::getenv(name_);
      value_ = clamp(v ? std::atoi(v) : default_);
      read_ = true;
    }
    return value_;
  }
  void set(int v) {
    value_ = clamp(v);
    read_ = true;
  }

 private:
  int clamp(int v) const { return v < lo_ ? lo_ : v > hi_ ? hi_ : v; }
  const char* name_;
  int default_, lo_, hi_;
  int value_ = 0;
  bool read_ = false;
};

}  // namespace moe
