// moe check: runs a case file on a backend and prints `rel_l2=<e> max_abs=<e> tol=<t> PASS|FAIL`.
// Exit 0 pass, 1 fail, 2 a file or option it cannot use.
#include <chrono>
#include <cstdio>
#include <set>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "layout/backend.h"
#include "layout/tp_runner.h"
#include "moe/compare.h"
#include "moe/reference.h"

namespace moe::cli {
namespace {

// Routing diagnostics on stderr: how many tokens chose a different expert set than the file says.
void report_routing(const MoeCase& c) {
  if (!c.expected_topk_ids) return;
  Routing r = route_tokens(c.config, c.weights, c.router_logits.as<float>(), c.M);
  const int K = c.config.router.top_k;
  int64_t differ = 0;
  for (int64_t t = 0; t < c.M; ++t) {
    std::set<int32_t> a(r.ids.begin() + t * K, r.ids.begin() + (t + 1) * K);
    std::set<int32_t> b;
    for (int64_t i = t * K; i < (t + 1) * K; ++i)
      b.insert(c.expected_topk_ids->dtype == DType::I64
                   ? static_cast<int32_t>(c.expected_topk_ids->as<int64_t>()[i])
                   : c.expected_topk_ids->as<int32_t>()[i]);
    differ += a != b;
  }
  if (differ)
    std::fprintf(stderr, "moe check: routing differs from expected.topk_ids on %ld of %ld tokens\n",
                 static_cast<long>(differ), static_cast<long>(c.M));
}

// With fp8 1x128 activations, a TP rank whose slice of an intermediate dim is not a whole number of 128-wide
// groups quantises the pieces of a split group separately (as sglang and vLLM do): a slightly different
// function from the unsharded one the case's tolerance describes. Such runs are held to the stated TP
// allowance instead (docs/tensor-parallel.md: measured 1.5-2.5e-2), and the check says so.
constexpr double kFp8SplitGroupTolerance = 3e-2;

double tolerance_for(const MoeCase& c, int64_t tp) {
  if (tp == 1 || c.config.act_quant != ActQuant::Fp8_1x128) return c.tolerance;
  const auto splits = [tp](int64_t inter) { return (inter / tp) % 128 != 0; };
  const bool split = splits(c.weights.inter) || (c.weights.shared && splits(c.weights.shared->down.cols));
  if (!split || c.tolerance >= kFp8SplitGroupTolerance) return c.tolerance;
  std::fprintf(stderr,
               "moe check: tp=%ld splits fp8 activation groups across ranks (each rank quantises its piece): "
               "tolerance %g instead of the case's %g\n",
               static_cast<long>(tp), kFp8SplitGroupTolerance, c.tolerance);
  return kFp8SplitGroupTolerance;
}

}  // namespace

int cmd_check(int argc, char** argv) {
  try {
    Args a(argc, argv, {"case", "backend", "tp", "ep"}, {"poison", "verbose"});
    const std::string path = a.required("case");
    const int64_t tp = a.integer("tp", 1);
    require_input(tp >= 1 && tp <= 64, "--tp must be in [1, 64], got ", tp);
    MoeCase c = load_case(path);
    std::unique_ptr<MoeBackend> backend = make_backend(a.str("backend", "cpu"));
    if (a.flag("verbose")) report_routing(c);
    std::vector<float> out(static_cast<size_t>(c.M * c.weights.hidden));
    const auto t0 = std::chrono::steady_clock::now();
    run_tensor_parallel(c, static_cast<int>(tp), *backend, a.flag("poison"), out.data());
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const Comparison cmp = compare(out.data(), c.expected_out.as<float>(), static_cast<int64_t>(out.size()));
    if (a.flag("verbose"))
      std::fprintf(stderr, "moe check: %s backend=%s tp=%ld M=%ld E=%ld H=%ld I=%ld: %.1f ms\n",
                   describe(c.config).c_str(), backend->name().c_str(), static_cast<long>(tp),
                   static_cast<long>(c.M), static_cast<long>(c.weights.num_experts),
                   static_cast<long>(c.weights.hidden), static_cast<long>(c.weights.inter), ms);
    const double tol = tolerance_for(c, tp);
    std::printf("%s\n", verdict_line(cmp, tol).c_str());
    if (!cmp.passed(tol)) report_routing(c);
    return cmp.passed(tol) ? 0 : 1;
  } catch (const InputError& e) {
    std::fprintf(stderr, "moe check: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moe check: error: %s\n", e.what());
    return 2;
  }
}

}  // namespace moe::cli
