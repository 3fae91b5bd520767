#include "serve/http/reasoning_splitter.h"

#include <algorithm>
#include <string_view>

namespace moe::serve::http {

namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

// Length of the longest suffix of `s` that is a proper prefix of `tag` (it may become the tag).
size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace

SplitText ReasoningSplitter::push(const std::string& text) {
  held_ += text;
  SplitText out;
  for (;;) {
    if (state_ == State::Start) {
      const size_t ws = held_.find_first_not_of(" \t\r\n");
      if (ws == std::string::npos) return out;  // only whitespace yet
      std::string_view rest(held_.data() + ws, held_.size() - ws);
      if (rest.substr(0, kOpen.size()) == kOpen) {
        held_.erase(0, ws + kOpen.size());
        state_ = State::Reasoning;
        continue;
      }
      if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return out;  // maybe "<thi"
      state_ = State::Content;
      continue;
    }
    if (state_ == State::Reasoning) {
      const size_t end = held_.find(kClose);
      if (end != std::string::npos) {
        out.reasoning += held_.substr(0, end);
        held_.erase(0, end + kClose.size());
        state_ = State::AfterThink;
        continue;
      }
      const size_t keep = partial_tag_suffix(held_, kClose);
      out.reasoning += held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    if (state_ == State::AfterThink) {
      const size_t ws = held_.find_first_not_of(" \t\r\n");
      if (ws == std::string::npos) {
        held_.clear();
        return out;
      }
      held_.erase(0, ws);
      state_ = State::Content;
      continue;
    }
    out.content += held_;
    held_.clear();
    return out;
  }
}

SplitText ReasoningSplitter::finish() {
  SplitText out;
  if (state_ == State::Reasoning)
    out.reasoning = held_;
  else if (state_ != State::AfterThink)
    out.content = held_;
  held_.clear();
  return out;
}

}  // namespace moe::serve::http
