// The `tandem` command's subcommands. Each file app/cmd_<name>.cpp registers one
// subcommand on the CLI11 app and returns the function that runs it once parsed.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "scheduler/scheduler.h"

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

// --kv-dtype, as serve, generate and bench take it: the KV cache's element type.
inline CLI::Option* add_kv_dtype_option(CLI::App& cmd, std::string& value) {
  return cmd.add_option("--kv-dtype", value, "KV cache element type: f16, bf16, f32 or q8_0")
      ->check(CLI::IsMember({"f16", "bf16", "f32", "q8_0"}))
      ->capture_default_str();
}

// --device, as serve, generate and bench take it: where the steps run.
inline CLI::Option* add_device_option(CLI::App& cmd, std::string& value) {
  return cmd.add_option("--device", value, "Where steps run: cpu, or cuda (an NVIDIA GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

// --prefill-chunk, as serve and bench take it: "auto" (0: paced by measured step times,
// scheduler/prefill_pacer.h) or the prompt tokens a step takes while requests decode.
inline int32_t prefill_chunk_value(const std::string& text) {
  return text == "auto" ? 0 : static_cast<int32_t>(std::stol(text));
}
inline CLI::Option* add_prefill_chunk_option(CLI::App& cmd, std::string& value) {
  return cmd
      .add_option("--prefill-chunk", value,
                  "Prompt tokens a step takes while other requests decode: auto (paced so "
                  "their token gaps stay under about 2 decode steps, unless prompts held "
                  "most of the last 10 s of steps or keep queueing or arriving) or a count")
      ->check([](const std::string& text) -> std::string {
        if (text == "auto") return "";
        try {
          size_t end = 0;
          const long n = std::stol(text, &end);
          if (end == text.size() && n >= 1 && n <= (1 << 20)) return "";
        } catch (const std::exception&) {
        }
        return "'auto' or a count from 1 to 1048576, not '" + text + "'";
      })
      ->capture_default_str();
}

// Speculative decoding by n-gram prompt lookup, as serve, generate and bench take it
// (SchedulerOptions::spec_tokens and its neighbours).
struct SpecFlags {
  int32_t tokens = 0;
  std::string ngram = "2:4";
  int32_t max_batch = 8;
  int32_t ngram_min() const { return std::stoi(ngram.substr(0, ngram.find(':'))); }
  int32_t ngram_max() const { return std::stoi(ngram.substr(ngram.find(':') + 1)); }
  void set(SchedulerOptions& o) const {
    o.spec_tokens = tokens;
    o.spec_ngram_min = ngram_min();
    o.spec_ngram_max = ngram_max();
    o.spec_max_batch = max_batch;
  }
};
inline std::vector<CLI::Option*> add_spec_options(CLI::App& cmd, SpecFlags& f) {
  return {
      cmd.add_option("--spec-tokens", f.tokens,
                     "Speculative decoding: drafts of up to N tokens, looked up in the "
                     "request's own prompt and output, verified in one step; the output is the "
                     "same as without (0: off)")
          ->check(CLI::Range(0, 64))
          ->capture_default_str(),
      cmd.add_option("--spec-ngram", f.ngram,
                     "MIN:MAX: the lengths of the sequence's last tokens looked up for drafts, "
                     "longest first")
          ->check([](const std::string& text) -> std::string {
            const size_t colon = text.find(':');
            try {
              size_t a = 0, b = 0;
              const int lo = std::stoi(text.substr(0, colon), &a);
              const int hi = std::stoi(text.substr(colon + 1), &b);
              if (colon != std::string::npos && a == colon && b == text.size() - colon - 1 &&
                  lo >= 1 && lo <= hi && hi <= 64)
                return "";
            } catch (const std::exception&) {
            }
            return "MIN:MAX with 1 <= MIN <= MAX <= 64, not '" + text + "'";
          })
          ->capture_default_str(),
      cmd.add_option("--spec-max-batch", f.max_batch,
                     "Draft only while at most this many requests decode (drafts cost compute "
                     "that pays while a step is bound by reading the weights)")
          ->check(CLI::Range(0, 4096))
          ->capture_default_str(),
  };
}

// One registration function per subcommand; main calls each in turn.
using SubcommandFactory = Subcommand (*)(CLI::App& app);
const std::vector<SubcommandFactory>& subcommand_factories();

}  // namespace tandem::app
