#pragma once
// Splits Qwen3-style output "<think>reasoning</think>answer" into reasoning_content and content, chunk by
// chunk for streaming: a tag split over two chunks is held back until it is complete, so no chunk ever shows
// part of a tag. Whitespace between </think> and the answer is dropped, as sglang's qwen3 parser does.
#include <string>

namespace moe::serve::http {

struct SplitText {
  std::string reasoning, content;
};

class ReasoningSplitter {
 public:
  // `in_reasoning`: the prompt already opened a <think> block (templates that force thinking).
  explicit ReasoningSplitter(bool in_reasoning = false)
      : state_(in_reasoning ? State::Reasoning : State::Start) {}

  SplitText push(const std::string& text);
  // End of output: whatever was held back.
  SplitText finish();

 private:
  enum class State { Start, Reasoning, AfterThink, Content };
  State state_;
  std::string held_;
};

}  // namespace moe::serve::http
