// The list of subcommands `tandem` offers. Each issue that builds a subcommand adds it here.
#include "app/command.h"

namespace tandem::app {

const std::vector<SubcommandFactory>& subcommand_factories() {
  static const std::vector<SubcommandFactory> factories = {};
  return factories;
}

}  // namespace tandem::app
