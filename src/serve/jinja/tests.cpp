// Jinja tests (`x is defined`, `x is divisibleby 3`, ...), with the Python type rules of jinja2/tests.py:
// bool counts as a number but not as an integer, a dict is a sequence, undefined is iterable.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "serve/jinja/builtins.h"

namespace moe::jinja {

namespace {

const Value& required_arg(const Arguments& a, std::string_view test) {
  const Value* v = a.get(0);
  require_input(v != nullptr, "test '", test, "' needs an argument");
  return *v;
}

}  // namespace

bool has_test(const std::string& name) {
  static const char* const kNames[] = {
      "defined",     "undefined", "none",     "string", "number", "integer",     "float",   "mapping",
      "iterable",    "sequence",  "boolean",  "true",   "false",  "callable",    "equalto", "eq",
      "==",          "ne",        "!=",       "gt",     ">",      "greaterthan", "ge",      ">=",
      "lt",          "<",         "lessthan", "le",     "<=",     "in",          "odd",     "even",
      "divisibleby", "sameas",    "lower",    "upper",  "filter", "test",        "escaped"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

bool apply_test(const std::string& name, const Value& v, const CallArgs& args) {
  using K = Value::Kind;
  Arguments a(args, name, {"other"});
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "mapping") return v.is_dict();
  if (name == "callable") return v.is_callable();
  if (name == "iterable") return v.is_string() || v.is_sequence() || v.is_dict() || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_sequence() || v.is_dict() || v.is_undefined();
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    const std::string& s = v.as_string();
    bool cased =
        std::any_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
    if (name == "lower")
      return cased && std::none_of(s.begin(), s.end(),
                                   [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
    return cased && std::none_of(s.begin(), s.end(),
                                 [](char c) { return std::islower(static_cast<unsigned char>(c)); });
  }
  if (name == "filter") return v.is_string();  // only used as `x is filter`: the name of a filter
  if (name == "test") return v.is_string() && has_test(v.as_string());
  if (name == "odd" || name == "even") {
    if (v.is_undefined()) fail_undefined(v);
    require_input(v.is_int() || v.is_bool(), "test '", name, "' needs an integer, not ", v.type_name());
    bool odd = (v.as_int() % 2) != 0;
    return name == "odd" ? odd : !odd;
  }
  if (name == "divisibleby") {
    const Value& d = required_arg(a, name);
    if (v.is_undefined()) fail_undefined(v);
    Value rem = binary_op("%", v, d);
    return rem.as_double() == 0;
  }
  if (name == "sameas") {
    const Value& other = required_arg(a, name);
    if (v.kind() != other.kind()) return false;
    if (v.kind() == K::kNone || v.kind() == K::kUndefined) return true;
    if (v.kind() == K::kBool || v.kind() == K::kInt) return v.as_int() == other.as_int();
    if (v.kind() == K::kString || v.kind() == K::kFloat) return false;  // distinct objects in Python
    return v.identity() == other.identity();
  }
  if (name == "in") return value_contains(required_arg(a, name), v);
  const Value& other = required_arg(a, name);
  if (name == "equalto" || name == "eq" || name == "==") return values_equal(v, other);
  if (name == "ne" || name == "!=") return !values_equal(v, other);
  if (v.is_undefined()) fail_undefined(v);
  if (other.is_undefined()) fail_undefined(other);
  int c = compare_values(v, other);
  if (name == "gt" || name == ">" || name == "greaterthan") return c > 0;
  if (name == "ge" || name == ">=") return c >= 0;
  if (name == "lt" || name == "<" || name == "lessthan") return c < 0;
  if (name == "le" || name == "<=") return c <= 0;
  fail_input("no test named '", name, "'");
}

}  // namespace moe::jinja
