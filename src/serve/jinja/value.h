#pragma once
// The runtime value of the Jinja interpreter: a Python object as far as chat templates can observe it.
// Lists, dicts and callables are shared and immutable (HF renders in an ImmutableSandboxedEnvironment, so
// templates cannot mutate them); only namespace objects are mutable, through `{% set ns.attr = ... %}`.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace moe::jinja {

class Value;
using ValueList = std::vector<Value>;

// Insertion-ordered mapping (Python dicts keep insertion order, and tojson / items() must follow it).
struct Dict {
  std::vector<std::pair<Value, Value>> entries;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  const Value* find(const std::string& key) const { return find(std::string_view(key)); }
  const Value* find(const char* key) const { return find(std::string_view(key)); }
  void set(Value key, Value value);
};

struct CallArgs {
  ValueList positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value* keyword_arg(std::string_view name) const;
};

struct Callable {
  std::string name;
  std::function<Value(const CallArgs&)> call;
};

class Value {
 public:
  // kObject is an attribute bag (namespace(), the loop variable): mutable, not a mapping.
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kTuple,
    kDict,
    kObject,
    kCallable
  };

  Value() = default;  // undefined
  static Value undefined(std::string hint = {});
  static Value none();
  Value(bool b);
  Value(int v) : Value(static_cast<int64_t>(v)) {}
  Value(int64_t v);
  Value(double v);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value dict(Dict d);
  static Value object(std::string type_name, Dict attributes = {});
  static Value function(std::string name, std::function<Value(const CallArgs&)> fn);
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_sequence() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return b_; }
  int64_t as_int() const;  // bool and int (Python's bool is an int)
  double as_double() const;
  const std::string& as_string() const { return s_; }
  const ValueList& items() const;   // list or tuple
  const Dict& as_dict() const;      // dict or object
  Dict& object_attributes() const;  // kObject only: namespaces are assigned to in place
  const Callable& as_callable() const;
  // For undefined: the name that was missing, for error messages. For objects: the type name.
  const std::string& hint() const { return s_; }

  bool truthy() const;
  std::string type_name() const;  // Python's type name, for error messages
  nlohmann::ordered_json to_json() const;
  const void* identity() const;  // for the `sameas` test on containers

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Callable> fn_;
};

// Python semantics used all over the runtime.
bool values_equal(const Value& a, const Value& b);   // ==
int compare_values(const Value& a, const Value& b);  // <, >, ...: throws when Python would (TypeError)
std::string to_python_str(const Value& v);           // str(v), what {{ v }} prints
std::string to_python_repr(const Value& v);          // repr(v), used inside list/dict printing
std::string python_float_repr(double d);             // repr(float): shortest round trip, '1.0', '1e-05'
bool value_contains(const Value& container, const Value& item);  // `item in container`

}  // namespace moe::jinja
