#pragma once
// On/off switches read from the environment (measuring and debugging knobs such as MOE_FUSED=1): set and a
// non-zero integer means on. Callers that read a switch on a hot path keep the answer in a static.
#include <cstdlib>
#include <cstring>

namespace moe {

inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && std::atoi(v) != 0;
}

// A switch with a default that the environment overrides (read at the first get()): NAME=0 turns it off,
// any other value on; unset keeps the default. Code may set it (tests that compare both settings).
class EnvSwitch {
 public:
  explicit EnvSwitch(const char* name, bool default_on = true) : name_(name), default_on_(default_on) {}
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
      : name_(name), default_(default_value), lo_(lo), hi_(hi) {}
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
