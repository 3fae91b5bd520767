#pragma once
// Turns one choice's generated ids into streamed text and finds stop strings in it. Text is released only
// when it can no longer be part of a stop string: the longest tail of the unreleased text that is the start
// of some stop string is held back until the next token decides. A stop string split over several tokens is
// therefore found, and neither it nor anything after it is ever released.
#include <cstdint>
#include <string>
#include <vector>

#include "serve/tokenizer/incremental_detokenizer.h"

namespace moe::serve {

class StopTextFilter {
 public:
  StopTextFilter(const tok::Tokenizer& tokenizer, bool skip_special, std::vector<std::string> stop);

  // Adds one token's text; returns what may be released now. Sets stopped() when a stop string appeared.
  std::string push(int32_t id);
  // End of generation (not by a stop string): everything still held back.
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::string release(std::string text_end);
  tok::IncrementalDetokenizer detok_;
  std::vector<std::string> stop_;
  std::string held_;
  bool stopped_ = false;
};

// Length of the longest suffix of `text` that is a proper prefix of one of `stops`.
size_t stop_prefix_suffix(const std::string& text, const std::vector<std::string>& stops);

}  // namespace moe::serve
