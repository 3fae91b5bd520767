// Functions every template can call: jinja2's range/dict/namespace plus the two HF adds (raise_exception,
// strftime_now).
#include <ctime>

#include "core/error.h"
#include "serve/jinja/builtins.h"
#include "serve/jinja/errors.h"

namespace moe::jinja {

namespace {

Value range_global(const CallArgs& args) {
  require_input(args.keyword.empty(), "range() takes no keyword arguments");
  const auto& p = args.positional;
  require_input(!p.empty() && p.size() <= 3, "range expected 1 to 3 arguments, got ", p.size());
  for (const auto& v : p)
    require_input(v.is_int() || v.is_bool(), "range(): '", v.type_name(), "' is not an integer");
  int64_t start = p.size() == 1 ? 0 : p[0].as_int();
  int64_t stop = p.size() == 1 ? p[0].as_int() : p[1].as_int();
  int64_t step = p.size() == 3 ? p[2].as_int() : 1;
  require_input(step != 0, "range() arg 3 must not be zero");
  // jinja2's sandbox caps ranges (MAX_RANGE) so a template cannot exhaust memory; so do we.
  constexpr int64_t kMaxRange = 100000;
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    require_input(static_cast<int64_t>(out.size()) < kMaxRange, "range too big, maximum size for range is ",
                  kMaxRange);
    out.emplace_back(i);
  }
  return Value::list(std::move(out));
}

// dict(mapping_or_pairs, **kwargs) and namespace(...) build their attributes the same way.
Dict dict_from_args(const CallArgs& args, std::string_view function) {
  require_input(args.positional.size() <= 1, function, " expected at most 1 positional argument");
  Dict d;
  if (!args.positional.empty()) {
    const Value& init = args.positional[0];
    if (init.is_dict() || init.is_object()) {
      d = init.as_dict();
    } else {
      for (const auto& pair : iterate(init)) {
        require_input(pair.is_sequence() && pair.items().size() == 2, function,
                      ": sequence elements must be key/value pairs");
        d.set(pair.items()[0], pair.items()[1]);
      }
    }
  }
  for (const auto& [k, v] : args.keyword) d.set(Value(k), v);
  return d;
}

Value strftime_now(const CallArgs& args, std::optional<std::time_t> pinned) {
  Arguments a(args, "strftime_now", {"format"});
  const Value* format = a.get(0);
  require_input(format && format->is_string(), "strftime_now needs a format string");
  std::time_t t = pinned ? *pinned : std::time(nullptr);
  std::tm parts{};
  // A pinned time is read as UTC so tests do not depend on the machine's zone; the live clock is local time,
  // as transformers' datetime.now() is.
  if (pinned) {
    gmtime_r(&t, &parts);
  } else {
    localtime_r(&t, &parts);
  }
  char buf[512];
  size_t n = std::strftime(buf, sizeof buf, format->as_string().c_str(), &parts);
  return Value(std::string(buf, n));
}

}  // namespace

Dict make_globals(std::optional<std::time_t> now) {
  Dict g;
  g.set(Value("range"), Value::function("range", range_global));
  g.set(Value("dict"),
        Value::function("dict", [](const CallArgs& a) { return Value::dict(dict_from_args(a, "dict")); }));
  g.set(Value("namespace"), Value::function("namespace", [](const CallArgs& a) {
          return Value::object("Namespace", dict_from_args(a, "namespace"));
        }));
  g.set(Value("raise_exception"), Value::function("raise_exception", [](const CallArgs& a) -> Value {
          Arguments args(a, "raise_exception", {"message"});
          throw RaiseExceptionCalled(to_python_str(args.get_or(0, Value(""))));
        }));
  g.set(Value("strftime_now"),
        Value::function("strftime_now", [now](const CallArgs& a) { return strftime_now(a, now); }));
  return g;
}

}  // namespace moe::jinja
