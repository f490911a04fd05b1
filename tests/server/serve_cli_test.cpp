// `tandem serve` refusing bad input before it serves: bad flags and bad model files exit 2
// with one line naming the problem; an address already in use too.
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

void expect_usage_error(const CommandResult& r, const std::string& named) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
}

TEST(ServeCli, BadFlagsExit2NamingTheFlag) {
  const std::string model = tiny_model().string();
  expect_usage_error(run_tandem({"serve", "--model", model, "--port", "http"}), "--port");
  expect_usage_error(run_tandem({"serve", "--model", model, "--overlap", "maybe"}), "--overlap");
  expect_usage_error(run_tandem({"serve", "--model", model, "--max-batch", "0"}), "--max-batch");
  expect_usage_error(run_tandem({"serve", "--model", model, "--max-body", "-5"}), "--max-body");
  expect_usage_error(run_tandem({"serve", "--model", model, "--io-threads", "0"}), "--io-threads");
  expect_usage_error(run_tandem({"serve", "--model", model, "--frobnicate"}), "--frobnicate");
  expect_usage_error(run_tandem({"serve", "--model", model, "--kv-prefault", "-1"}),
                     "--kv-prefault");
}

// --kv-prefault N writes the pages of the cache's first N positions (in whole blocks) at
// startup and says so; by default nothing is written and nothing is said.
TEST(ServeCli, KvPrefaultWritesTheFirstPositionsPagesAndSaysSo) {
  ServerProcess server(tiny_model(), {"--kv-tokens", "4096", "--kv-prefault", "100"});
  EXPECT_NE(server.ready_line().find("the first 112 positions' pages written in "),
            std::string::npos)
      << server.ready_line();
  EXPECT_EQ(shared_server().ready_line().find("pages written"), std::string::npos)
      << shared_server().ready_line();
}

TEST(ServeCli, AMissingOrBadModelFileExits2WithOneLine) {
  expect_usage_error(run_tandem({"serve", "--model", "/no/such/model.gguf"}), "--model");
  ScratchDir dir;
  std::ofstream(dir.file("not.gguf")) << "this is not a GGUF file at all";
  expect_usage_error(run_tandem({"serve", "--model", dir.file("not.gguf").string()}), "--model");
}

TEST(ServeCli, AnAddressInUseExits2NamingIt) {
  const std::string port = std::to_string(shared_server().port());
  expect_usage_error(run_tandem({"serve", "--model", tiny_model().string(), "--port", port,
                                 "--kv-tokens", "4096"}),
                     "--port");
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
