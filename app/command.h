// The `tandem` command's subcommands. Each file app/cmd_<name>.cpp registers one
// subcommand on the CLI11 app and returns the function that runs it once parsed.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tandem::app {

// Bad input found after parsing (a file that is not a model, a value out of
// range): main prints its message on one line and exits with status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Subcommand {
  CLI::App* cli = nullptr;
  std::function<int()> run;  // returns the process exit status
};

// One registration function per subcommand; main calls each in turn.
using SubcommandFactory = Subcommand (*)(CLI::App& app);
const std::vector<SubcommandFactory>& subcommand_factories();

}  // namespace tandem::app
