#pragma once
// A chat template compiled once and rendered per request, with Hugging Face transformers' Jinja settings:
// trim_blocks and lstrip_blocks on, autoescape off, loop controls (break/continue) on, `{% generation %}`
// accepted, `tojson` as transformers defines it, and the raise_exception / strftime_now globals.
//
// Context values are JSON. Pass nlohmann::ordered_json to keep object key order (tool schemas print and
// iterate in that order, as Python dicts do); nlohmann::json sorts keys.
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace moe::jinja {

struct Stmt;

struct RenderOptions {
  // What strftime_now() reports, read as UTC; unset = the local clock. Tests pin it.
  std::optional<std::time_t> now;
};

class Template {
 public:
  // Throws moe::InputError (a jinja::TemplateError) with line and column on a syntax error.
  static Template parse(std::string_view source);

  // Throws jinja::TemplateError on runtime errors and jinja::TemplateRaisedError when the template calls
  // raise_exception(); both are moe::InputError.
  std::string render(const nlohmann::ordered_json& context, const RenderOptions& options = {}) const;
  std::string render(const nlohmann::json& context, const RenderOptions& options = {}) const;

 private:
  struct Program;
  std::shared_ptr<const Program> program_;
};

}  // namespace moe::jinja
