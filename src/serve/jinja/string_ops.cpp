#include "serve/jinja/string_ops.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "serve/jinja/utf8.h"

namespace moe::jinja {

namespace {

std::vector<uint32_t> decode(std::string_view s) {
  std::vector<uint32_t> cps;
  for (size_t pos = 0; pos < s.size();) cps.push_back(next_code_point(s, pos));
  return cps;
}

bool ascii_alpha(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0;
}
char to_upper(char c) {
  return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
}
char to_lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

}  // namespace

bool is_python_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

std::string python_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<uint32_t> strip_set;
  if (chars) strip_set = decode(*chars);
  auto strippable = [&](uint32_t cp) {
    return chars ? std::find(strip_set.begin(), strip_set.end(), cp) != strip_set.end() : is_python_space(cp);
  };
  auto offsets = code_point_offsets(s);
  size_t first = 0, last = offsets.size() - 1;  // code point range [first, last)
  auto cp_at = [&](size_t i) {
    size_t pos = offsets[i];
    return next_code_point(s, pos);
  };
  if (left) {
    while (first < last && strippable(cp_at(first))) ++first;
  }
  if (right) {
    while (last > first && strippable(cp_at(last - 1))) --last;
  }
  return std::string(s.substr(offsets[first], offsets[last] - offsets[first]));
}

std::vector<std::string> python_split(std::string_view s, std::string_view sep, int64_t maxsplit,
                                      bool from_right) {
  require_input(!sep.empty(), "empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      size_t at = s.find(sep, start);
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(start, at - start));
      start = at + sep.size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
  }
  size_t end = s.size();
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    if (end < sep.size()) break;
    size_t at = s.rfind(sep, end - sep.size());
    if (at == std::string_view::npos) break;
    parts.emplace_back(s.substr(at + sep.size(), end - at - sep.size()));
    end = at;
  }
  parts.emplace_back(s.substr(0, end));
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> python_split_whitespace(std::string_view s, int64_t maxsplit, bool from_right) {
  // Words are maximal runs of non-space code points; once maxsplit is reached the rest is one word
  // (with its far-side whitespace stripped), as in Python.
  auto cps_offsets = code_point_offsets(s);
  const size_t n = cps_offsets.size() - 1;
  auto space_at = [&](size_t i) {
    size_t pos = cps_offsets[i];
    return is_python_space(next_code_point(s, pos));
  };
  auto piece = [&](size_t a, size_t b) {
    return std::string(s.substr(cps_offsets[a], cps_offsets[b] - cps_offsets[a]));
  };
  std::vector<std::string> parts;
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < n && space_at(i)) ++i;
      if (i >= n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t end = n;
        while (end > i && space_at(end - 1)) --end;
        parts.push_back(piece(i, end));
        break;
      }
      size_t j = i;
      while (j < n && !space_at(j)) ++j;
      parts.push_back(piece(i, j));
      i = j;
    }
    return parts;
  }
  size_t i = n;
  while (true) {
    while (i > 0 && space_at(i - 1)) --i;
    if (i == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      size_t begin = 0;
      while (begin < i && space_at(begin)) ++begin;
      parts.push_back(piece(begin, i));
      break;
    }
    size_t j = i;
    while (j > 0 && !space_at(j - 1)) --j;
    parts.push_back(piece(j, i));
    i = j;
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> python_splitlines(std::string_view s) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.emplace_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

std::string python_replace(std::string_view s, std::string_view old, std::string_view replacement,
                           int64_t count) {
  std::string out;
  if (old.empty()) {  // Python inserts the replacement around every code point
    auto offsets = code_point_offsets(s);
    int64_t done = 0;
    for (size_t i = 0; i + 1 < offsets.size(); ++i) {
      if (count < 0 || done < count) out += replacement, ++done;
      out += s.substr(offsets[i], offsets[i + 1] - offsets[i]);
    }
    if (count < 0 || done < count) out += replacement;
    return out;
  }
  size_t start = 0;
  for (int64_t done = 0; count < 0 || done < count; ++done) {
    size_t at = s.find(old, start);
    if (at == std::string_view::npos) break;
    out += s.substr(start, at - start);
    out += replacement;
    start = at + old.size();
  }
  out += s.substr(start);
  return out;
}

namespace {

// Simple case mapping for the scripts chat content commonly uses (Latin-1, Latin Extended-A, Greek,
// Cyrillic); other code points are left alone.
uint32_t lower_code_point(uint32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17F) {
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (c == 0x178) return 0xFF;
    if (odd_upper ? (c % 2 == 1) : (c % 2 == 0)) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

uint32_t upper_code_point(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17F) {
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_upper ? (c % 2 == 0) : (c % 2 == 1)) return c - 1;
    return c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;  // final sigma
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

}  // namespace

std::string python_upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    uint32_t cp = next_code_point(s, pos);
    if (cp == 0xDF) {
      out += "SS";  // German sharp s upper-cases to two letters, as in Python
    } else {
      append_utf8(out, upper_code_point(cp));
    }
  }
  return out;
}

