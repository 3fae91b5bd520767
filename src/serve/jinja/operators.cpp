// Python operator semantics (int/float promotion, floor division, str and list concatenation and repetition),
// jinja2's attribute/item lookup rules, slicing, and argument binding.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "serve/jinja/builtins.h"
#include "serve/jinja/utf8.h"

namespace moe::jinja {

Arguments::Arguments(const CallArgs& args, std::string_view function,
                     std::initializer_list<std::string_view> params)
    : args_(args), params_(params) {
  require_input(args.positional.size() <= params_.size(), function, "() takes at most ", params_.size(),
                " arguments (", args.positional.size(), " given)");
  for (const auto& [name, value] : args.keyword) {
    auto it = std::find(params_.begin(), params_.end(), name);
    require_input(it != params_.end(), function, "() got an unexpected keyword argument '", name, "'");
    require_input(static_cast<size_t>(it - params_.begin()) >= args.positional.size(), function,
                  "() got multiple values for argument '", name, "'");
  }
}

const Value* Arguments::get(size_t index) const {
  if (index < args_.positional.size()) return &args_.positional[index];
  return index < params_.size() ? args_.keyword_arg(params_[index]) : nullptr;
}

Value Arguments::get_or(size_t index, Value fallback) const {
  const Value* v = get(index);
  return v ? *v : fallback;
}

[[noreturn]] void fail_undefined(const Value& undefined) {
  fail_input(undefined.hint().empty() ? std::string("value is undefined") : undefined.hint());
}

ValueList iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return v.items();
    case Value::Kind::kDict: {
      ValueList keys;
      for (const auto& [k, e] : v.as_dict().entries) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      auto offsets = code_point_offsets(v.as_string());
      for (size_t i = 0; i + 1 < offsets.size(); ++i) {
        chars.emplace_back(v.as_string().substr(offsets[i], offsets[i + 1] - offsets[i]));
      }
      return chars;
    }
    case Value::Kind::kUndefined:
      return {};
    default:
      fail_input("'", v.type_name(), "' object is not iterable");
  }
}

namespace {

std::string type_phrase(const Value& v) {
  if (v.is_none()) return "'None'";
  return "'" + v.type_name() + " object'";
}

Value no_attribute(const Value& obj, const std::string& name) {
  return Value::undefined(type_phrase(obj) + " has no attribute '" + name + "'");
}

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
  fail_input("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'");
}

Value repeat(const Value& seq, int64_t times) {
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  ValueList out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return seq.kind() == Value::Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

Value arithmetic(std::string_view op, const Value& a, const Value& b) {
  const bool as_float = a.is_float() || b.is_float() || op == "/";
  if ((op == "/" || op == "//" || op == "%") && b.as_double() == 0) {
    fail_input(as_float ? "float division by zero" : "integer division or modulo by zero");
  }
  if (as_float) {
    double x = a.as_double(), y = b.as_double();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "/") return Value(x / y);
    if (op == "//") return Value(std::floor(x / y));
    if (op == "%") {
      double m = std::fmod(x, y);
      return Value(m != 0 && ((m < 0) != (y < 0)) ? m + y : m);
    }
    return Value(std::pow(x, y));
  }
  int64_t x = a.as_int(), y = b.as_int();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "//") return Value(floor_div(x, y));
  if (op == "%") return Value(x - floor_div(x, y) * y);
  if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
  int64_t r = 1;
  for (int64_t i = 0; i < y; ++i) r *= x;
  return Value(r);
}

// Python's slice.indices(): clamps start/stop for the given length and step sign.
void slice_indices(int64_t length, const Value& start, const Value& stop, int64_t step, int64_t& lo,
                   int64_t& hi) {
  auto clamp = [&](const Value& v, int64_t fallback) {
    if (v.is_undefined() || v.is_none()) return fallback;
    require_input(v.is_int() || v.is_bool(), "slice indices must be integers or None");
    int64_t i = v.as_int();
    if (i < 0) i += length;
    if (step > 0) return std::clamp<int64_t>(i, 0, length);
    return std::clamp<int64_t>(i, -1, length - 1);
  };
  lo = clamp(start, step > 0 ? 0 : length - 1);
  hi = clamp(stop, step > 0 ? length : -1);
}

}  // namespace

Value unary_minus(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_float()) return Value(-v.as_double());
  if (v.is_int() || v.is_bool()) return Value(-v.as_int());
  fail_input("bad operand type for unary -: '", v.type_name(), "'");
}

Value binary_op(std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_sequence() && a.kind() == b.kind()) {
      ValueList out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return a.kind() == Value::Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (a.is_string() || b.is_string()) {
      fail_input("can only concatenate str (not \"", (a.is_string() ? b : a).type_name(), "\") to str");
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_sequence()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_sequence()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
  }
  unsupported(op, a, b);
}

Value get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_object()) {
    const Value* v = obj.as_dict().find(name);
    return v ? *v : no_attribute(obj, name);
  }
  Value method = method_of(obj, name);
  if (!method.is_undefined()) return method;
  if (obj.is_dict()) {
    const Value* v = obj.as_dict().find(name);
    if (v) return *v;
  }
  return no_attribute(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    const Value* v = obj.as_dict().find(key);
    if (v) return *v;
  } else if (obj.is_object() && key.is_string()) {
    const Value* v = obj.as_dict().find(key.as_string());
    if (v) return *v;
  } else if ((obj.is_sequence() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_sequence()) {
      const auto& items = obj.items();
      if (i < 0) i += static_cast<int64_t>(items.size());
      if (i >= 0 && i < static_cast<int64_t>(items.size())) return items[static_cast<size_t>(i)];
    } else {
      auto offsets = code_point_offsets(obj.as_string());
      int64_t n = static_cast<int64_t>(offsets.size()) - 1;
      if (i < 0) i += n;
      if (i >= 0 && i < n) {
        auto u = static_cast<size_t>(i);
        return Value(obj.as_string().substr(offsets[u], offsets[u + 1] - offsets[u]));
      }
    }
    return Value::undefined(str(type_phrase(obj), " has no element ", key.as_int()));
  }
  if (key.is_string()) {
    Value method = method_of(obj, key.as_string());
    if (!method.is_undefined()) return method;
    return no_attribute(obj, key.as_string());
  }
  return Value::undefined(str(type_phrase(obj), " has no element ", to_python_repr(key)));
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step_value) {
  if (obj.is_undefined()) fail_undefined(obj);
  int64_t step = step_value.is_undefined() || step_value.is_none() ? 1 : step_value.as_int();
  require_input(step != 0, "slice step cannot be zero");
  auto pick = [&](int64_t length, auto&& take) {
    int64_t lo = 0, hi = 0;
    slice_indices(length, start, stop, step, lo, hi);
    for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) take(static_cast<size_t>(i));
  };
  if (obj.is_string()) {
    auto offsets = code_point_offsets(obj.as_string());
    std::string out;
    pick(static_cast<int64_t>(offsets.size()) - 1,
         [&](size_t i) { out += obj.as_string().substr(offsets[i], offsets[i + 1] - offsets[i]); });
    return Value(std::move(out));
  }
  if (obj.is_sequence()) {
    ValueList out;
    pick(static_cast<int64_t>(obj.items().size()), [&](size_t i) { out.push_back(obj.items()[i]); });
    return obj.kind() == Value::Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  fail_input("'", obj.type_name(), "' object is not subscriptable");
}

}  // namespace moe::jinja
