#include "serve/jinja/python_format.h"

#include <algorithm>

#include "core/error.h"
#include "serve/jinja/utf8.h"

namespace moe::jinja {

namespace {

void append_u_escape(std::string& out, uint32_t unit) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04x", unit);
  out += buf;
}

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  size_t pos = 0;
  while (pos < s.size()) {
    uint32_t cp = next_code_point(s, pos);
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (cp < 0x20 || (ensure_ascii && cp == 0x7F)) {
      append_u_escape(out, cp);
    } else if (ensure_ascii && cp > 0x7F) {
      if (cp >= 0x10000) {  // Python writes astral code points as a UTF-16 surrogate pair
        uint32_t v = cp - 0x10000;
        append_u_escape(out, 0xD800 | (v >> 10));
        append_u_escape(out, 0xDC00 | (v & 0x3FF));
      } else {
        append_u_escape(out, cp);
      }
    } else {
      append_utf8(out, cp);
    }
  }
  out += '"';
}

std::string json_key(const Value& k) {
  if (k.is_string()) return k.as_string();
  if (k.is_bool()) return k.as_bool() ? "true" : "false";
  if (k.is_none()) return "null";
  if (k.is_int() || k.is_float()) return to_python_str(k);
  fail_input("keys must be str, int, float, bool or None, not ", k.type_name());
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator.value_or(o.indent ? "," : ", ");
    key_sep_ = o.key_separator.value_or(": ");
  }

  void dump(const Value& v, int depth) {
    using K = Value::Kind;
    switch (v.kind()) {
      case K::kNone:
        out += "null";
        return;
      case K::kBool:
        out += v.as_bool() ? "true" : "false";
        return;
      case K::kInt:
        out += std::to_string(v.as_int());
        return;
      case K::kFloat: {
        std::string r = python_float_repr(v.as_double());
        out += r == "nan" ? "NaN" : r == "inf" ? "Infinity" : r == "-inf" ? "-Infinity" : r;
        return;
      }
      case K::kString:
        append_json_string(out, v.as_string(), o_.ensure_ascii);
        return;
      case K::kList:
      case K::kTuple:
        dump_list(v.items(), depth);
        return;
      case K::kDict:
        dump_dict(v.as_dict(), depth);
        return;
      default:
        fail_input("Object of type ", v.type_name(), " is not JSON serializable");
    }
  }

  std::string out;

 private:
  void newline(int depth) {
    if (!o_.indent) return;
    out += '\n';
    out.append(static_cast<size_t>(std::max(0, *o_.indent) * depth), ' ');
  }

  void dump_list(const ValueList& items, int depth) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += item_sep_;
      newline(depth + 1);
      dump(items[i], depth + 1);
    }
    newline(depth);
    out += ']';
  }

  void dump_dict(const Dict& d, int depth) {
    if (d.entries.empty()) {
      out += "{}";
      return;
    }
    std::vector<std::pair<std::string, const Value*>> entries;
    for (const auto& [k, v] : d.entries) entries.emplace_back(json_key(k), &v);
    if (o_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    out += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out += item_sep_;
      newline(depth + 1);
      append_json_string(out, entries[i].first, o_.ensure_ascii);
      out += key_sep_;
      dump(*entries[i].second, depth + 1);
    }
    newline(depth);
    out += '}';
  }

  const JsonDumpOptions& o_;
  std::string item_sep_;
  std::string key_sep_;
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  Dumper d(options);
  d.dump(v, 0);
  return std::move(d.out);
}

}  // namespace moe::jinja
