// Helpers shared by the test suites: where ../shared is, scratch directories,
// and running the real `tandem` binary as a user would.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tandem::testing {

// ../shared beside the repository, or nullopt when this clone has none.
std::optional<std::filesystem::path> shared_dir();

// Skips the current test, with a message, when ../shared is absent.
#define TANDEM_REQUIRE_SHARED()                                                      \
  do {                                                                               \
    if (!::tandem::testing::shared_dir())                                            \
      GTEST_SKIP() << "../shared is absent: golden files and vectors not available"; \
  } while (0)

// n draws of a standard normal variable from a Mersenne Twister seeded with `seed`: test
// activations, queries, keys and values, the same on every run.
std::vector<float> normal_floats(int64_t n, uint32_t seed);

// A fresh directory under the system temp dir, removed when the object dies.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path file(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs the built `tandem` binary with `args` (no shell) and collects its output.
CommandResult run_tandem(const std::vector<std::string>& args);

// Path to the built `tandem` binary.
std::string tandem_binary();

}  // namespace tandem::testing
