// llama-server's own API: POST /completion (and /completions) and POST /infill, read as the
// /v1/completions request each amounts to (protocol/native_request.h) and answered in
// llama-server's shape (protocol/native_writer.h). /infill's prompt is the FIM prompt that
// llama-server builds (server/infill_prompt.h) from the model's FIM tokens.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "protocol/native_request.h"
#include "protocol/native_writer.h"
#include "server/endpoints.h"
#include "server/infill_prompt.h"

namespace tandem::server {
namespace {

// llama-server's default n_batch, which its FIM prompt is cut to fit: 3/4 of it for the
// prefix, 1/4 for the suffix and the prompt, the rest of the context for input_extra. At
// most half the context here, so that a small context keeps room for input_extra (with the
// batch as large as the context, llama-server keeps none of it).
constexpr int32_t kInfillBatch = 2048;
// The server's n_predict in that formula (the extra context gets what the batch and twice
// this leave): llama-server's default, -1, leaves nothing for the output and lets the prompt
// pass the context by a few tokens, which tandem would refuse; this keeps 126 tokens free.
// A server setting, not the request's n_predict, so that a plugin's warm-up (n_predict 0)
// builds the same prompt as the completion after it and the prefix cache serves it.
constexpr int32_t kInfillPredict = 64;

}  // namespace

Endpoints::Result Endpoints::native(const ApiRequest& api, bool infill) {
  auto parsed = parse_native_request(api.body, infill);
  if (auto* error = std::get_if<ApiError>(&parsed)) return error_answer(*error);
  NativeRequest& native = std::get<NativeRequest>(parsed);
  CompletionRequest& request = native.request;
  if (infill) {
    const InfillBudget budget{std::min(kInfillBatch, model_.context_length / 2), kInfillPredict,
                              model_.context_length};
    auto tokens = infill_prompt(tokenizer_, native.infill_inputs, budget);
    if (!tokens) {
      return error_answer(bad_request(
          "This model has no fill-in-the-middle tokens (its vocabulary names no FIM prefix, "
          "suffix and middle), so /infill cannot build its prompt; use /completion.",
          "input_prefix"));
    }
    request.prompt_tokens = std::move(*tokens);
  }
  report_windows_as_context(native.settings, model_.context_length);
  Result result = generation(api, request, &native.renames);
  auto* plan = std::get_if<GenerationPlan>(&result);
  if (plan == nullptr) return result;
  GenerationRequest& only = plan->choices.front();
  only.min_indent = native.min_indent;
  only.time_limit_ms = native.time_limit_ms;
  const std::string prompt = tokenizer_.decode(only.prompt, /*render_special=*/true);
  plan->writer = std::make_unique<NativeWriter>(
      plan->encoder.header(), prompt, static_cast<int64_t>(only.prompt.size()),
      std::move(native.settings), std::move(native.response_fields), native.timings_per_token,
      native.return_tokens);
  plan->token_ids = true;                    // every streamed piece lists its tokens' ids
  plan->timings = native.timings_per_token;  // the admission's event gives the cache's share
  plan->access.route = infill ? "/infill" : "/completion";
  return result;
}

}  // namespace tandem::server
