#include "core/env_ab.h"

#include <cstdlib>

#include "core/error.h"

namespace moe {
namespace {

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (size_t at = s.find(sep); at != std::string::npos; at = s.find(sep, begin)) {
    parts.push_back(s.substr(begin, at - begin));
    begin = at + 1;
  }
  parts.push_back(s.substr(begin));
  return parts;
}

}  // namespace

EnvAb parse_env_ab(const std::string& spec) {
  const size_t eq = spec.find('=');
  require_input(eq != std::string::npos && eq > 0, "--env-ab: expected VAR=V1,V2 or A+B=1+0,1+1 (got '", spec,
                "')");
  EnvAb ab;
  ab.vars = spec.substr(0, eq);
  const std::vector<std::string> names = split_on(ab.vars, '+');
  for (const std::string& name : names)
    require_input(!name.empty() && name.find_first_of(" \t,") == std::string::npos,
                  "--env-ab: bad variable name '", name, "' in '", spec, "'");
  const std::string values = spec.substr(eq + 1);
  require_input(!values.empty(), "--env-ab: no values for ", ab.vars);
  for (const std::string& label : split_on(values, ',')) {
    const std::vector<std::string> parts = names.size() > 1 ? split_on(label, '+') : std::vector{label};
    require_input(!label.empty() && parts.size() == names.size(), "--env-ab: setting '", label, "' has ",
                  label.empty() ? 0 : parts.size(), " value(s) for the ", names.size(), " variable(s) ",
                  ab.vars);
    EnvAbSetting setting{label, {}};
    for (size_t i = 0; i < names.size(); ++i) setting.assignments.emplace_back(names[i], parts[i]);
    ab.settings.push_back(std::move(setting));
  }
  return ab;
}

bool apply_env_ab_setting(const EnvAbSetting& setting) {
  for (const auto& [name, value] : setting.assignments)
    if (::setenv(name.c_str(), value.c_str(), 1) != 0) return false;
  return true;
}

}  // namespace moe
