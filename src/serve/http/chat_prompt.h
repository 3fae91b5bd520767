#pragma once
// OpenAI `messages` (+ tools, chat_template_kwargs) -> the prompt text, through the checkpoint's chat
// template (or --chat-template). Content given as a list of parts is flattened to its text parts, as sglang
// does for text-only models.
#include <optional>
#include <string>

#include "serve/http/json_fields.h"
#include "serve/jinja/template.h"

namespace moe::serve::http {

class ChatPrompt {
 public:
  // An empty `template_source` means the model has none: chat requests are then a 400.
  ChatPrompt(const std::string& template_source, std::string bos_token, std::string eos_token);

  // Renders the request's messages with add_generation_prompt; 400 on malformed messages or when the template
  // raises (e.g. roles that do not alternate).
  std::string render(const Json& body) const;
  // Whether the template knows Qwen3-style <think> blocks (then replies are split into reasoning_content).
  bool uses_think_tags() const { return uses_think_; }

 private:
  std::optional<jinja::Template> template_;
  std::string bos_, eos_;
  bool uses_think_ = false;
};

// Messages with list-of-parts content flattened to strings; 400 naming the message on a malformed one.
Json normalize_messages(const Json& messages);

}  // namespace moe::serve::http
