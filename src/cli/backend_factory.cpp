#include "core/error.h"
#include "layout/backend.h"

namespace moe {

std::unique_ptr<MoeBackend> make_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda") return make_cuda_backend();
  fail_input("unknown backend '", name, "' (cpu or cuda)");
}

}  // namespace moe
