// Methods templates call on values: str.startswith(...), dict.items(), list.index(...), ...
// Mutating methods (list.append, dict.update) are absent on purpose: HF's ImmutableSandboxedEnvironment
// refuses them too.
#include <algorithm>

#include "core/error.h"
#include "serve/jinja/builtins.h"
#include "serve/jinja/string_ops.h"
#include "serve/jinja/utf8.h"

namespace moe::jinja {

namespace {

using Method = Value (*)(const Value& self, const CallArgs& args);

std::string arg_string(const Value* v, std::string_view what) {
  require_input(v && v->is_string(), what, " must be str, not ", v ? v->type_name() : "nothing");
  return v->as_string();
}

bool affix_match(const Value& self, const CallArgs& args, bool prefix) {
  Arguments a(args, prefix ? "startswith" : "endswith", {"prefix"});
  const Value* p = a.get(0);
  require_input(p != nullptr, "startswith/endswith needs an argument");
  ValueList candidates = p->is_sequence() ? p->items() : ValueList{*p};
  const std::string& s = self.as_string();
  for (const auto& c : candidates) {
    std::string needle = arg_string(&c, "startswith/endswith argument");
    if (needle.size() > s.size()) continue;
    if (prefix ? s.compare(0, needle.size(), needle) == 0
               : s.compare(s.size() - needle.size(), needle.size(), needle) == 0) {
      return true;
    }
  }
  return false;
}

Value strip_method(const Value& self, const CallArgs& args, bool left, bool right) {
  Arguments a(args, "strip", {"chars"});
  const Value* chars = a.get(0);
  if (chars && chars->is_none()) chars = nullptr;
  return Value(python_strip(self.as_string(), chars ? &chars->as_string() : nullptr, left, right));
}

Value split_method(const Value& self, const CallArgs& args, bool from_right) {
  Arguments a(args, from_right ? "rsplit" : "split", {"sep", "maxsplit"});
  Value sep = a.get_or(0, Value::none());
  int64_t maxsplit = a.get_or(1, Value(int64_t{-1})).as_int();
  std::vector<std::string> parts =
      sep.is_none() ? python_split_whitespace(self.as_string(), maxsplit, from_right)
                    : python_split(self.as_string(), arg_string(&sep, "separator"), maxsplit, from_right);
  ValueList out;
  for (auto& p : parts) out.emplace_back(std::move(p));
  return Value::list(std::move(out));
}

Value find_method(const Value& self, const CallArgs& args, bool reverse, bool must_exist) {
  Arguments a(args, "find", {"sub"});
  std::string sub = arg_string(a.get(0), "substring");
  const std::string& s = self.as_string();
  size_t at = reverse ? s.rfind(sub) : s.find(sub);
  if (at == std::string::npos) {
    require_input(!must_exist, "substring not found");
    return Value(int64_t{-1});
  }
  return Value(static_cast<int64_t>(code_point_count(std::string_view(s).substr(0, at))));
}

Value count_method(const Value& self, const CallArgs& args) {
  Arguments a(args, "count", {"x"});
  const Value* x = a.get(0);
  require_input(x != nullptr, "count() takes exactly one argument");
  int64_t n = 0;
  if (self.is_string()) {
    std::string sub = arg_string(x, "substring");
    if (sub.empty()) return Value(static_cast<int64_t>(code_point_count(self.as_string()) + 1));
    for (size_t at = self.as_string().find(sub); at != std::string::npos;
         at = self.as_string().find(sub, at + sub.size())) {
      ++n;
    }
  } else {
    for (const auto& e : self.items()) n += values_equal(e, *x) ? 1 : 0;
  }
  return Value(n);
}

Value string_method(const std::string& name, const Value& self, const CallArgs& args) {
  const std::string& s = self.as_string();
  auto no_args = [&] {
    require_input(args.positional.empty() && args.keyword.empty(), name, "() takes no arguments");
  };
  if (name == "startswith" || name == "endswith") return Value(affix_match(self, args, name == "startswith"));
  if (name == "strip") return strip_method(self, args, true, true);
  if (name == "lstrip") return strip_method(self, args, true, false);
  if (name == "rstrip") return strip_method(self, args, false, true);
  if (name == "split") return split_method(self, args, false);
  if (name == "rsplit") return split_method(self, args, true);
  if (name == "find") return find_method(self, args, false, false);
  if (name == "rfind") return find_method(self, args, true, false);
  if (name == "index") return find_method(self, args, false, true);
  if (name == "count") return count_method(self, args);
  if (name == "upper") return no_args(), Value(python_upper(s));
  if (name == "lower" || name == "casefold") return no_args(), Value(python_lower(s));
  if (name == "title") return no_args(), Value(python_title(s));
  if (name == "capitalize") return no_args(), Value(python_capitalize(s));
  if (name == "swapcase") return no_args(), Value(ascii_swapcase(s));
  if (name == "replace") {
    Arguments a(args, "replace", {"old", "new", "count"});
    return Value(python_replace(s, arg_string(a.get(0), "old"), arg_string(a.get(1), "new"),
                                a.get_or(2, Value(int64_t{-1})).as_int()));
  }
  if (name == "join") {
    Arguments a(args, "join", {"iterable"});
    std::string out;
    bool first = true;
    for (const auto& e : iterate(a.get_or(0, Value::list({})))) {
      if (!first) out += s;
      first = false;
      out += arg_string(&e, "sequence item");
    }
    return Value(std::move(out));
  }
  if (name == "format") return Value(python_str_format(s, args));
  if (name == "removeprefix" || name == "removesuffix") {
    Arguments a(args, name, {"affix"});
    std::string affix = arg_string(a.get(0), "affix");
    bool prefix = name == "removeprefix";
    if (affix.size() <= s.size() && (prefix ? s.compare(0, affix.size(), affix) == 0
                                            : s.compare(s.size() - affix.size(), affix.size(), affix) == 0)) {
      return Value(prefix ? s.substr(affix.size()) : s.substr(0, s.size() - affix.size()));
    }
    return self;
  }
  if (name == "splitlines") {
    no_args();
    ValueList out;
    for (auto& line : python_splitlines(s)) out.emplace_back(std::move(line));
    return Value::list(std::move(out));
  }
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" || name == "islower" ||
      name == "isupper") {
    no_args();
    return Value(python_string_predicate(name, s));
  }
  fail_input("'str' object has no attribute '", name, "'");
}

Value dict_method(const std::string& name, const Value& self, const CallArgs& args) {
  const auto& entries = self.as_dict().entries;
  if (name == "get") {
    Arguments a(args, "get", {"key", "default"});
    require_input(a.get(0) != nullptr, "get expected at least 1 argument");
    const Value* v = self.as_dict().find(*a.get(0));
    return v ? *v : a.get_or(1, Value::none());
  }
  Arguments a(args, name, {});
  ValueList out;
  for (const auto& [k, v] : entries) {
    if (name == "items") out.push_back(Value::tuple({k, v}));
    if (name == "keys") out.push_back(k);
    if (name == "values") out.push_back(v);
  }
  return Value::list(std::move(out));
}

Value list_method(const std::string& name, const Value& self, const CallArgs& args) {
  if (name == "count") return count_method(self, args);
  Arguments a(args, "index", {"x"});
  require_input(a.get(0) != nullptr, "index() takes at least 1 argument");
  const auto& items = self.items();
  for (size_t i = 0; i < items.size(); ++i) {
    if (values_equal(items[i], *a.get(0))) return Value(static_cast<int64_t>(i));
  }
  fail_input(to_python_repr(*a.get(0)), " is not in list");
}

bool is_string_method(const std::string& n) {
  static const char* const kNames[] = {"startswith",   "endswith",     "strip",      "lstrip",   "rstrip",
                                       "split",        "rsplit",       "find",       "rfind",    "index",
                                       "count",        "upper",        "lower",      "casefold", "title",
                                       "capitalize",   "swapcase",     "replace",    "join",     "format",
                                       "removeprefix", "removesuffix", "splitlines", "isdigit",  "isalpha",
                                       "isalnum",      "isspace",      "islower",    "isupper"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

}  // namespace

Value method_of(const Value& obj, const std::string& name) {
  if (obj.is_string() && is_string_method(name)) {
    return Value::function("str." + name,
                           [obj, name](const CallArgs& args) { return string_method(name, obj, args); });
  }
  if (obj.is_dict() && (name == "items" || name == "keys" || name == "values" || name == "get")) {
    return Value::function("dict." + name,
                           [obj, name](const CallArgs& args) { return dict_method(name, obj, args); });
  }
  if (obj.is_sequence() && (name == "index" || name == "count")) {
    return Value::function("list." + name,
                           [obj, name](const CallArgs& args) { return list_method(name, obj, args); });
  }
  return Value::undefined();
}

}  // namespace moe::jinja
