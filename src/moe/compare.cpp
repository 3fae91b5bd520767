#include "moe/compare.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace moe {

Comparison compare(const float* got, const float* want, int64_t n) {
  Comparison c;
  double diff2 = 0, ref2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) {
      ++c.non_finite;
      continue;
    }
    const double d = static_cast<double>(got[i]) - want[i];
    diff2 += d * d;
    ref2 += static_cast<double>(want[i]) * want[i];
    c.max_abs = std::max(c.max_abs, std::fabs(d));
  }
  if (c.non_finite) {
    c.rel_l2 = std::numeric_limits<double>::quiet_NaN();
    c.max_abs = std::numeric_limits<double>::quiet_NaN();
  } else {
    c.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  }
  return c;
}

std::string verdict_line(const Comparison& c, double tol) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "rel_l2=%.4e max_abs=%.4e tol=%g %s", c.rel_l2, c.max_abs, tol,
                c.passed(tol) ? "PASS" : "FAIL");
  return buf;
}

}  // namespace moe
