// The environment switches: env_flag (set and non-zero means on) and EnvSwitch (a default, NAME=0 turns it
// off and any other value on, read once, set() overrides).
#include "core/env_flag.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace moe {
namespace {

TEST(EnvFlag, OnlyNonZeroIntegersAreOn) {
  ::unsetenv("MOE_TEST_FLAG");
  EXPECT_FALSE(env_flag("MOE_TEST_FLAG"));
  ::setenv("MOE_TEST_FLAG", "0", 1);
  EXPECT_FALSE(env_flag("MOE_TEST_FLAG"));
  ::setenv("MOE_TEST_FLAG", "1", 1);
  EXPECT_TRUE(env_flag("MOE_TEST_FLAG"));
  ::unsetenv("MOE_TEST_FLAG");
}

TEST(EnvSwitch, DefaultOnZeroTurnsOffSetOverrides) {
  ::unsetenv("MOE_TEST_SWITCH");
  EnvSwitch unset("MOE_TEST_SWITCH");
  EXPECT_TRUE(unset.get());

  ::setenv("MOE_TEST_SWITCH", "0", 1);
  EnvSwitch off("MOE_TEST_SWITCH");
  EXPECT_FALSE(off.get());
  ::setenv("MOE_TEST_SWITCH", "1", 1);
  EXPECT_FALSE(off.get()) << "read once, at the first get()";
  off.set(true);
  EXPECT_TRUE(off.get());
  off.set(false);
  EXPECT_FALSE(off.get());

  EnvSwitch other("MOE_TEST_SWITCH");  // "1": anything but 0 keeps it on
  EXPECT_TRUE(other.get());
  ::unsetenv("MOE_TEST_SWITCH");
}

TEST(EnvSwitch, DefaultOffAnyNonZeroValueTurnsOn) {
  ::unsetenv("MOE_TEST_SWITCH");
  EnvSwitch unset("MOE_TEST_SWITCH", false);
  EXPECT_FALSE(unset.get());
  ::setenv("MOE_TEST_SWITCH", "1", 1);
  EnvSwitch on("MOE_TEST_SWITCH", false);
  EXPECT_TRUE(on.get());
  ::setenv("MOE_TEST_SWITCH", "0", 1);
  EnvSwitch off("MOE_TEST_SWITCH", false);
  EXPECT_FALSE(off.get());
  off.set(true);
  EXPECT_TRUE(off.get());
  ::unsetenv("MOE_TEST_SWITCH");
}

}  // namespace
}  // namespace moe
