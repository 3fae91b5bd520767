#pragma once
// Python's json.dumps as HF's `tojson` filter calls it, so tool schemas print byte-for-byte like
// transformers.
#include <optional>
#include <string>

#include "serve/jinja/value.h"

namespace moe::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<int> indent;
  std::optional<std::string> item_separator;  // default ", " (or "," with indent)
  std::optional<std::string> key_separator;   // default ": "
  bool sort_keys = false;
};

std::string json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace moe::jinja
