#include "serve/jinja/template.h"

#include "core/error.h"
#include "serve/jinja/builtins.h"
#include "serve/jinja/errors.h"
#include "serve/jinja/interpreter.h"
#include "serve/jinja/parser.h"

namespace moe::jinja {

struct Template::Program {
  Body body;
};

Template Template::parse(std::string_view source) {
  Template t;
  auto program = std::make_shared<Program>();
  try {
    program->body = parse_template(source);
  } catch (const TemplateError&) {
    throw;
  } catch (const Error& e) {
    throw TemplateError(e.what());
  }
  t.program_ = std::move(program);
  return t;
}

std::string Template::render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
  require_input(context.is_object(), "jinja: the render context must be a JSON object");
  Scope globals(nullptr);
  for (auto& [name, fn] : make_globals(options.now).entries) globals.set(name.as_string(), fn);
  Scope root(&globals);
  for (const auto& [name, value] : context.items()) root.set(name, Value::from_json(value));
  std::string out;
  Interpreter(root).run(program_->body, out);
  return out;
}

std::string Template::render(const nlohmann::json& context, const RenderOptions& options) const {
  return render(nlohmann::ordered_json::parse(context.dump()), options);
}

}  // namespace moe::jinja
