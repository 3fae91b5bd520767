#include "serve/jinja/value.h"

#include <cmath>

#include "core/error.h"

namespace moe::jinja {

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : entries) {
    if (values_equal(k, key)) return &v;
  }
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (values_equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::keyword_arg(std::string_view name) const {
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t v) : kind_(Kind::kInt), i_(v) {}
Value::Value(double v) : kind_(Kind::kFloat), f_(v) {}
Value::Value(std::string s) : kind_(Kind::kString), s_(std::move(s)) {}

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}

Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::object(std::string type_name, Dict attributes) {
  Value v = dict(std::move(attributes));
  v.kind_ = Kind::kObject;
  v.s_ = std::move(type_name);
  return v;
}

Value Value::function(std::string name, std::function<Value(const CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.fn_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      d.entries.reserve(j.size());
      for (const auto& [k, e] : j.items()) d.entries.emplace_back(Value(k), from_json(e));
      return dict(std::move(d));
    }
    default:
      fail_input("jinja: unsupported JSON value in the template context");
  }
}

int64_t Value::as_int() const {
  return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_;
}

double Value::as_double() const {
  return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int());
}

const ValueList& Value::items() const {
  require(is_sequence(), "jinja: internal: not a list");
  return *list_;
}

const Dict& Value::as_dict() const {
  require(is_dict() || is_object(), "jinja: internal: not a dict");
  return *dict_;
}

Dict& Value::object_attributes() const {
  require(is_object(), "jinja: internal: not an object");
  return *dict_;
}

const Callable& Value::as_callable() const {
  require(is_callable(), "jinja: internal: not callable");
  return *fn_;
}

const void* Value::identity() const {
  if (list_) return list_.get();
  if (dict_) return dict_.get();
  return fn_.get();
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0.0;
    case Kind::kString:
      return !s_.empty();
    case Kind::kList:
    case Kind::kTuple:
      return !list_->empty();
    case Kind::kDict:
      return !dict_->entries.empty();
    default:
      return true;
  }
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
    case Kind::kObject:
      return s_;
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

nlohmann::ordered_json Value::to_json() const {
  switch (kind_) {
    case Kind::kNone:
      return nullptr;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_;
    case Kind::kFloat:
      return f_;
    case Kind::kString:
      return s_;
    case Kind::kList:
    case Kind::kTuple: {
      auto arr = nlohmann::ordered_json::array();
      for (const auto& e : *list_) arr.push_back(e.to_json());
      return arr;
    }
    case Kind::kDict: {
      auto obj = nlohmann::ordered_json::object();
      for (const auto& [k, e] : dict_->entries) obj[to_python_str(k)] = e.to_json();
      return obj;
    }
    default:
      fail_input("Object of type ", type_name(), " is not JSON serializable");
  }
}

bool values_equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) {
    // Python compares a list with a tuple as unequal; undefined equals only undefined.
    return false;
  }
  switch (a.kind()) {
    case K::kUndefined:
    case K::kNone:
      return true;
    case K::kString:
      return a.as_string() == b.as_string();
    case K::kList:
    case K::kTuple: {
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!values_equal(x[i], y[i])) return false;
      }
      return true;
    }
    case K::kDict: {
      const auto& x = a.as_dict().entries;
      const auto& y = b.as_dict();
      if (x.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x) {
        const Value* other = y.find(k);
        if (!other || !values_equal(v, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

int compare_values(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order, which is what Python compares.
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.kind() == b.kind() && a.is_sequence()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!values_equal(x[i], y[i])) return compare_values(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  fail_input("'<' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'");
}

bool value_contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) {
      fail_input("'in <string>' requires string as left operand, not ", item.type_name());
    }
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_sequence()) {
    for (const auto& e : container.items()) {
      if (values_equal(e, item)) return true;
    }
    return false;
  }
  if (container.is_dict()) return container.as_dict().find(item) != nullptr;
  if (container.is_undefined()) return false;  // jinja2's Undefined iterates as empty
  fail_input("argument of type '", container.type_name(), "' is not iterable");
}

}  // namespace moe::jinja
