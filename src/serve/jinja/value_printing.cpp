// str() and repr() of values exactly as Python prints them: templates print numbers, booleans, None and
// sometimes whole lists or dicts, and the output must match transformers byte for byte.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "serve/jinja/utf8.h"
#include "serve/jinja/value.h"

namespace moe::jinja {

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: scientific when exponent < -4 or >= 16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e_pos = sci.find('e');
  int exponent = std::stoi(sci.substr(e_pos + 1));
  std::string mantissa = sci.substr(0, e_pos);
  bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buf[24];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp_buf;
  }
  if (exponent < 0) return out + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  size_t int_len = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_len) return out + digits + std::string(int_len - digits.size(), '0') + ".0";
  return out + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

namespace {

std::string python_string_repr(const std::string& s) {
  // Python picks single quotes unless the text has a single quote and no double quote.
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  while (pos < s.size()) {
    uint32_t cp = next_code_point(s, pos);
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
    } else {
      append_utf8(out, cp);
    }
  }
  return out + quote;
}

}  // namespace

std::string to_python_repr(const Value& v) {
  using K = Value::Kind;
  switch (v.kind()) {
    case K::kString:
      return python_string_repr(v.as_string());
    case K::kList:
    case K::kTuple: {
      bool tuple = v.kind() == K::kTuple;
      std::string out = tuple ? "(" : "[";
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += to_python_repr(items[i]);
      }
      if (tuple && items.size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case K::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, e] : v.as_dict().entries) {
        if (!first) out += ", ";
        first = false;
        out += to_python_repr(k) + ": " + to_python_repr(e);
      }
      return out + "}";
    }
    case K::kUndefined:
      return "Undefined";
    default:
      return to_python_str(v);
  }
}

std::string to_python_str(const Value& v) {
  using K = Value::Kind;
  switch (v.kind()) {
    case K::kUndefined:
      return "";
    case K::kNone:
      return "None";
    case K::kBool:
      return v.as_bool() ? "True" : "False";
    case K::kInt:
      return std::to_string(v.as_int());
    case K::kFloat:
      return python_float_repr(v.as_double());
    case K::kString:
      return v.as_string();
    case K::kObject: {
      std::string out = "<" + v.hint() + " ";
      out += to_python_repr(Value::dict(v.as_dict()));
      return out + ">";
    }
    case K::kCallable:
      return "<function " + v.as_callable().name + ">";
    default:
      return to_python_repr(v);
  }
}

}  // namespace moe::jinja
