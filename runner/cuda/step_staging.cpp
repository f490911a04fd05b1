#include "runner/cuda/step_staging.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tandem::cuda {
namespace {

void validate(const StepRow& r, bool device_inputs, const StagingLimits& limits) {
  if (r.tokens.empty()) throw std::invalid_argument("cuda step: a row has no tokens");
  const int64_t end = int64_t{r.position} + static_cast<int64_t>(r.tokens.size());
  if (r.position < 0 || end > limits.context_length)
    throw std::invalid_argument("cuda step: positions " + std::to_string(r.position) + ".." +
                                std::to_string(end) + " exceed the context length " +
                                std::to_string(limits.context_length));
  if (static_cast<int64_t>(r.kv_blocks.size()) * limits.block_size < end)
    throw std::invalid_argument("cuda step: the block table does not cover the row");
  for (int32_t b : r.kv_blocks)
    if (b < 0 || b >= limits.kv_blocks)
      throw std::invalid_argument("cuda step: bad KV block id " + std::to_string(b));
  if (device_inputs) return;
  for (int32_t t : r.tokens)
    if (t < 0 || t >= limits.vocab_size)
      throw std::invalid_argument("cuda step: token id " + std::to_string(t) +
                                  " is outside the vocabulary");
}

// The fused kernel's edits, in the CPU sampler's order: logit_bias, then the bans.
void add_edits(const StepRow& r, bool ban_stop, const StagingLimits& limits, StepStaging& out) {
  for (const auto& [id, bias] : r.sampling.logit_bias) out.edits.push_back({id, bias});
  const auto& stop_ids = r.sampling.stop_token_ids;  // sorted
  if (ban_stop) {
    for (int32_t id : limits.eog_ids) out.edits.push_back({id, -100.0f});
    for (int32_t id : stop_ids) out.edits.push_back({id, -100.0f});
  } else if (r.sampling.ignore_eos) {
    // As the CPU sampler: ignore_eos spares the end-of-generation ids stop_token_ids names.
    for (int32_t id : limits.eog_ids)
      if (!std::binary_search(stop_ids.begin(), stop_ids.end(), id))
        out.edits.push_back({id, -100.0f});
  }
}

HostRow host_row(const StepRow& r, size_t index, int32_t first_logit, int32_t logit_rows,
                 int64_t position, bool ban_stop) {
  HostRow h;
  h.row = index;
  h.first_logit = first_logit;
  h.logit_rows = logit_rows;
  if (r.sampling.prompt_logprobs >= 0) h.tokens = r.tokens;
  h.next_prompt_token = r.next_prompt_token;
  h.sample = r.sample;
  h.position = position;
  h.ban_stop = ban_stop;
  h.sampling = r.sampling;
  h.penalty_prompt = r.penalty_prompt;
  h.penalty_output = r.penalty_output;
  h.grammar = r.grammar;
  h.sampler_state = r.sampler_state;
  return h;
}

}  // namespace

void StepStaging::clear() {
  for (auto* v : {&token, &position, &table_start, &tables, &logit_source}) v->clear();
  sample_rows.clear();
  sampled_row.clear();
  edits.clear();
  kv_copies.clear();
  host_rows.clear();
  decode_only = true;
}

bool sampled_on_host(const StepRow& row) {
  return row.grammar != nullptr || row.sampling.logprobs >= 0 ||
         row.sampling.prompt_logprobs >= 0 || row.sampling.has_output_penalties() ||
         row.sampling.infill || row.sampling.xtc_on() || row.sampling.top_n_sigma_on() ||
         row.sampling.typical_on() || row.sampling.dynatemp_on() || row.sampling.temperature_last ||
         row.sampling.min_p_last || SamplerState::needed(row.sampling);
}

void stage_step(const StepPlan& plan, bool device_inputs, const StagingLimits& limits,
                StepStaging& out) {
  out.clear();
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    const StepRow& r = plan.rows[i];
    validate(r, device_inputs, limits);
    const auto count = static_cast<int32_t>(r.tokens.size());
    const int32_t needed = (r.position + count + limits.block_size - 1) / limits.block_size;
    const auto table_at = static_cast<int32_t>(out.tables.size());
    out.tables.insert(out.tables.end(), r.kv_blocks.begin(), r.kv_blocks.begin() + needed);
    const int32_t first_token = out.n_tokens();
    for (int32_t j = 0; j < count; ++j) {
      out.token.push_back(r.tokens[j]);
      out.position.push_back(r.position + j);
      out.table_start.push_back(table_at);
    }
    if (r.kv_copy.slots > 0) out.kv_copies.push_back(r.kv_copy);
    const bool all_logits = r.sampling.prompt_logprobs >= 0;
    out.decode_only =
        out.decode_only && count == 1 && r.sample && !all_logits && r.kv_copy.slots == 0;
    const int32_t first_logit = out.n_logits();
    for (int32_t j = all_logits ? 0 : count - 1; j < count && (all_logits || r.sample); ++j)
      out.logit_source.push_back(first_token + j);
    const int64_t position = int64_t{r.position} + count;
    const bool ban_stop = position < r.stop_banned_until;
    if (sampled_on_host(r))
      out.host_rows.push_back(
          host_row(r, i, first_logit, out.n_logits() - first_logit, position, ban_stop));
    if (!r.sample) continue;
    SampleRow s;
    s.logits_row = out.n_logits() - 1;
    s.temperature = r.sampling.temperature;
    s.top_k = r.sampling.top_k;
    s.top_p = r.sampling.top_p;
    s.set_min_p(r.sampling.min_p);
    s.seed = r.sampling.seed;
    s.position = position;
    s.edits_begin = static_cast<int32_t>(out.edits.size());
    add_edits(r, ban_stop, limits, out);
    s.edits_end = static_cast<int32_t>(out.edits.size());
    out.sample_rows.push_back(s);
    out.sampled_row.push_back(i);
  }
}

}  // namespace tandem::cuda
