// The token sequence of a fill-in-the-middle request (/infill, as the llama.vscode and
// llama.vim editor plugins call it): llama-server's format_infill, quirks included, so a
// client tuned against llama-server gets the same prompt from tandem.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/infill_inputs.h"
#include "runner/tokenizer/tokenizer.h"

namespace tandem::server {

// What limits how much of each part is kept: llama-server's n_batch, n_predict and the
// slot's n_ctx, all server settings, not the request's fields.
struct InfillBudget {
  int32_t batch = 2048;  // the prefix takes up to 3/4 of it, the suffix the rest
  int32_t predict = -1;  // -1: none given
  int32_t context = 0;   // extra context fills what batch and 2 * predict leave of it
};

// The prompt llama-server's format_infill builds, or nullopt when the tokenizer has no
// usable FIM tokens (prefix, suffix and middle). spm_infill (llama-server's --spm-infill)
// puts the suffix part before the prefix part, for models trained that way.
std::optional<std::vector<int32_t>> infill_prompt(const Tokenizer& tokenizer,
                                                  const InfillInputs& inputs,
                                                  const InfillBudget& budget,
                                                  bool spm_infill = false);

}  // namespace tandem::server
