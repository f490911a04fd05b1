// llama-server's introspection routes, which its web UI, editor plugins, load balancers and
// many scripts read to size prompts and find a free slot:
// - GET /props: the default generation settings (n_ctx, the /completion defaults),
//   total_slots, the model's alias and path, the chat template, BOS/EOS, build_info;
// - GET /slots: one object per slot, busy or idle; with ?fail_on_no_slot (any value) a 503
//   when none is idle, as llama-server answers load balancers.
// tandem has no fixed slots: its batch holds up to --max-batch requests (total_slots), and
// the scheduler numbers the running ones and then the waiting ones as slots (scheduler.h,
// BusySlot). A busy slot shows the request's counts and sampling fields; its prompt and
// output text are not shown (llama-server shows them to anyone who holds the key).
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "protocol/choice_seed.h"
#include "protocol/native_request.h"
#include "scheduler/model_fingerprint.h"
#include "server/endpoints.h"

namespace tandem::server {
namespace {

using Json = nlohmann::ordered_json;

HttpAnswer json_body(const Json& object) {
  HttpAnswer answer;
  // Paths and templates are bytes: invalid UTF-8 becomes U+FFFD rather than failing.
  answer.body = object.dump(-1, ' ', false, Json::error_handler_t::replace);
  return answer;
}

// The settings a /completion request gets when it sends none but its prompt, as its
// answer's generation_settings shows them: read by the same code, so they cannot drift.
Json default_params(int32_t context_length) {
  auto parsed = parse_native_request(R"({"prompt": "x"})", /*infill=*/false);
  Json settings = std::get<NativeRequest>(parsed).settings;
  report_windows_as_context(settings, context_length);
  return settings;
}

Json slot_json(int32_t id, int32_t n_ctx, bool speculative) {
  return Json{{"id", id}, {"n_ctx", n_ctx}, {"speculative", speculative}, {"is_processing", false}};
}

// n_predict and n_remain are -1 for a request without max_tokens, as llama-server's.
Json busy_slot_json(const BusySlot& r, int32_t n_ctx, bool speculative) {
  Json slot = slot_json(r.slot, n_ctx, speculative);
  slot["is_processing"] = true;
  slot["id_task"] = r.id;
  slot["n_prompt_tokens"] = r.prompt_tokens;
  slot["n_prompt_tokens_processed"] =
      r.prefilled - r.cached_tokens > 0 ? r.prefilled - r.cached_tokens : 0;
  slot["n_prompt_tokens_cache"] = r.cached_tokens;
  slot["params"] = Json{{"n_predict", r.limited ? r.max_new : -1},
                        {"seed", reported_seed(r.seed)},
                        {"temperature", r.temperature},
                        {"top_k", r.top_k},
                        {"top_p", r.top_p},
                        {"min_p", r.min_p}};
  slot["next_token"] = Json::array({Json{{"has_next_token", true},
                                         {"has_new_line", false},
                                         {"n_remain", r.limited ? r.max_new - r.generated : -1},
                                         {"n_decoded", r.generated}}});
  return slot;
}

// ?name=value pairs of a target: whether the first `name` has a non-empty value (llama-server's
// HTTP library reads the first; "fail_on_no_slot=0" is set too, as there).
bool query_has(std::string_view target, std::string_view name) {
  const size_t mark = target.find('?');
  if (mark == std::string_view::npos) return false;
  std::string_view query = target.substr(mark + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) return eq != std::string_view::npos && eq + 1 < pair.size();
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return false;
}

}  // namespace

Endpoints::Result Endpoints::props(const ApiRequest&) {
  Json settings = slot_json(0, model_.context_length, scheduler_.speculative());
  settings["params"] = default_params(model_.context_length);
  settings["params"]["seed"] = -1;  // llama-server's default: drawn for each request
  Json props{{"default_generation_settings", std::move(settings)},
             {"total_slots", scheduler_.max_batch()},
             {"model_alias", model_.id},
             {"model_path", model_.path},
             {"modalities", Json{{"vision", false}, {"audio", false}}},
             {"endpoint_slots", true},
             {"endpoint_props", true},
             {"endpoint_metrics", true},
             {"webui", false},
             {"chat_template", model_.chat_template ? model_.chat_template->source : ""},
             {"bos_token", nullptr},
             {"eos_token", nullptr},
             {"build_info", "tandem " + std::string(tandem_version())},
             {"is_sleeping", false}};
  if (tokenizer_.bos_id() >= 0) props["bos_token"] = tokenizer_.token_text(tokenizer_.bos_id());
  if (tokenizer_.eos_id() >= 0) props["eos_token"] = tokenizer_.token_text(tokenizer_.eos_id());
  return json_body(props);
}

Endpoints::Result Endpoints::slots(const ApiRequest& api) {
  const int32_t total = scheduler_.max_batch();
  const bool speculative = scheduler_.speculative();
  const std::vector<BusySlot> busy = scheduler_.busy_slots();  // running, then waiting
  Json slots = Json::array();
  size_t next = 0;  // busy is sorted by slot
  for (int32_t id = 0; id < total; ++id) {
    if (next < busy.size() && busy[next].slot == id) {
      slots.push_back(busy_slot_json(busy[next++], model_.context_length, speculative));
    } else {
      slots.push_back(slot_json(id, model_.context_length, speculative));
    }
  }
  if (query_has(api.target, "fail_on_no_slot") && static_cast<int32_t>(busy.size()) >= total)
    return error_answer(service_unavailable("no slot available"));
  return json_body(slots);
}

}  // namespace tandem::server
