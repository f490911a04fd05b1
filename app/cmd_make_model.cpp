// `tandem make-model`: writes a deterministic random-weight llama GGUF of a named shape.
#include <iostream>
#include <memory>
#include <string>

#include "app/cli_checks.h"
#include "app/command.h"
#include "runner/model/make_model.h"

namespace tandem::app {

Subcommand make_model_subcommand(CLI::App& app) {
  struct Flags {
    std::string shape;
    std::string dtype = "f16";
    std::string vocab;
    bool fim = false;
    uint64_t seed = 0;
    std::string out;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cli = app.add_subcommand(
      "make-model", "Write a deterministic random-weight llama model (GGUF) of a named shape");
  cli->add_option("--shape", flags->shape, "Model shape")
      ->required()
      ->check(CLI::IsMember(make_model::model_shape_names()));
  cli->add_option("--dtype", flags->dtype, "Weight type (norms are always f32)")
      ->capture_default_str()
      ->check(CLI::IsMember(make_model::dtype_names()));
  cli->add_option("--vocab", flags->vocab, "GGUF file whose tokenizer.* keys to copy")
      ->check(CLI::ExistingFile);
  // A --vocab file's arrays are copied as they are; adding tokens to them is not supported.
  cli->add_flag("--fim", flags->fim,
                "Add Qwen2.5-Coder's fill-in-the-middle tokens to the built-in vocabulary "
                "(for /infill)")
      ->excludes("--vocab");
  cli->add_option("--seed", flags->seed, "Weight seed: same seed, byte-identical file")
      ->capture_default_str()
      ->check(uint64_value());
  cli->add_option("--out", flags->out, "Output GGUF file")->required();

  return {cli, [flags] {
            check_output_path("--out", flags->out);
            make_model::MakeModelOptions options;
            options.shape = flags->shape;
            options.dtype = *make_model::dtype_from_name(flags->dtype);
            if (!flags->vocab.empty()) options.vocab = flags->vocab;
            options.fim = flags->fim;
            options.seed = flags->seed;
            options.out = flags->out;
            try {
              make_model::write_random_model(options);
            } catch (const make_model::VocabError& e) {
              throw UsageError(std::string("--vocab: ") + e.what());
            }
            std::cout << "wrote " << flags->out << " (shape " << flags->shape << ", "
                      << flags->dtype << ", seed " << flags->seed << ")\n";
            return 0;
          }};
}

}  // namespace tandem::app
