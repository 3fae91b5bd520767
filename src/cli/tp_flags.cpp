#include "cli/tp_flags.h"

#include "core/error.h"
#include "model/tp_plan.h"

namespace moe::cli {

std::set<std::string> with_tp_options(std::set<std::string> options) {
  options.insert({"tp", "moe-parallel", "tp-comm"});
  return options;
}

void read_tp_flags(const Args& a, model::BackendOptions& opts) {
  opts.tp_size = static_cast<int>(a.integer("tp", 1));
  require_input(opts.tp_size >= 1, "--tp must be >= 1");
  opts.expert_parallel = model::parse_moe_parallel(a.str("moe-parallel", "tp")) == model::MoeParallel::Expert;
  opts.tp_comm = a.str("tp-comm", "auto");
  model::require_known_tp_comm(opts.tp_comm);
}

}  // namespace moe::cli
