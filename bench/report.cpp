#include "bench/report.h"

#include <cstdio>
#include <functional>

namespace tandem::bench {
namespace {

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

using Cell = std::function<std::string(const RunReport&)>;

struct Row {
  std::string name;  // empty: a section heading taken from `heading`
  Cell cell;
};

void add_distribution(std::vector<Row>& rows, const std::string& name,
                      const Distribution RunSummary::*field) {
  const std::pair<const char*, double Distribution::*> stats[] = {{"mean", &Distribution::mean},
                                                                  {"p50", &Distribution::p50},
                                                                  {"p90", &Distribution::p90},
                                                                  {"p99", &Distribution::p99}};
  for (const auto& entry : stats) {
    // A plain copy: clang 14 cannot capture a structured binding.
    const double Distribution::*member = entry.second;
    rows.push_back({name + " " + entry.first + " (ms)", [field, member](const RunReport& r) {
                      const Distribution& d = r.summary.*field;
                      return d.count == 0 ? std::string("-") : fixed(d.*member, 2);
                    }});
  }
}

nlohmann::json distribution_json(const Distribution& d) {
  return {{"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90},    {"p99", d.p99},
          {"min", d.min},   {"max", d.max}, {"count", d.count}};
}

}  // namespace

std::string format_table(const std::vector<RunReport>& runs) {
  std::vector<Row> rows = {
      {"Completed requests",
       [](const RunReport& r) { return std::to_string(r.summary.completed); }},
      {"Failed requests", [](const RunReport& r) { return std::to_string(r.summary.failed); }},
      {"Duration (s)", [](const RunReport& r) { return fixed(r.summary.duration_seconds, 3); }},
      {"Prompt tokens", [](const RunReport& r) { return std::to_string(r.summary.prompt_tokens); }},
      {"Prompt tokens cached",
       [](const RunReport& r) {
         const int64_t n = r.summary.cached_prompt_tokens;
         return n < 0 ? std::string("-") : std::to_string(n);
       }},
      {"Output tokens", [](const RunReport& r) { return std::to_string(r.summary.output_tokens); }},
      {"Requests/s", [](const RunReport& r) { return fixed(r.summary.requests_per_second, 2); }},
      {"Output tokens/s",
       [](const RunReport& r) { return fixed(r.summary.output_tokens_per_second, 1); }},
      {"Total tokens/s",
       [](const RunReport& r) { return fixed(r.summary.total_tokens_per_second, 1); }},
  };
  add_distribution(rows, "TTFT", &RunSummary::ttft_ms);
  add_distribution(rows, "TPOT", &RunSummary::tpot_ms);
  add_distribution(rows, "ITL", &RunSummary::itl_ms);
  add_distribution(rows, "E2E", &RunSummary::e2e_ms);
  bool any_device = false;
  for (const RunReport& r : runs) any_device |= r.device.has_value();
  if (any_device) {
    auto device = [](double DeviceFigures::*m, int decimals) {
      return [m, decimals](const RunReport& r) {
        return r.device ? fixed((*r.device).*m, decimals) : std::string("-");
      };
    };
    rows.push_back({"Device busy (s)", device(&DeviceFigures::busy_seconds, 2)});
    rows.push_back({"Device idle (s)", device(&DeviceFigures::idle_seconds, 2)});
    rows.push_back({"Device idle fraction", device(&DeviceFigures::idle_fraction, 3)});
    bool any_gpu = false;
    for (const RunReport& r : runs) any_gpu |= r.device && r.device->gpu_idle_fraction >= 0;
    if (any_gpu) {
      rows.push_back({"GPU idle fraction", device(&DeviceFigures::gpu_idle_fraction, 3)});
      rows.push_back(
          {"Chained step gap p50 (us)", device(&DeviceFigures::chained_gap_median_us, 1)});
    }
    bool any_roofline = false;
    for (const RunReport& r : runs) any_roofline |= r.device && r.device->peak_fraction >= 0;
    if (any_roofline) {
      auto of = [](double DeviceFigures::*value, double DeviceFigures::*fraction) {
        return [value, fraction](const RunReport& r) {
          if (!r.device || (*r.device).*fraction < 0) return std::string("-");
          return fixed((*r.device).*value, 1) + " (" + fixed((*r.device).*fraction, 2) + ")";
        };
      };
      rows.push_back({"Matmul GFLOP/s (of peak)",
                      of(&DeviceFigures::matmul_gflops, &DeviceFigures::peak_fraction)});
      rows.push_back({"Weights read GB/s (of bandwidth)",
                      of(&DeviceFigures::weight_gbps, &DeviceFigures::bandwidth_fraction)});
    }
    rows.push_back({"Steps (chained)", [](const RunReport& r) {
                      return r.device ? std::to_string(r.device->steps) + " (" +
                                            std::to_string(r.device->chained_steps) + ")"
                                      : std::string("-");
                    }});
    rows.push_back({"Prefix cache hit rate", [](const RunReport& r) {
                      if (!r.device || r.device->prefix_queried_tokens == 0)
                        return std::string("-");
                      return fixed(static_cast<double>(r.device->prefix_hit_tokens) /
                                       static_cast<double>(r.device->prefix_queried_tokens),
                                   3);
                    }});
    rows.push_back({"Preemptions", [](const RunReport& r) {
                      return r.device ? std::to_string(r.device->preemptions) : std::string("-");
                    }});
  }

  size_t name_width = 0;
  for (const Row& row : rows) name_width = std::max(name_width, row.name.size());
  std::vector<size_t> widths;
  for (const RunReport& r : runs) {
    size_t w = r.label.size();
    for (const Row& row : rows) w = std::max(w, row.cell(r).size());
    widths.push_back(w);
  }
  std::string out;
  auto line = [&](const std::string& name, const std::vector<std::string>& cells) {
    std::string text = name + std::string(name_width - name.size(), ' ');
    for (size_t i = 0; i < cells.size(); ++i)
      text += "  " + std::string(widths[i] - cells[i].size(), ' ') + cells[i];
    out += text + "\n";
  };
  std::vector<std::string> headers;
  for (const RunReport& r : runs) headers.push_back(r.label);
  line("", headers);
  size_t total = name_width;
  for (size_t w : widths) total += 2 + w;
  out += std::string(total, '-') + "\n";
  for (const Row& row : rows) {
    std::vector<std::string> cells;
    for (const RunReport& r : runs) cells.push_back(row.cell(r));
    line(row.name, cells);
  }
  return out;
}

nlohmann::json summary_json(const RunSummary& s) {
  nlohmann::json j = {
      {"completed", s.completed},
      {"failed", s.failed},
      {"duration_s", s.duration_seconds},
      {"prompt_tokens", s.prompt_tokens},
      {"output_tokens", s.output_tokens},
      {"request_throughput", s.requests_per_second},
      {"output_throughput", s.output_tokens_per_second},
      {"total_token_throughput", s.total_tokens_per_second},
      {"ttft_ms", distribution_json(s.ttft_ms)},
      {"tpot_ms", distribution_json(s.tpot_ms)},
      {"itl_ms", distribution_json(s.itl_ms)},
      {"e2e_ms", distribution_json(s.e2e_ms)},
  };
  if (s.cached_prompt_tokens >= 0) j["cached_prompt_tokens"] = s.cached_prompt_tokens;
  if (!s.first_error.empty()) j["first_error"] = s.first_error;
  return j;
}

std::string outputs_digest(const std::vector<RequestRecord>& records) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  };
  for (const RequestRecord& r : records) {
    add(r.ok ? r.text : "error: " + r.error);
    add(std::string_view("\0", 1));  // keeps ["ab", "c"] apart from ["a", "bc"]
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

nlohmann::json run_json(const RunReport& run) {
  nlohmann::json j = summary_json(run.summary);
  if (!run.outputs_digest.empty()) j["outputs_digest"] = run.outputs_digest;
  j["label"] = run.label;
  j["path"] = run.path;
  if (!run.overlap.empty()) j["overlap"] = run.overlap;
  if (!run.prefix_cache.empty()) j["prefix_cache"] = run.prefix_cache;
  if (run.spec_tokens >= 0) j["spec_tokens"] = run.spec_tokens;
  j["ignore_eos"] = run.ignore_eos;
  if (run.device) {
    const DeviceFigures& d = *run.device;
    j["device"] = {{"busy_s", d.busy_seconds},         {"idle_s", d.idle_seconds},
                   {"idle_fraction", d.idle_fraction}, {"steps", d.steps},
                   {"chained_steps", d.chained_steps}, {"preemptions", d.preemptions},
                   {"rows_fed", d.rows_fed},           {"logit_rows", d.logit_rows},
                   {"logit_steps", d.logit_steps}};
    if (d.gpu_idle_fraction >= 0) {
      j["device"]["gpu_idle_fraction"] = d.gpu_idle_fraction;
      j["device"]["chained_gap_median_us"] = d.chained_gap_median_us;
    }
    if (d.peak_fraction >= 0) {
      j["device"]["matmul_gflops"] = d.matmul_gflops;
      j["device"]["peak_fraction"] = d.peak_fraction;
      j["device"]["weight_gbps"] = d.weight_gbps;
      j["device"]["bandwidth_fraction"] = d.bandwidth_fraction;
    }
    if (run.spec_tokens > 0) {
      j["speculation"] = {{"verify_rows", d.spec_verify_rows},
                          {"draft_tokens", d.spec_draft_tokens},
                          {"accepted_tokens", d.spec_accepted_tokens},
                          {"acceptance_rate", d.spec_draft_tokens > 0
                                                  ? static_cast<double>(d.spec_accepted_tokens) /
                                                        static_cast<double>(d.spec_draft_tokens)
                                                  : 0.0}};
    }
    j["prefix_cache_queried_tokens"] = d.prefix_queried_tokens;
    j["prefix_cache_hit_tokens"] = d.prefix_hit_tokens;
    j["prefix_cache_hit_rate"] = d.prefix_queried_tokens > 0
                                     ? static_cast<double>(d.prefix_hit_tokens) /
                                           static_cast<double>(d.prefix_queried_tokens)
                                     : 0.0;
  }
  if (!run.records.empty()) {
    j["requests"] = nlohmann::json::array();
    for (const RequestRecord& r : run.records) j["requests"].push_back(request_json(r));
  }
  return j;
}

nlohmann::json request_json(const RequestRecord& r) {
  nlohmann::json itl = nlohmann::json::array();
  for (double gap : r.itl) itl.push_back(gap * 1e3);
  nlohmann::json j = {{"ok", r.ok},
                      {"start_s", r.start_seconds},
                      {"prompt_tokens", r.prompt_tokens},
                      {"output_tokens", r.output_tokens},
                      {"finish_reason", r.finish_reason},
                      {"e2e_ms", r.e2e * 1e3},
                      {"ttft_ms", r.streamed ? nlohmann::json(r.ttft * 1e3) : nlohmann::json()},
                      {"itl_ms", std::move(itl)},
                      {"text", r.text}};
  if (!r.ok) j["error"] = r.error;
  return j;
}

}  // namespace tandem::bench
