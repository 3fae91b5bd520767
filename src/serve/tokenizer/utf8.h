#pragma once
// UTF-8 helpers shared by the tokenizer: walking code points, and turning arbitrary bytes into valid UTF-8
// the way Rust's String::from_utf8_lossy does, because the HF `tokenizers` decoder (our reference) does
// exactly that.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moe::tok {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Appends the UTF-8 encoding of `cp` (which must be a Unicode scalar value) to `out`.
void append_utf8(std::string& out, char32_t cp);

// What the bytes at s[pos] are: one whole valid scalar value, one maximal invalid subpart (which becomes one
// U+FFFD), or a valid start that the end of `s` cuts short (a stream may still complete it).
struct Utf8Step {
  size_t valid_len = 0;    // >0: a whole valid scalar value of this many bytes
  size_t invalid_len = 0;  // >0: this many bytes form one maximal invalid subpart (one U+FFFD)
  bool truncated = false;  // the remaining bytes are a valid prefix, only cut short by the end of input
};
Utf8Step utf8_step(std::string_view s, size_t pos);

// Decodes the scalar value at s[pos] (which must start a valid sequence) and advances pos.
char32_t next_code_point(std::string_view s, size_t& pos);

bool is_valid_utf8(std::string_view s);

// Replaces each maximal invalid subpart with U+FFFD (Unicode's recommended practice, as Rust does).
std::string to_valid_utf8_lossy(std::string_view s);

}  // namespace moe::tok
