#include "serve/engine/stop_text.h"

#include <algorithm>

namespace moe::serve {

StopTextFilter::StopTextFilter(const tok::Tokenizer& tokenizer, bool skip_special,
                               std::vector<std::string> stop)
    : detok_(tokenizer, skip_special), stop_(std::move(stop)) {}

size_t stop_prefix_suffix(const std::string& text, const std::vector<std::string>& stops) {
  size_t best = 0;
  for (const std::string& s : stops) {
    for (size_t len = std::min(text.size(), s.size() - 1); len > best; --len) {
      if (text.compare(text.size() - len, len, s, 0, len) == 0) {
        best = len;
        break;
      }
    }
  }
  return best;
}

std::string StopTextFilter::release(std::string more) {
  if (stopped_) return {};
  held_ += more;
  // Earliest stop string wins; the held text never contains a complete one, so a match may start anywhere in
  // it.
  size_t cut = std::string::npos;
  for (const std::string& s : stop_) cut = std::min(cut, held_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, cut);
    held_.clear();
    return out;
  }
  const size_t keep = stop_prefix_suffix(held_, stop_);
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopTextFilter::push(int32_t id) {
  return release(detok_.push(id));
}

std::string StopTextFilter::finish() {
  std::string out = release(detok_.finish());
  if (stopped_) return out;
  out += held_;
  held_.clear();
  return out;
}

}  // namespace moe::serve
