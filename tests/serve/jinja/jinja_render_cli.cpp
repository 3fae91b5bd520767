// Test driver for compare_with_jinja2.py: reads a JSON array of cases {template, context, now?} on stdin and
// prints a JSON array of results, {"output": text} or {"error": message, "raised": bool} (raised = the
// template called raise_exception). One process for all cases keeps the comparison fast.
#include <iostream>
#include <iterator>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/jinja/errors.h"
#include "serve/jinja/template.h"

int main() {
  using nlohmann::ordered_json;
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  ordered_json cases;
  try {
    cases = ordered_json::parse(input);
  } catch (const std::exception& e) {
    std::cerr << "jinja_render_cli: bad JSON on stdin: " << e.what() << "\n";
    return 2;
  }
  ordered_json results = ordered_json::array();
  std::map<std::string, moe::jinja::Template> parsed;  // the real templates repeat across cases
  for (const auto& c : cases) {
    ordered_json result = ordered_json::object();
    try {
      moe::jinja::RenderOptions options;
      if (c.contains("now")) options.now = c["now"].get<std::time_t>();
      const std::string source = c["template"].get<std::string>();
      auto it = parsed.find(source);
      if (it == parsed.end()) it = parsed.emplace(source, moe::jinja::Template::parse(source)).first;
      result["output"] = it->second.render(c.value("context", ordered_json::object()), options);
    } catch (const moe::jinja::TemplateRaisedError& e) {
      result["error"] = e.what();
      result["raised"] = true;
    } catch (const std::exception& e) {
      result["error"] = e.what();
      result["raised"] = false;
    }
    results.push_back(std::move(result));
  }
  // Invalid UTF-8 would make dump() throw; templates only ever produce what they were given.
  std::cout << results.dump(-1, ' ', false, ordered_json::error_handler_t::replace) << "\n";
  return 0;
}
