// Jinja filters over sequences and mappings. jinja2 returns generators from select/map/unique/reverse; we
// return lists, which iterate, test and print through |list identically.
#include <algorithm>

#include "core/error.h"
#include "serve/jinja/builtins.h"
#include "serve/jinja/string_ops.h"

namespace moe::jinja {

namespace {

// make_attrgetter: "a.b.0" looks up item a, then b, then index 0 (jinja2's environment.getitem).
Value lookup_path(const Value& item, const std::string& path) {
  Value current = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    current = get_item(current, numeric ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

Value lower_if_string(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(python_lower(v.as_string())) : v;
}

// select / reject / selectattr / rejectattr share jinja2's select_or_reject.
Value select_or_reject(const Value& seq, const CallArgs& args, bool by_attribute, bool keep_when) {
  size_t first_test_arg = by_attribute ? 1 : 0;
  std::string attribute;
  if (by_attribute) {
    require_input(!args.positional.empty() && args.positional[0].is_string(),
                  "selectattr/rejectattr need an attribute");
    attribute = args.positional[0].as_string();
  }
  std::string test;
  CallArgs test_args;
  if (args.positional.size() > first_test_arg) {
    test = to_python_str(args.positional[first_test_arg]);
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(first_test_arg) + 1,
                                args.positional.end());
    test_args.keyword = args.keyword;
    require_input(has_test(test), "no test named '", test, "'");
  }
  ValueList out;
  for (const auto& item : iterate(seq)) {
    Value subject = by_attribute ? lookup_path(item, attribute) : item;
    bool passed = test.empty() ? subject.truthy() : apply_test(test, subject, test_args);
    if (passed == keep_when) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value map_filter(const Value& seq, const CallArgs& args) {
  ValueList out;
  const Value* attribute = args.keyword_arg("attribute");
  if (attribute) {
    const Value* fallback = args.keyword_arg("default");
    for (const auto& item : iterate(seq)) {
      Value v = lookup_path(item, to_python_str(*attribute));
      out.push_back(v.is_undefined() && fallback ? *fallback : v);
    }
    return Value::list(std::move(out));
  }
  require_input(!args.positional.empty(), "map needs a filter name or attribute=");
  std::string filter = to_python_str(args.positional[0]);
  CallArgs filter_args;
  filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
  filter_args.keyword = args.keyword;
  for (const auto& item : iterate(seq)) out.push_back(apply_filter(filter, item, filter_args));
  return Value::list(std::move(out));
}

Value sort_filter(const Value& seq, const CallArgs& args) {
  Arguments a(args, "sort", {"reverse", "case_sensitive", "attribute"});
  bool reverse = a.get_or(0, Value(false)).truthy();
  bool case_sensitive = a.get_or(1, Value(false)).truthy();
  Value attribute = a.get_or(2, Value::none());
  ValueList items = iterate(seq);
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& item : items) {
    Value key = attribute.is_none() ? item : lookup_path(item, to_python_str(attribute));
    keyed.emplace_back(lower_if_string(key, case_sensitive), item);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? compare_values(y.first, x.first) < 0 : compare_values(x.first, y.first) < 0;
  });
  ValueList out;
  for (auto& [k, item] : keyed) out.push_back(item);
  return Value::list(std::move(out));
}

Value dictsort_filter(const Value& d, const CallArgs& args) {
  Arguments a(args, "dictsort", {"case_sensitive", "by", "reverse"});
  require_input(d.is_dict(), "dictsort: expected a dict, not ", d.type_name());
  bool case_sensitive = a.get_or(0, Value(false)).truthy();
  std::string by = to_python_str(a.get_or(1, Value("key")));
  bool reverse = a.get_or(2, Value(false)).truthy();
  require_input(by == "key" || by == "value", "You can only sort by either 'key' or 'value'");
  auto entries = d.as_dict().entries;
  std::stable_sort(entries.begin(), entries.end(), [&](const auto& x, const auto& y) {
    Value kx = lower_if_string(by == "key" ? x.first : x.second, case_sensitive);
    Value ky = lower_if_string(by == "key" ? y.first : y.second, case_sensitive);
    return reverse ? compare_values(ky, kx) < 0 : compare_values(kx, ky) < 0;
  });
  ValueList out;
  for (auto& [k, v] : entries) out.push_back(Value::tuple({k, v}));
  return Value::list(std::move(out));
}

Value unique_filter(const Value& seq, const CallArgs& args) {
  Arguments a(args, "unique", {"case_sensitive", "attribute"});
  bool case_sensitive = a.get_or(0, Value(false)).truthy();
  Value attribute = a.get_or(1, Value::none());
  ValueList out, seen;
  for (const auto& item : iterate(seq)) {
    Value key = lower_if_string(attribute.is_none() ? item : lookup_path(item, to_python_str(attribute)),
                                case_sensitive);
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, key); })) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value min_max(const Value& seq, const CallArgs& args, bool want_max) {
  Arguments a(args, want_max ? "max" : "min", {"case_sensitive", "attribute"});
  bool case_sensitive = a.get_or(0, Value(false)).truthy();
  Value attribute = a.get_or(1, Value::none());
  ValueList items = iterate(seq);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& v) {
    return lower_if_string(attribute.is_none() ? v : lookup_path(v, to_python_str(attribute)),
                           case_sensitive);
  };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    int c = compare_values(key(items[i]), key(items[best]));
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}

