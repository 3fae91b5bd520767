// Jinja filters on strings and numbers (jinja2/filters.py semantics, `tojson` as HF transformers overrides
// it); the filters over sequences and mappings are in collection_filters.cpp.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "serve/jinja/builtins.h"
#include "serve/jinja/python_format.h"
#include "serve/jinja/string_ops.h"
#include "serve/jinja/utf8.h"

namespace moe::jinja {

namespace {

// jinja2's soft_str: str(value), with undefined printing as "".
std::string soft_str(const Value& v) {
  return to_python_str(v);
}

Value tojson(const Value& v, const CallArgs& args) {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> json.dumps.
  Arguments a(args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = a.get_or(0, Value(false)).truthy();
  Value indent = a.get_or(1, Value::none());
  if (!indent.is_none()) o.indent = static_cast<int>(indent.as_int());
  Value separators = a.get_or(2, Value::none());
  if (!separators.is_none()) {
    require_input(separators.is_sequence() && separators.items().size() == 2 &&
                      separators.items()[0].is_string() && separators.items()[1].is_string(),
                  "tojson: separators must be a pair of strings");
    o.item_separator = separators.items()[0].as_string();
    o.key_separator = separators.items()[1].as_string();
  }
  o.sort_keys = a.get_or(3, Value(false)).truthy();
  return Value(json_dumps(v, o));
}

// jinja2's do_title: capitalises after runs of whitespace, '-', '(', '{', '[' and '<'.
std::string jinja_title(const std::string& s) {
  std::string out;
  bool at_word_start = true;
  for (char c : s) {
    bool separator = std::isspace(static_cast<unsigned char>(c)) || c == '-' || c == '(' || c == '{' ||
                     c == '[' || c == '<';
    if (separator) {
      out += c;
      at_word_start = true;
    } else {
      out += at_word_start ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                           : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      at_word_start = false;
    }
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string indent(const std::string& text, const Value& width, bool first, bool blank) {
  std::string pad =
      width.is_string() ? width.as_string() : std::string(static_cast<size_t>(width.as_int()), ' ');
  std::vector<std::string> lines = python_splitlines(text + "\n");
  std::string out = lines.empty() ? "" : lines[0];
  for (size_t i = 1; i < lines.size(); ++i) {
    out += "\n";
    if (blank || !lines[i].empty()) out += pad;  // empty lines stay empty unless blank=True
    out += lines[i];
  }
  return first ? pad + out : out;
}

bool parse_python_int(std::string s, int base, int64_t& out) {
  s = python_strip(s, nullptr, true, true);
  std::string digits;
  for (char c : s) {
    if (c != '_') digits += c;
  }
  if (digits.empty()) return false;
  char* end = nullptr;
  long long v = std::strtoll(digits.c_str(), &end, base);
  if (*end != '\0') return false;
  out = v;
  return true;
}

bool parse_python_float(const std::string& s, double& out) {
  std::string t = python_strip(s, nullptr, true, true);
  if (t.empty()) return false;
  char* end = nullptr;
  out = std::strtod(t.c_str(), &end);
  return *end == '\0';
}

Value to_int(const Value& v, const CallArgs& args) {
  Arguments a(args, "int", {"default", "base"});
  Value fallback = a.get_or(0, Value(int64_t{0}));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float())
    return std::isfinite(v.as_double()) ? Value(static_cast<int64_t>(v.as_double())) : fallback;
  if (v.is_string()) {
    int64_t i = 0;
    double d = 0;
    if (parse_python_int(v.as_string(), static_cast<int>(a.get_or(1, Value(int64_t{10})).as_int()), i))
      return Value(i);
    if (parse_python_float(v.as_string(), d) && std::isfinite(d)) return Value(static_cast<int64_t>(d));
  }
  return fallback;
}

Value to_float(const Value& v, const CallArgs& args) {
  Arguments a(args, "float", {"default"});
  if (v.is_number()) return Value(v.as_double());
  double d = 0;
  if (v.is_string() && parse_python_float(v.as_string(), d)) return Value(d);
  return a.get_or(0, Value(0.0));
}

Value round_filter(const Value& v, const CallArgs& args) {
  Arguments a(args, "round", {"precision", "method"});
  int64_t precision = a.get_or(0, Value(int64_t{0})).as_int();
  std::string method = a.get_or(1, Value("common")).as_string();
  require_input(v.is_number(), "round: expected a number, not ", v.type_name());
  if (method == "common") {
    if (!v.is_float()) return Value(v.as_int());  // round(int, n) stays an int
    // printf rounds the exact binary value half-to-even, which is what Python's round() does.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::max<int64_t>(precision, 0)), v.as_double());
    return Value(std::strtod(buf, nullptr));
  }
  require_input(method == "ceil" || method == "floor", "method must be common, ceil or floor");
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_double() * scale;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

int64_t word_count(const std::string& s) {
  int64_t n = 0;
  bool in_word = false;
  for (char c : s) {
    bool word_char =
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (static_cast<unsigned char>(c) & 0x80);
    if (word_char && !in_word) ++n;
    in_word = word_char;
  }
  return n;
}

}  // namespace

Value length_of(const Value& v) {
  if (v.is_string()) return Value(static_cast<int64_t>(code_point_count(v.as_string())));
  if (v.is_sequence()) return Value(static_cast<int64_t>(v.items().size()));
  if (v.is_dict()) return Value(static_cast<int64_t>(v.as_dict().entries.size()));
  if (v.is_undefined()) return Value(int64_t{0});
  fail_input("object of type '", v.type_name(), "' has no len()");
}

Value apply_filter(const std::string& name, const Value& v, const CallArgs& args) {
  auto no_args = [&] { Arguments a(args, name, {}); };
  if (name == "tojson") return tojson(v, args);
  if (name == "default" || name == "d") {
    Arguments a(args, name, {"default_value", "boolean"});
    bool use_default = v.is_undefined() || (a.get_or(1, Value(false)).truthy() && !v.truthy());
    return use_default ? a.get_or(0, Value("")) : v;
  }
  if (name == "length" || name == "count") return no_args(), length_of(v);
  if (name == "string") return no_args(), Value(soft_str(v));
  if (name == "safe") return no_args(), v;
  if (name == "trim") {
    Arguments a(args, name, {"chars"});
    const Value* chars = a.get(0);
    bool has_chars = chars && !chars->is_none();
    return Value(python_strip(soft_str(v), has_chars ? &chars->as_string() : nullptr, true, true));
  }
  if (name == "upper") return no_args(), Value(python_upper(soft_str(v)));
  if (name == "lower") return no_args(), Value(python_lower(soft_str(v)));
  if (name == "title") return no_args(), Value(jinja_title(soft_str(v)));
  if (name == "capitalize") return no_args(), Value(python_capitalize(soft_str(v)));
  if (name == "escape" || name == "e") return no_args(), Value(html_escape(soft_str(v)));
  if (name == "wordcount") return no_args(), Value(word_count(soft_str(v)));
  if (name == "replace") {
    Arguments a(args, name, {"old", "new", "count"});
    require_input(a.get(0) && a.get(1), "replace needs old and new");
    Value count = a.get_or(2, Value::none());
    return Value(python_replace(soft_str(v), soft_str(*a.get(0)), soft_str(*a.get(1)),
                                count.is_none() ? -1 : count.as_int()));
  }
  if (name == "indent") {
    Arguments a(args, name, {"width", "first", "blank"});
    return Value(indent(soft_str(v), a.get_or(0, Value(int64_t{4})), a.get_or(1, Value(false)).truthy(),
                        a.get_or(2, Value(false)).truthy()));
  }
  if (name == "int") return to_int(v, args);
  if (name == "float") return to_float(v, args);
  if (name == "round") return round_filter(v, args);
  if (name == "abs") {
    no_args();
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    require_input(v.is_int() || v.is_bool(), "bad operand type for abs(): '", v.type_name(), "'");
    return Value(static_cast<int64_t>(std::llabs(v.as_int())));
  }
  Value out;
  if (apply_collection_filter(name, v, args, out)) return out;
  fail_input("no filter named '", name, "'");
}

}  // namespace moe::jinja
