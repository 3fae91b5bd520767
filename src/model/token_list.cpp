#include "model/token_list.h"

#include <cctype>

#include "core/error.h"

namespace moe::model {

std::vector<int32_t> parse_token_list(const std::string& text, const std::string& what) {
  std::vector<int32_t> out;
  std::string cur;
  auto flush = [&] {
    size_t b = 0, e = cur.size();
    while (b < e && std::isspace(static_cast<unsigned char>(cur[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(cur[e - 1]))) --e;
    const std::string item = cur.substr(b, e - b);
    require_input(!item.empty(), what, ": empty entry in '", text, "'");
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      fail_input(what, ": '", item, "' is not a token id");
    }
    require_input(used == item.size() && v >= 0 && v <= INT32_MAX, what, ": '", item, "' is not a token id");
    out.push_back(static_cast<int32_t>(v));
    cur.clear();
  };
  for (const char c : text) {
    if (c == ',')
      flush();
    else
      cur += c;
  }
  flush();
  return out;
}

}  // namespace moe::model
