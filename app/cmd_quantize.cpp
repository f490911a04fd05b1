// `tandem quantize IN.gguf OUT.gguf TYPE`: rewrites a model with its weights quantized, by
// llama-quantize's per-tensor rules for the mixes (runner/model/quantize_model.h).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "app/cli_checks.h"
#include "app/command.h"
#include "runner/model/quantize_model.h"

namespace tandem::app {

namespace {

std::string mebibytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

Subcommand make_quantize_command(CLI::App& app) {
  struct Flags {
    std::string in, out, type;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cli = app.add_subcommand(
      "quantize",
      "Write a copy of a GGUF model with its weights quantized (llama-quantize's mixes)");
  cli->add_option("in", flags->in, "Input GGUF model (F32, F16, BF16 or quantized)")->required();
  cli->add_option("out", flags->out, "Output GGUF file")->required();
  // The mixes first; then the rest of the names, each one type for every weight matrix.
  std::vector<std::string> mixes, single;
  for (const std::string& name : quantize_model::target_names())
    (quantize_model::find_target(name)->mix ? mixes : single).push_back(name);
  cli->add_option("type", flags->type,
                  joined(mixes) + " (mixes), or one type for every weight matrix: " +
                      joined(single) + " (any case)")
      ->required();

  return {cli, [flags] {
            const auto target = quantize_model::find_target(flags->type);
            if (!target) {
              throw UsageError("unknown type '" + flags->type + "' (one of " +
                               joined(quantize_model::target_names()) + ")");
            }
            std::error_code ec;
            if (!std::filesystem::is_regular_file(flags->in, ec))
              throw UsageError(describe_non_file(flags->in));
            check_output_path("out", flags->out);
            // The output replaces its file only once written whole, so the same path (or a
            // link to the input) would have replaced the model with its quantized copy
            // without a word; llama-quantize would write over the file it reads.
            if (std::filesystem::equivalent(flags->in, flags->out, ec))
              throw UsageError("out: " + flags->out + " is the input file; write elsewhere");
            quantize_model::Report report;
            try {
              report = quantize_model::quantize_file(flags->in, flags->out, *target);
            } catch (const gguf::GgufError& e) {
              throw UsageError(e.what());
            }
            std::cout << "quantized " << flags->in << " -> " << flags->out << " as " << target->name
                      << " (general.file_type " << target->file_type << ")\n";
            for (const auto& [type, count] : report.tensors_by_type)
              std::cout << "  " << gguf::type_name(type) << ": " << count << " tensors\n";
            std::cout << "tensor data " << mebibytes(report.in_bytes) << " -> "
                      << mebibytes(report.out_bytes) << "; file " << report.out_file_bytes
                      << " bytes (" << mebibytes(report.out_file_bytes) << ")\n";
            return 0;
          }};
}

}  // namespace tandem::app