Value join_filter(const Value& seq, const CallArgs& args) {
  Arguments a(args, "join", {"d", "attribute"});
  std::string separator = to_python_str(a.get_or(0, Value("")));
  Value attribute = a.get_or(1, Value::none());
  std::string out;
  bool first = true;
  for (const auto& item : iterate(seq)) {
    if (!first) out += separator;
    first = false;
    out += to_python_str(attribute.is_none() ? item : lookup_path(item, to_python_str(attribute)));
  }
  return Value(std::move(out));
}

}  // namespace

bool apply_collection_filter(const std::string& name, const Value& v, const CallArgs& args, Value& out) {
  if (name == "join") {
    out = join_filter(v, args);
  } else if (name == "list") {
    out = Value::list(iterate(v));
  } else if (name == "first" || name == "last") {
    ValueList items = iterate(v);
    out = items.empty() ? Value::undefined(str("No ", name, " item, sequence was empty."))
                        : (name == "first" ? items.front() : items.back());
  } else if (name == "items") {
    ValueList pairs;
    if (!v.is_undefined()) {
      require_input(v.is_dict(), "items: can only get item pairs from a mapping.");
      for (const auto& [k, e] : v.as_dict().entries) pairs.push_back(Value::tuple({k, e}));
    }
    out = Value::list(std::move(pairs));
  } else if (name == "dictsort") {
    out = dictsort_filter(v, args);
  } else if (name == "select" || name == "reject") {
    out = select_or_reject(v, args, false, name == "select");
  } else if (name == "selectattr" || name == "rejectattr") {
    out = select_or_reject(v, args, true, name == "selectattr");
  } else if (name == "map") {
    out = map_filter(v, args);
  } else if (name == "unique") {
    out = unique_filter(v, args);
  } else if (name == "reverse") {
    if (v.is_string()) {
      out = slice(v, Value::none(), Value::none(), Value(int64_t{-1}));
    } else {
      ValueList items = iterate(v);
      std::reverse(items.begin(), items.end());
      out = Value::list(std::move(items));
    }
  } else if (name == "sort") {
    out = sort_filter(v, args);
  } else if (name == "min" || name == "max") {
    out = min_max(v, args, name == "max");
  } else if (name == "sum") {
    Arguments a(args, "sum", {"attribute", "start"});
    Value attribute = a.get_or(0, Value::none());
    out = a.get_or(1, Value(int64_t{0}));
    for (const auto& item : iterate(v)) {
      out = binary_op("+", out, attribute.is_none() ? item : lookup_path(item, to_python_str(attribute)));
    }
  } else if (name == "batch") {
    Arguments a(args, "batch", {"linecount", "fill_with"});
    int64_t size = a.get_or(0, Value(int64_t{1})).as_int();
    require_input(size > 0, "batch size must be positive");
    const Value* fill = a.get(1);
    ValueList batches, current;
    for (const auto& item : iterate(v)) {
      current.push_back(item);
      if (static_cast<int64_t>(current.size()) == size)
        batches.push_back(Value::list(std::exchange(current, {})));
    }
    if (!current.empty()) {
      while (fill && !fill->is_none() && static_cast<int64_t>(current.size()) < size)
        current.push_back(*fill);
      batches.push_back(Value::list(std::move(current)));
    }
    out = Value::list(std::move(batches));
  } else {
    return false;
  }
  return true;
}

}  // namespace moe::jinja
