#include "client/ctl/exec_image.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace leasekeeper::ctl {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

std::vector<std::string> Strings(char* const* array) {
  std::vector<std::string> strings;
  for (; *array != nullptr; ++array) strings.emplace_back(*array);
  return strings;
}

TEST(ExecImageTest, ArgvIsTheCommandLineAsGivenEndedByNull) {
  const ExecImage image({"/bin/echo", "a b", ""}, {});
  EXPECT_THAT(Strings(image.argv()), ElementsAre("/bin/echo", "a b", ""));
  EXPECT_EQ(image.argv()[3], nullptr);
}

TEST(ExecImageTest, EnvironmentIsInheritedWithAddedVariables) {
  ASSERT_EQ(setenv("EXEC_IMAGE_TEST_INHERITED", "kept", 1), 0);
  const ExecImage image({"/bin/true"}, {{"EXEC_IMAGE_TEST_ADDED", "x=y"}});
  const std::vector<std::string> env = Strings(image.envp());
  EXPECT_THAT(env, Contains("EXEC_IMAGE_TEST_INHERITED=kept"));
  EXPECT_THAT(env, Contains("EXEC_IMAGE_TEST_ADDED=x=y"));
  unsetenv("EXEC_IMAGE_TEST_INHERITED");
}

TEST(ExecImageTest, AddedVariableReplacesTheInheritedOneOfItsName) {
  ASSERT_EQ(setenv("EXEC_IMAGE_TEST_NAME", "old", 1), 0);
  const ExecImage image({"/bin/true"}, {{"EXEC_IMAGE_TEST_NAME", "new"}});
  const std::vector<std::string> env = Strings(image.envp());
  EXPECT_THAT(env, Contains("EXEC_IMAGE_TEST_NAME=new"));
  EXPECT_THAT(env, Not(Contains("EXEC_IMAGE_TEST_NAME=old")));
  unsetenv("EXEC_IMAGE_TEST_NAME");
}

TEST(ExecImageTest, EnvironmentIsOrderedByName) {
  const ExecImage image(
      {"/bin/true"}, {{"EXEC_IMAGE_TEST_B", "1"}, {"EXEC_IMAGE_TEST_A", "2"}});
  const std::vector<std::string> env = Strings(image.envp());
  EXPECT_TRUE(std::is_sorted(env.begin(), env.end()));
}

TEST(ShellExitCodeTest, ExitCodeOrOneHundredTwentyEightPlusTheSignal) {
  EXPECT_EQ(ShellExitCode(3 << 8), 3);     // exited with 3
  EXPECT_EQ(ShellExitCode(SIGKILL), 137);  // killed by SIGKILL
  EXPECT_EQ(ShellExitCode(0x137f), 1);     // stopped by SIGSTOP
}

}  // namespace
}  // namespace leasekeeper::ctl
