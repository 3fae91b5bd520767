// moe bench --env-ab's settings: one variable ("VAR=V1,V2") or several at once ("A+B=1+0,1+1"), each setting
// applied to the environment; malformed specs refused with an input error.
#include "core/env_ab.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace moe {
namespace {

TEST(EnvAb, OneVariableEachValueInOrder) {
  const EnvAb ab = parse_env_ab("MOE_X=8,32");
  EXPECT_EQ(ab.vars, "MOE_X");
  ASSERT_EQ(ab.settings.size(), 2u);
  EXPECT_EQ(ab.settings[0].label, "8");
  EXPECT_EQ(ab.settings[1].label, "32");
  ASSERT_EQ(ab.settings[1].assignments.size(), 1u);
  EXPECT_EQ(ab.settings[1].assignments[0].first, "MOE_X");
  EXPECT_EQ(ab.settings[1].assignments[0].second, "32");
}

TEST(EnvAb, SeveralVariablesTakeOneValueEach) {
  const EnvAb ab = parse_env_ab("MOE_A+MOE_B=0+0,1+0,0+1,1+1");
  EXPECT_EQ(ab.vars, "MOE_A+MOE_B");
  ASSERT_EQ(ab.settings.size(), 4u);
  EXPECT_EQ(ab.settings[2].label, "0+1");
  ASSERT_EQ(ab.settings[2].assignments.size(), 2u);
  EXPECT_EQ(ab.settings[2].assignments[0], (std::pair<std::string, std::string>{"MOE_A", "0"}));
  EXPECT_EQ(ab.settings[2].assignments[1], (std::pair<std::string, std::string>{"MOE_B", "1"}));
}

TEST(EnvAb, AppliesEveryVariableOfASetting) {
  ::unsetenv("MOE_TEST_AB_A");
  ::unsetenv("MOE_TEST_AB_B");
  const EnvAb ab = parse_env_ab("MOE_TEST_AB_A+MOE_TEST_AB_B=1+7,0+9");
  ASSERT_TRUE(apply_env_ab_setting(ab.settings[0]));
  EXPECT_STREQ(std::getenv("MOE_TEST_AB_A"), "1");
  EXPECT_STREQ(std::getenv("MOE_TEST_AB_B"), "7");
  ASSERT_TRUE(apply_env_ab_setting(ab.settings[1]));
  EXPECT_STREQ(std::getenv("MOE_TEST_AB_A"), "0");
  EXPECT_STREQ(std::getenv("MOE_TEST_AB_B"), "9");
  ::unsetenv("MOE_TEST_AB_A");
  ::unsetenv("MOE_TEST_AB_B");
}

TEST(EnvAb, MalformedSpecsAreInputErrors) {
  for (const char* bad : {"MOE_X", "=1,2", "MOE_X=", "MOE_A+MOE_B=1,0+1", "MOE_A+MOE_B=1+0+1",
                          "MOE_A++MOE_B=1+0+1", "MOE_X=1,,2", "MOE_A+=1+0"}) {
    EXPECT_THROW(parse_env_ab(bad), InputError) << bad;
  }
}

}  // namespace
}  // namespace moe
