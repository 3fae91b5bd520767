#include "cli/args.h"

#include <cstdlib>

#include "core/error.h"

namespace moe::cli {

Args::Args(int argc, char** argv, const std::set<std::string>& options, const std::set<std::string>& flags) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      positional_.push_back(a);
      continue;
    }
    std::string key = a.substr(2), value;
    const auto eq = key.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    if (flags.count(key)) {
      require_input(!inline_value, "option --", key, " takes no value");
      values_[key] = "1";
    } else if (options.count(key)) {
      if (!inline_value) {
        require_input(i + 1 < argc, "option --", key, " needs a value");
        value = argv[++i];
      }
      values_[key] = value;
    } else {
      fail_input("unknown option --", key);
    }
  }
}

std::string Args::str(const std::string& key, const std::string& dflt) const {
  const auto it = values_.find(key);
  return it == values_.end() ? dflt : it->second;
}

std::string Args::required(const std::string& key) const {
  const auto it = values_.find(key);
  require_input(it != values_.end(), "missing required option --", key);
  return it->second;
}

int64_t Args::integer(const std::string& key, int64_t dflt) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return dflt;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  require_input(!it->second.empty() && *end == '\0', "option --", key, " needs an integer, got '", it->second,
                "'");
  return v;
}

double Args::number(const std::string& key, double dflt) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return dflt;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  require_input(!it->second.empty() && *end == '\0', "option --", key, " needs a number, got '", it->second,
                "'");
  return v;
}

}  // namespace moe::cli
