#pragma once
// Random case generation for the project's own tests and `moe gen-case`: weights drawn at random, quantised
// to the requested format, the expected output computed by the CPU reference.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "moe/moe_config.h"

namespace moe {

struct CaseSpec {
  MoeConfig config;
  int64_t M = 1, E = 8, H = 256, I = 128;
  int64_t shared_inter = 0;  // 0 = no shared expert
  bool shared_gate = true;   // Qwen-style sigmoid gate; false = DeepSeek-style (gate 1)
  uint64_t seed = 1;
  double tolerance = -1;  // < 0: a default for the format and activation quantisation
  bool compute_expected = true;
};

struct GeneratedCase {
  std::map<std::string, std::string> metadata;
  std::shared_ptr<std::map<std::string, Tensor>> tensors;
};

double default_tolerance(const MoeConfig& cfg);
GeneratedCase generate_case(const CaseSpec& spec);
void write_case_file(const std::string& path, const GeneratedCase& c);

// Fills `out` with deterministic pseudo-normal values (splitmix64 + Box-Muller) scaled by `stddev`.
void fill_normal(float* out, int64_t n, uint64_t seed, float stddev);

}  // namespace moe
