#pragma once
// Python-level operations the interpreter delegates to: attribute/item access (with str/dict/list methods),
// operators, filters, tests and globals. Each lives in its own .cpp; this header is their shared interface.
#include <ctime>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "serve/jinja/value.h"

namespace moe::jinja {

// Binds a call's arguments to a Python-style parameter list: positional first, then by keyword.
class Arguments {
 public:
  Arguments(const CallArgs& args, std::string_view function, std::initializer_list<std::string_view> params);
  const Value* get(size_t index) const;  // null when the argument was not passed
  Value get_or(size_t index, Value fallback) const;
  size_t positional_count() const { return args_.positional.size(); }

 private:
  const CallArgs& args_;
  std::vector<std::string_view> params_;
};

// The elements a for loop / list() would see: list items, dict keys, string characters; undefined is empty.
ValueList iterate(const Value& v);

// operators.cpp
Value binary_op(std::string_view op, const Value& a, const Value& b);
Value unary_minus(const Value& v);
Value get_item(const Value& obj, const Value& key);  // obj[key]: item first, then attribute (jinja2)
Value get_attribute(const Value& obj, const std::string& name);  // obj.name: attribute first, then item
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
[[noreturn]] void fail_undefined(const Value& undefined);

// methods.cpp: bound methods of str, dict and list; undefined when there is no such method.
Value method_of(const Value& obj, const std::string& name);

// filters.cpp / tests.cpp
Value apply_filter(const std::string& name, const Value& input, const CallArgs& args);
// collection_filters.cpp: list/dict filters (map, select, sort, ...); false when `name` is not one of them.
bool apply_collection_filter(const std::string& name, const Value& input, const CallArgs& args, Value& out);
Value length_of(const Value& v);  // len(): code points, items, keys; undefined has length 0
bool apply_test(const std::string& name, const Value& input, const CallArgs& args);
bool has_test(const std::string& name);

// globals.cpp: range, dict, namespace, raise_exception, strftime_now (at `now`, or the local clock).
Dict make_globals(std::optional<std::time_t> now);

}  // namespace moe::jinja
