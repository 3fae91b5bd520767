// The environment switches: env_flag (set and non-zero means on), EnvSwitch (a default, NAME=0 turns it
// off and any other value on, read once, set() overrides) and EnvCount (a default, the environment's integer
// clamped into its range, read once, set() overrides and is clamped too), and reread_env_settings (every
// setting reads the environment again).
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

TEST(EnvCount, DefaultEnvironmentClampedReadOnceSetOverrides) {
  ::unsetenv("MOE_TEST_COUNT");
  EnvCount unset("MOE_TEST_COUNT", 2, 0, 3);
  EXPECT_EQ(unset.get(), 2);
  ::setenv("MOE_TEST_COUNT", "1", 1);
  EnvCount one("MOE_TEST_COUNT", 2, 0, 3);
  EXPECT_EQ(one.get(), 1);
  ::setenv("MOE_TEST_COUNT", "3", 1);
  EXPECT_EQ(one.get(), 1) << "read once, at the first get()";
  ::setenv("MOE_TEST_COUNT", "9", 1);
  EnvCount high("MOE_TEST_COUNT", 2, 0, 3);
  EXPECT_EQ(high.get(), 3);
  ::setenv("MOE_TEST_COUNT", "-4", 1);
  EnvCount low("MOE_TEST_COUNT", 2, 0, 3);
  EXPECT_EQ(low.get(), 0);
  low.set(2);
  EXPECT_EQ(low.get(), 2);
  low.set(7);
  EXPECT_EQ(low.get(), 3);
  ::unsetenv("MOE_TEST_COUNT");
}

}  // namespace
TEST(EnvSettings, RereadTakesTheChangedEnvironmentAndDropsSet) {
  ::setenv("MOE_TEST_SWITCH", "0", 1);
  ::setenv("MOE_TEST_COUNT", "1", 1);
  EnvSwitch sw("MOE_TEST_SWITCH");
  EnvCount count("MOE_TEST_COUNT", 2, 0, 3);
  EXPECT_FALSE(sw.get());
  EXPECT_EQ(count.get(), 1);
  ::setenv("MOE_TEST_SWITCH", "1", 1);
  ::setenv("MOE_TEST_COUNT", "3", 1);
  EXPECT_FALSE(sw.get()) << "read once until asked to read again";
  reread_env_settings();
  EXPECT_TRUE(sw.get());
  EXPECT_EQ(count.get(), 3);
  sw.set(false);
  count.set(0);
  reread_env_settings();
  EXPECT_TRUE(sw.get()) << "set() is dropped: the environment says 1";
  EXPECT_EQ(count.get(), 3);
  {
    EnvSwitch gone("MOE_TEST_SWITCH");  // destroyed before the next reread: must have left the registry
    EXPECT_TRUE(gone.get());
  }
  ::unsetenv("MOE_TEST_SWITCH");
  ::unsetenv("MOE_TEST_COUNT");
  reread_env_settings();
  EXPECT_TRUE(sw.get()) << "unset: the default";
  EXPECT_EQ(count.get(), 2);
}

}  // namespace moe
