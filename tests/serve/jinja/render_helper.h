#pragma once
// render("{{ x }}", R"({"x": 1})"): parse and render in one call, for hand-written expectations.
#include <string>

#include <nlohmann/json.hpp>

#include "serve/jinja/template.h"

namespace moe::jinja::testing {

inline std::string render(const std::string& source, const std::string& context_json = "{}") {
  RenderOptions options;
  options.now = 1754560800;  // 2025-08-07 10:00:00 UTC
  return Template::parse(source).render(nlohmann::ordered_json::parse(context_json), options);
}

}  // namespace moe::jinja::testing
