#include "serve/jinja/lexer.h"

#include <cctype>

#include "core/error.h"
#include "serve/jinja/utf8.h"

namespace moe::jinja {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// jinja2 normalises \r\n and \r to \n and drops one trailing newline before lexing.
std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's unicode-escape decoding, which jinja2 applies to string literals.
std::string unescape(std::string_view raw) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 == raw.size()) {
      out += raw[i];
      continue;
    }
    char c = raw[++i];
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case 'a':
        out += '\a';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case '\n':
        break;  // line continuation
      case 'x':
      case 'u':
      case 'U': {
        size_t width = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        uint32_t cp = 0;
        bool ok = i + width < raw.size();
        for (size_t k = 1; ok && k <= width; ++k) {
          int h = i + k < raw.size() ? hex_value(raw[i + k]) : -1;
          if (h < 0) ok = false;
          cp = cp * 16 + static_cast<uint32_t>(h < 0 ? 0 : h);
        }
        if (!ok) fail_input("jinja: truncated \\", c, " escape in a string literal");
        append_utf8(out, cp);
        i += width;
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          uint32_t cp = 0;
          size_t k = 0;
          for (; k < 3 && i + k < raw.size() && raw[i + k] >= '0' && raw[i + k] <= '7'; ++k) {
            cp = cp * 8 + static_cast<uint32_t>(raw[i + k] - '0');
          }
          append_utf8(out, cp);
          i += k - 1;
        } else {
          out += '\\';  // unknown escapes stay as written, like Python
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize_source(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;  // did the previous tag end by consuming a newline?
    while (pos_ < src_.size()) {
      size_t tag = src_.find('{', pos_);
      while (tag != std::string::npos && tag + 1 < src_.size() && src_[tag + 1] != '{' &&
             src_[tag + 1] != '%' && src_[tag + 1] != '#') {
        tag = src_.find('{', tag + 1);
      }
      if (tag == std::string::npos || tag + 1 >= src_.size()) {
        emit_text(src_.substr(pos_));
        pos_ = src_.size();
        break;
      }
      std::string text = src_.substr(pos_, tag - pos_);
      char type = src_[tag + 1];
      char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (sign == '-') {
        size_t end = text.size();
        while (end > 0 && is_space(text[end - 1])) --end;
        text.resize(end);
      } else if (sign != '+' && type != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if (l_pos > 0 || line_starting) {
          bool only_blank = text.find_first_not_of(" \t", l_pos) == std::string::npos;
          if (only_blank) text.resize(l_pos);
        }
      }
      emit_text(text);
      advance_to(tag);
      size_t open_len = 2 + (sign == '-' || sign == '+' ? 1 : 0);
      if (type == '#') {
        line_starting = skip_comment(open_len);
      } else if (type == '%' && try_raw_block(open_len)) {
        line_starting = false;
      } else {
        line_starting = lex_tag(type, open_len);
      }
    }
    tokens_.push_back({TokenKind::kEnd, "", line_, column_});
    return std::move(tokens_);
  }

 private:
  void emit_text(std::string text) {
    if (!text.empty()) tokens_.push_back({TokenKind::kText, std::move(text), line_, column_});
  }

  void advance_to(size_t target) {
    for (; pos_ < target; ++pos_) {
      if (src_[pos_] == '\n') {
        ++line_;
        column_ = 1;
      } else {
        ++column_;
      }
    }
  }

  [[noreturn]] void error(const std::string& what) {
    fail_input("jinja: line ", line_, " column ", column_, ": ", what);
  }

  // After a closing delimiter: `-` eats all following whitespace, plain block/comment ends eat one newline.
  bool finish_tag(size_t after, bool minus, bool plus, bool trim_newline) {
    advance_to(after);
    size_t end = after;
    if (minus) {
      while (end < src_.size() && is_space(src_[end])) ++end;
    } else if (!plus && trim_newline && end < src_.size() && src_[end] == '\n') {
      ++end;
    }
    advance_to(end);
    return end > 0 && src_[end - 1] == '\n';
  }

  bool skip_comment(size_t open_len) {
    size_t close = src_.find("#}", pos_ + open_len);
    if (close == std::string::npos) error("unterminated comment");
    bool minus = close > pos_ + open_len && src_[close - 1] == '-';
    bool plus = close > pos_ + open_len && src_[close - 1] == '+';
    return finish_tag(close + 2, minus, plus, true);
  }

  // {% raw %}...{% endraw %}: the body is text, untouched.
  bool try_raw_block(size_t open_len) {
    size_t p = pos_ + open_len;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    bool minus = p < src_.size() && src_[p] == '-';
    if (minus) ++p;
    if (src_.compare(p, 2, "%}") != 0) return false;
    finish_tag(p + 2, minus, false, true);
    size_t body_start = pos_;
    for (size_t search = pos_;;) {
      size_t open = src_.find("{%", search);
      if (open == std::string::npos) error("unterminated raw block");
      size_t q = open + 2;
      bool strip_before = q < src_.size() && src_[q] == '-';
      if (strip_before || (q < src_.size() && src_[q] == '+')) ++q;
      while (q < src_.size() && is_space(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      q += 6;
      while (q < src_.size() && is_space(src_[q])) ++q;
      bool end_minus = q < src_.size() && src_[q] == '-';
      if (end_minus) ++q;
      if (src_.compare(q, 2, "%}") != 0) error("malformed endraw");
      std::string body = src_.substr(body_start, open - body_start);
      if (strip_before) {
        while (!body.empty() && is_space(body.back())) body.pop_back();
      }
      emit_text(std::move(body));
      advance_to(open);
      finish_tag(q + 2, end_minus, false, true);
      return true;
    }
  }

  // Lexes the expression tokens of a {{ }} or {% %} tag; returns whether the tag end consumed a newline.
  bool lex_tag(char type, size_t open_len) {
    const bool block = type == '%';
    tokens_.push_back({block ? TokenKind::kBlockBegin : TokenKind::kVariableBegin, "", line_, column_});
    advance_to(pos_ + open_len);
    const char close = block ? '%' : '}';
    int depth = 0;  // inside brackets a `}}` belongs to the expression, as in jinja2
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= src_.size()) error(block ? "unterminated block tag" : "unterminated {{ expression");
      if (depth == 0) {
        bool minus = src_[pos_] == '-' || src_[pos_] == '+';
        size_t p = pos_ + (minus ? 1 : 0);
        if (src_.compare(p, 2, std::string{close, '}'}) == 0) {
          tokens_.push_back({block ? TokenKind::kBlockEnd : TokenKind::kVariableEnd, "", line_, column_});
          bool is_minus = minus && src_[pos_] == '-';
          bool is_plus = minus && src_[pos_] == '+';
          return finish_tag(p + 2, is_minus, is_plus, block);
        }
      }
      lex_expression_token(depth);
    }
  }

  void lex_expression_token(int& depth) {
    const int line = line_, column = column_;
    const char c = src_[pos_];
    if (is_name_start(c)) {
      size_t end = pos_;
      while (end < src_.size() && is_name_char(src_[end])) ++end;
      tokens_.push_back({TokenKind::kName, src_.substr(pos_, end - pos_), line, column});
      advance_to(end);
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      lex_number();
    } else if (c == '\'' || c == '"') {
      size_t end = pos_ + 1;
      while (end < src_.size() && src_[end] != c) end += src_[end] == '\\' ? 2 : 1;
      if (end >= src_.size()) error("unterminated string literal");
      tokens_.push_back({TokenKind::kString,
                         unescape(std::string_view(src_).substr(pos_ + 1, end - pos_ - 1)), line, column});
      advance_to(end + 1);
    } else {
      static const char* const kTwoChar[] = {"**", "//", "==", "!=", "<=", ">="};
      std::string op(1, c);
      for (const char* two : kTwoChar) {
        if (src_.compare(pos_, 2, two) == 0) op = two;
      }
      if (op.size() == 1 && std::string_view("+-*/%~[](){}=.:|,<>").find(c) == std::string_view::npos) {
        error(str("unexpected character '", c, "'"));
      }
      if (op == "(" || op == "[" || op == "{") ++depth;
      if ((op == ")" || op == "]" || op == "}") && depth > 0) --depth;
      tokens_.push_back({TokenKind::kOperator, op, line, column});
      advance_to(pos_ + op.size());
    }
  }

  void lex_number() {
    const int line = line_, column = column_;
    size_t end = pos_;
    auto digits = [&] {
      while (end < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[end])) || src_[end] == '_'))
        ++end;
    };
    digits();
    bool is_float = false;
    // `foo.0.1` is attribute access, so after a dot only an integer is read (jinja2's (?<!\.) rule).
    bool after_dot = pos_ > 0 && src_[pos_ - 1] == '.';
    if (!after_dot && end + 1 < src_.size() && src_[end] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[end + 1]))) {
      is_float = true;
      ++end;
      digits();
    }
    if (!after_dot && end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t e = end + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) {
        is_float = true;
        end = e;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos_; i < end; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    tokens_.push_back({is_float ? TokenKind::kFloat : TokenKind::kInteger, text, line, column});
    advance_to(end);
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(source).run();
}

}  // namespace moe::jinja
