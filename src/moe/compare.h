#pragma once
// The comparison `moe check` prints: relative L2 error and largest absolute difference, NaN-aware.
#include <cstdint>
#include <string>

namespace moe {

struct Comparison {
  double rel_l2 = 0;
  double max_abs = 0;
  int64_t non_finite = 0;  // NaN or inf in the output under test: always a failure
  bool passed(double tol) const { return non_finite == 0 && rel_l2 <= tol; }
};

Comparison compare(const float* got, const float* want, int64_t n);
// "rel_l2=<e> max_abs=<e> tol=<t> PASS|FAIL" (FORMATS.md section 5).
std::string verdict_line(const Comparison& c, double tol);

}  // namespace moe
