// libFuzzer target: arbitrary bytes through the safetensors parser and, when the header parses, through the
// case-file loader and (for small cases) the CPU reference. Any crash, sanitizer report or exception other
// than moe::Error is a bug: bad input must be refused with a message, never crash.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "io/tensor_source.h"
#include "moe/case_file.h"
#include "moe/reference.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A private copy: the reader may hand out views, and libFuzzer's buffer is only valid during the call.
  std::vector<uint8_t> bytes(data, data + size);
  try {
    auto file = moe::SafetensorsFile::parse(bytes.data(), bytes.size(), "fuzz");
    for (const auto& e : file->entries()) (void)file->view(e.name);
    moe::SafetensorsSource src(file);
    moe::MoeCase c = moe::build_case(file->metadata(), src);
    // Bounded work so one input cannot stall the run.
    const int64_t work = c.M * c.config.router.top_k * 3 * c.weights.hidden * c.weights.inter;
    if (work > 0 && work < (int64_t{1} << 22)) {
      std::vector<float> out(static_cast<size_t>(c.M * c.weights.hidden));
      moe::reference_moe(c.config, c.weights, c.x.as<float>(), c.router_logits.as<float>(), c.M, out.data());
    }
  } catch (const moe::Error&) {
  }
  return 0;
}
