// main(): parses the command line with CLI11 and runs one subcommand.
// Exit status: 0 on success, 2 on bad usage or bad input (one line on stderr
// naming the flag or the problem), 1 on any other failure.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "app/command.h"

namespace {

// CLI11 messages can span lines (e.g. lists of valid choices); the contract is one line.
std::string one_line(std::string message) {
  for (char& c : message)
    if (c == '\n' || c == '\r') c = ' ';
  while (!message.empty() && message.back() == ' ') message.pop_back();
  return message;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tandem: an overlap-scheduling LLM serving daemon", "tandem"};
  app.set_version_flag("--version", std::string(TANDEM_VERSION));
  // Not require_subcommand(): CLI11 would report a missing subcommand before an unknown
  // flag, and the flag is the more useful thing to name.
  app.require_subcommand(0, 1);
  app.failure_message(CLI::FailureMessage::simple);

  std::vector<tandem::app::Subcommand> subcommands;
  for (auto factory : tandem::app::subcommand_factories()) subcommands.push_back(factory(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = "invalid command line";
    // CLI11's words for a flag given twice ("At Most 1 required but received 2").
    if (const size_t at = what.find(": At Most 1 required but received");
        at != std::string::npos && e.get_name() == "ArgumentMismatch") {
      what = what.substr(0, at) + ": given more than once";
    }
    // Point at the help of the subcommand whose flags were being read, where there is one.
    std::string help = "tandem --help";
    for (const auto& sub : subcommands)
      if (sub.cli->parsed()) help = "tandem " + sub.cli->get_name() + " --help";
    std::cerr << "tandem: " << one_line(what) << " (see " << help << ")\n";
    return 2;
  }

  for (auto& sub : subcommands) {
    if (!sub.cli->parsed()) continue;
    try {
      return sub.run();
    } catch (const tandem::app::UsageError& e) {
      std::cerr << "tandem " << sub.cli->get_name() << ": " << one_line(e.what()) << "\n";
      return 2;
    } catch (const std::exception& e) {
      std::cerr << "tandem " << sub.cli->get_name() << ": " << one_line(e.what()) << "\n";
      return 1;
    }
  }
  std::cerr << "tandem: a subcommand is required (see tandem --help)\n";
  return 2;
}
