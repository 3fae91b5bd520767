#include "serve/tokenizer/byte_level.h"

#include "serve/tokenizer/utf8.h"

namespace moe::tok {

ByteLevelAlphabet::ByteLevelAlphabet() {
  char_to_byte_.fill(-1);
  const auto printable = [](int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
  };
  char32_t next_free = 256;
  for (int b = 0; b < 256; ++b) {
    const char32_t c = printable(b) ? static_cast<char32_t>(b) : next_free++;
    byte_to_char_[b] = c;
    append_utf8(byte_to_utf8_[b], c);
    char_to_byte_[c] = static_cast<int16_t>(b);
  }
}

const ByteLevelAlphabet& ByteLevelAlphabet::get() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

std::optional<uint8_t> ByteLevelAlphabet::byte_of(char32_t c) const {
  if (c >= char_to_byte_.size() || char_to_byte_[c] < 0) return std::nullopt;
  return static_cast<uint8_t>(char_to_byte_[c]);
}

std::string ByteLevelAlphabet::encode(std::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char ch : bytes) out += byte_to_utf8_[static_cast<uint8_t>(ch)];
  return out;
}

std::optional<std::string> ByteLevelAlphabet::decode(std::string_view token) const {
  std::string out;
  out.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    if (utf8_step(token, pos).valid_len == 0) return std::nullopt;
    const auto b = byte_of(next_code_point(token, pos));
    if (!b) return std::nullopt;
    out.push_back(static_cast<char>(*b));
  }
  return out;
}

}  // namespace moe::tok
