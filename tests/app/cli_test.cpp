// The `tandem` command line: help, version, and clean exits on bad usage.
#include <gtest/gtest.h>

#include "tests/common/test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

TEST(Cli, HelpListsUsageAndExitsZero) {
  auto r = run_tandem({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Usage:"), std::string::npos) << r.out;
}

TEST(Cli, VersionPrintsTheProjectVersion) {
  auto r = run_tandem({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find('.'), std::string::npos) << r.out;
}

TEST(Cli, UnknownFlagExitsTwoWithOneLineNamingIt) {
  auto r = run_tandem({"--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--no-such-flag"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected exactly one line: " << r.err;
}

TEST(Cli, MissingSubcommandExitsTwo) {
  auto r = run_tandem({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
