#pragma once
// GPT-2's byte-level alphabet: every byte 0..255 is shown as one printable code point, so that a vocabulary
// of strings can cover arbitrary bytes. Printable Latin-1 bytes map to themselves; the rest (controls, space,
// ...) map to U+0100 and up in byte order, e.g. ' ' -> 'Ġ' (U+0120), '\n' -> 'Ċ' (U+010A).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moe::tok {

class ByteLevelAlphabet {
 public:
  static const ByteLevelAlphabet& get();

  char32_t char_of(uint8_t byte) const { return byte_to_char_[byte]; }
  // UTF-8 of char_of(byte), precomputed because encoding runs this for every input byte.
  const std::string& utf8_of(uint8_t byte) const { return byte_to_utf8_[byte]; }
  std::optional<uint8_t> byte_of(char32_t c) const;

  // Raw bytes -> the byte-level string the vocabulary is written in.
  std::string encode(std::string_view bytes) const;
  // Byte-level string -> raw bytes; nullopt when a code point is outside the alphabet (HF then keeps the
  // token text as it is, which is what the callers do).
  std::optional<std::string> decode(std::string_view token) const;

 private:
  ByteLevelAlphabet();
  std::array<char32_t, 256> byte_to_char_{};
  std::array<std::string, 256> byte_to_utf8_{};
  std::array<int16_t, 324> char_to_byte_{};  // every mapped code point is below U+0144
};

}  // namespace moe::tok
