// llama-server's format_infill (tools/server/utils.hpp), step for step. The pattern is
// Qwen2.5-Coder's repository-level FIM (arXiv 2409.12186):
//
//   [FIM_REP]myproject\n [FIM_SEP]file0\n chunk0 ... [FIM_SEP]filename\n
//   [FIM_PRE]prefix prompt [FIM_SUF]suffix [FIM_MID]
//
// Its quirks are kept on purpose: editor plugins (llama.vscode, llama.vim) size their
// requests and read their completions against llama-server, and a different prompt gives
// different completions from the same model. Kept:
//   - the project name is always "myproject" and the current file is always "filename";
//   - without a file separator token a chunk is introduced by "\n\n--- snippet ---\n\n"
//     and no separator follows the last one;
//   - the prompt's tokens count against the suffix's share of the batch, not the prefix's;
//   - predict = -1 (none given) adds 2 to the extra context's room (n_ctx - n_batch - 2 *
//     n_predict);
//   - the extra context goes in front of BOS, not after it;
//   - prefix and suffix are tokenized without parsing control-token text, the prompt with.
// Not kept: llama.cpp tokenizes "myproject\n", "filename\n" and the snippet separator once
// per process (function-local statics, so with the first model's vocabulary); here they
// are tokenized with the tokenizer at hand. And where a tokenizer adds BOS but has none,
// llama.cpp would insert an invalid id; here nothing is inserted.
#include "server/infill_prompt.h"

#include <algorithm>

namespace tandem::server {

namespace {

void append_tokens(std::vector<int32_t>& out, const std::vector<int32_t>& tokens) {
  out.insert(out.end(), tokens.begin(), tokens.end());
}

// The repository context: the project, each chunk under its file name, then the current
// file's name, all before the FIM markers.
std::vector<int32_t> infill_extra_tokens(const Tokenizer& tokenizer,
                                         const std::vector<InfillChunk>& extra) {
  const Tokenizer::FimTokens& fim = tokenizer.fim();
  const auto plain = [&](std::string_view text) { return tokenizer.encode(text, false, false); };
  std::vector<int32_t> out;
  if (fim.repo >= 0) {
    out.push_back(fim.repo);
    append_tokens(out, plain("myproject\n"));
  }
  for (const InfillChunk& chunk : extra) {
    if (fim.file_sep >= 0) {
      out.push_back(fim.file_sep);
      append_tokens(out, plain(chunk.filename + "\n"));
    } else {
      append_tokens(out, plain("\n\n--- snippet ---\n\n"));
    }
    append_tokens(out, plain(chunk.text));
  }
  if (fim.file_sep >= 0) {
    out.push_back(fim.file_sep);
    append_tokens(out, plain("filename\n"));
  }
  return out;
}

// How many tokens of each part fit, as format_infill computes it: the prefix and suffix
// share one batch 3:1, the extra context fills what the batch and the reply leave of the
// context. llama.cpp subtracts the prompt's size as size_t, then clamps the int it wraps to
// at 0: the same as this signed arithmetic for any size that fits an int.
struct InfillTakes {
  size_t prefix = 0;
  size_t suffix = 0;
  size_t extra = 0;
};
InfillTakes infill_takes(const InfillBudget& budget, size_t n_prefix, size_t n_suffix,
                         size_t n_prompt, size_t n_extra) {
  const auto clamp_to = [](int64_t room, size_t available) {
    return std::min(static_cast<size_t>(std::max<int64_t>(0, room)), available);
  };
  const int64_t quarter = budget.batch / 4;
  InfillTakes takes;
  takes.prefix = clamp_to(3 * quarter, n_prefix);
  takes.suffix = clamp_to(quarter - (2 + static_cast<int64_t>(n_prompt)), n_suffix);
  takes.extra =
      clamp_to(int64_t{budget.context} - budget.batch - 2 * int64_t{budget.predict}, n_extra);
  return takes;
}

}  // namespace

std::optional<std::vector<int32_t>> infill_prompt(const Tokenizer& tokenizer,
                                                  const InfillInputs& inputs,
                                                  const InfillBudget& budget, bool spm_infill) {
  const Tokenizer::FimTokens& fim = tokenizer.fim();
  if (!fim.usable()) return std::nullopt;
  const std::vector<int32_t> prefix = tokenizer.encode(inputs.prefix, false, false);
  const std::vector<int32_t> suffix = tokenizer.encode(inputs.suffix, false, false);
  const std::vector<int32_t> prompt = tokenizer.encode(inputs.prompt, false, true);
  const std::vector<int32_t> extra = infill_extra_tokens(tokenizer, inputs.extra);
  const InfillTakes takes =
      infill_takes(budget, prefix.size(), suffix.size(), prompt.size(), extra.size());

  // The prefix keeps its end (the text nearest the cursor), the suffix its start.
  std::vector<int32_t> prefix_part{fim.prefix};
  prefix_part.insert(prefix_part.end(), prefix.end() - static_cast<ptrdiff_t>(takes.prefix),
                     prefix.end());
  append_tokens(prefix_part, prompt);
  std::vector<int32_t> suffix_part{fim.suffix};
  suffix_part.insert(suffix_part.end(), suffix.begin(),
                     suffix.begin() + static_cast<ptrdiff_t>(takes.suffix));

  const std::vector<int32_t>& first = spm_infill ? suffix_part : prefix_part;
  const std::vector<int32_t>& second = spm_infill ? prefix_part : suffix_part;
  // The extra context keeps its end (the current file's name and the chunks nearest it).
  std::vector<int32_t> out(extra.end() - static_cast<ptrdiff_t>(takes.extra), extra.end());
  if (tokenizer.add_bos() && tokenizer.bos_id() >= 0) out.push_back(tokenizer.bos_id());
  append_tokens(out, first);
  append_tokens(out, second);
  out.push_back(fim.middle);
  return out;
}

}  // namespace tandem::server
