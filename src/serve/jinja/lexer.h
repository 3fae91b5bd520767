#pragma once
// Splits a template into text and tag tokens, applying HF's whitespace rules at lex time exactly as jinja2's
// lexer does: trim_blocks (drop the newline after a block or comment tag), lstrip_blocks (drop the
// indentation before one), `-` markers (strip all whitespace on that side), `+` markers (keep it), and the
// single trailing newline of the source is dropped (keep_trailing_newline=False).
#include <string>
#include <string_view>
#include <vector>

namespace moe::jinja {

enum class TokenKind {
  kText,
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,  // text holds the unescaped value
  kInteger,
  kFloat,
  kOperator,
  kEnd,
};

struct Token {
  TokenKind kind;
  std::string text;
  int line = 1;
  int column = 1;
};

std::vector<Token> tokenize(std::string_view source);

}  // namespace moe::jinja
