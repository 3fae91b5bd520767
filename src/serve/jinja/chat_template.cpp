#include "serve/jinja/chat_template.h"

#include "core/error.h"

namespace moe::jinja {

std::string apply_chat_template(const Template& tmpl, const ChatTemplateInputs& inputs,
                                const RenderOptions& options) {
  require_input(inputs.messages.is_array(), "chat template: messages must be a JSON array");
  require_input(inputs.extra_kwargs.is_null() || inputs.extra_kwargs.is_object(),
                "chat template: chat_template_kwargs must be a JSON object");
  // Same keys, same precedence as transformers: special tokens, then the caller's kwargs, may be overridden
  // by nothing but themselves; messages/tools/documents/add_generation_prompt are set explicitly.
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["bos_token"] = inputs.bos_token;
  context["eos_token"] = inputs.eos_token;
  if (inputs.extra_kwargs.is_object()) {
    for (const auto& [k, v] : inputs.extra_kwargs.items()) context[k] = v;
  }
  context["messages"] = inputs.messages;
  context["tools"] = inputs.tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = inputs.add_generation_prompt;
  return tmpl.render(context, options);
}

std::string apply_chat_template(const std::string& tmpl, const nlohmann::ordered_json& messages,
                                const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                const nlohmann::ordered_json& extra_kwargs, const std::string& bos_token,
                                const std::string& eos_token) {
  ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.tools = tools;
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.extra_kwargs = extra_kwargs.is_null() ? nlohmann::ordered_json::object() : extra_kwargs;
  inputs.bos_token = bos_token;
  inputs.eos_token = eos_token;
  return apply_chat_template(Template::parse(tmpl), inputs);
}

}  // namespace moe::jinja
