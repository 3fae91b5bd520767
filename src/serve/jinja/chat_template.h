#pragma once
// transformers' tokenizer.apply_chat_template(..., tokenize=False) for one conversation: the template is
// rendered with messages, tools, add_generation_prompt, the special tokens and chat_template_kwargs
// (enable_thinking for Qwen3, thinking for DeepSeek-V3.1, reasoning_effort / model_identity for gpt-oss).
#include <string>

#include <nlohmann/json.hpp>

#include "serve/jinja/template.h"

namespace moe::jinja {

struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null when the request has no tools (the template sees None)
  bool add_generation_prompt = false;
  nlohmann::ordered_json extra_kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs
  std::string bos_token;
  std::string eos_token;
};

std::string apply_chat_template(const Template& tmpl, const ChatTemplateInputs& inputs,
                                const RenderOptions& options = {});

// Convenience form: parses the template on every call.
std::string apply_chat_template(const std::string& tmpl, const nlohmann::ordered_json& messages,
                                const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                const nlohmann::ordered_json& extra_kwargs, const std::string& bos_token,
                                const std::string& eos_token);

}  // namespace moe::jinja
