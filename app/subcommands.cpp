// The list of subcommands `tandem` offers. Each issue that builds a subcommand adds it here.
#include "app/command.h"

namespace tandem::app {

Subcommand make_model_subcommand(CLI::App& app);
Subcommand make_generate_command(CLI::App& app);
Subcommand make_serve_command(CLI::App& app);
Subcommand make_bench_command(CLI::App& app);
Subcommand make_quantize_command(CLI::App& app);

const std::vector<SubcommandFactory>& subcommand_factories() {
  static const std::vector<SubcommandFactory> factories = {
      make_model_subcommand, make_generate_command, make_serve_command,
      make_bench_command,    make_quantize_command,
  };
  return factories;
}

}  // namespace tandem::app
