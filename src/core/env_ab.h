#pragma once
// The settings of an A/B in one process (moe bench --env-ab): "VAR=V1,V2,..." sets one environment variable
// to each value in turn; "A+B=1+0,1+1" sets several at once, the variables joined by '+' and each setting's
// values in the same order (a 2x2 of two switches in one process, with the weights set up once).
#include <string>
#include <utility>
#include <vector>

namespace moe {

struct EnvAbSetting {
  std::string label;                                             // as given: "1+0"
  std::vector<std::pair<std::string, std::string>> assignments;  // {{"A", "1"}, {"B", "0"}}
};

struct EnvAb {
  std::string vars;                    // as given: "A+B"; empty: no A/B
  std::vector<EnvAbSetting> settings;  // in the order given
};

// Throws InputError naming what is wrong: no '=', an empty variable name, no values, or a setting whose
// count of values is not the count of variables.
EnvAb parse_env_ab(const std::string& spec);

// Sets every variable of the setting in the environment (setenv); false if one could not be set.
bool apply_env_ab_setting(const EnvAbSetting& setting);

}  // namespace moe
