#include "serve/http/chat_prompt.h"

#include "core/error.h"
#include "serve/http/api_error.h"
#include "serve/jinja/chat_template.h"

namespace moe::serve::http {

ChatPrompt::ChatPrompt(const std::string& template_source, std::string bos_token, std::string eos_token)
    : bos_(std::move(bos_token)), eos_(std::move(eos_token)) {
  if (template_source.empty()) return;
  template_ = jinja::Template::parse(template_source);
  uses_think_ = template_source.find("<think>") != std::string::npos;
}

Json normalize_messages(const Json& messages) {
  if (!messages.is_array() || messages.empty())
    throw_bad_request("'messages' must be a non-empty list", "messages");
  Json out = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string where = str("messages[", i, "]");
    if (!m.is_object()) throw_bad_request(where + " must be an object", "messages");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      throw_bad_request(where + ".role must be a string", "messages");
    Json msg = m;
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      msg["content"] = "";
    } else if (content->is_array()) {
      std::string text;
      for (const auto& part : *content) {
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
          throw_bad_request(where + ".content parts must be objects with a 'type'", "messages");
        if (part["type"] != "text")
          throw_bad_request(str(where, ".content: part type '", part["type"].get<std::string>(),
                                "' is not supported by this text-only model"),
                            "messages");
        if (!part.contains("text") || !part["text"].is_string())
          throw_bad_request(where + ".content text part needs a string 'text'", "messages");
        text += part["text"].get<std::string>();
      }
      msg["content"] = text;
    } else if (!content->is_string()) {
      throw_bad_request(where + ".content must be a string or a list of content parts", "messages");
    }
    out.push_back(std::move(msg));
  }
  return out;
}

std::string ChatPrompt::render(const Json& body) const {
  if (!template_)
    throw_bad_request("this model has no chat template; use /v1/completions or --chat-template");
  jinja::ChatTemplateInputs in;
  in.messages = normalize_messages(body.contains("messages") ? body["messages"] : Json());
  if (body.contains("tools") && !body["tools"].is_null()) {
    if (!body["tools"].is_array()) throw_bad_request("'tools' must be a list", "tools");
    in.tools = body["tools"];
  }
  if (body.contains("chat_template_kwargs") && !body["chat_template_kwargs"].is_null()) {
    if (!body["chat_template_kwargs"].is_object())
      throw_bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    in.extra_kwargs = body["chat_template_kwargs"];
  }
  in.add_generation_prompt = opt_bool(body, "add_generation_prompt").value_or(true);
  in.bos_token = bos_;
  in.eos_token = eos_;
  try {
    return jinja::apply_chat_template(*template_, in);
  } catch (const InputError& e) {
    throw_bad_request(str("chat template: ", e.what()), "messages");
  }
}

}  // namespace moe::serve::http