std::string python_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) append_utf8(out, lower_code_point(next_code_point(s, pos)));
  return out;
}

std::string ascii_swapcase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = std::isupper(static_cast<unsigned char>(c)) ? to_lower(c) : to_upper(c);
  return out;
}

std::string python_title(std::string_view s) {
  std::string out(s);
  bool previous_cased = false;
  for (char& c : out) {
    bool cased = ascii_alpha(c);
    c = cased ? (previous_cased ? to_lower(c) : to_upper(c)) : c;
    previous_cased = cased;
  }
  return out;
}

std::string python_capitalize(std::string_view s) {
  std::string out = python_lower(s);
  if (!out.empty()) out[0] = to_upper(out[0]);
  return out;
}

bool python_string_predicate(std::string_view name, std::string_view s) {
  if (s.empty()) return false;
  auto all = [&](auto&& pred) {
    return std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)); });
  };
  if (name == "isdigit") return all([](unsigned char c) { return std::isdigit(c) != 0; });
  if (name == "isalpha") return all([](unsigned char c) { return std::isalpha(c) != 0; });
  if (name == "isalnum") return all([](unsigned char c) { return std::isalnum(c) != 0; });
  if (name == "isspace") {
    for (uint32_t cp : decode(s)) {
      if (!is_python_space(cp)) return false;
    }
    return true;
  }
  bool has_cased = std::any_of(s.begin(), s.end(), [](char c) { return ascii_alpha(c); });
  if (name == "islower")
    return has_cased && !std::any_of(s.begin(), s.end(),
                                     [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
  return has_cased &&
         !std::any_of(s.begin(), s.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); });
}

// str.format with {} / {0} / {name} fields and {{ }} escapes; format specs and conversions are not supported.
std::string python_str_format(std::string_view format, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '}') {
      require_input(i + 1 < format.size() && format[i + 1] == '}', "Single '}' encountered in format string");
      out += '}';
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = format.find('}', i);
    require_input(close != std::string_view::npos, "Single '{' encountered in format string");
    std::string field(format.substr(i + 1, close - i - 1));
    require_input(field.find_first_of(":!.[") == std::string::npos, "str.format: field '{", field,
                  "}' uses a format spec, conversion or lookup, which is not supported");
    const Value* v = nullptr;
    if (field.empty() || std::all_of(field.begin(), field.end(),
                                     [](char d) { return std::isdigit(static_cast<unsigned char>(d)); })) {
      size_t index = field.empty() ? auto_index++ : std::stoul(field);
      require_input(index < args.positional.size(), "Replacement index ", index, " out of range");
      v = &args.positional[index];
    } else {
      v = args.keyword_arg(field);
      require_input(v != nullptr, "str.format: missing keyword '", field, "'");
    }
    out += to_python_str(*v);
    i = close;
  }
  return out;
}

}  // namespace moe::jinja
