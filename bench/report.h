// How `tandem bench` shows a run: a table on stdout with one column per run (overlap off
// and on side by side for --overlap compare), and the JSON document --json writes with
// every figure and the settings. Pure functions over summaries.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/summary.h"

namespace tandem::bench {

// The device's counters over one run (Scheduler::metrics() differences), --model only.
struct DeviceFigures {
  double busy_seconds = 0;
  double idle_seconds = 0;   // waiting for a launch while requests were live
  double idle_fraction = 0;  // idle_seconds / the run's wall time
  uint64_t steps = 0;
  uint64_t chained_steps = 0;
  // The device's work (SchedulerMetrics): tokens through the layers, rows through the
  // output head, and steps with any such row; recomputed prefixes count, cached ones not.
  uint64_t rows_fed = 0;
  uint64_t logit_rows = 0;
  uint64_t logit_steps = 0;
  uint64_t prefix_queried_tokens = 0;  // prompt tokens looked up in the prefix cache
  uint64_t prefix_hit_tokens = 0;      // of which found there
  uint64_t preemptions = 0;
  // Speculative decoding (SchedulerMetrics::spec_*): rows that verified drafts, the draft
  // tokens they carried, and those accepted.
  uint64_t spec_verify_rows = 0;
  uint64_t spec_draft_tokens = 0;
  uint64_t spec_accepted_tokens = 0;
  // With a GPU (its own clock; else -1): the fraction of the run it was not running a
  // step, and the median idle gap before a chained step, in microseconds.
  double gpu_idle_fraction = -1;
  double chained_gap_median_us = -1;
  // Against the CPU's ceilings measured in the same bench (runner/model/roofline.h); -1
  // when not measured (--ceilings off, or a GPU): matmul GFLOP/s over the run's wall time
  // and its fraction of the weights' instruction peak; weight GB/s streamed by the steps
  // and its fraction of the read bandwidth.
  double matmul_gflops = -1;
  double peak_fraction = -1;
  double weight_gbps = -1;
  double bandwidth_fraction = -1;
};

struct RunReport {
  std::string label;         // the table's column header: "overlap off", "http", ...
  std::string path;          // "http" or "offline"
  std::string overlap;       // "on", "off", or "" when unknown (--url)
  std::string prefix_cache;  // "on", "off", or "" when unknown (--url)
  int32_t spec_tokens = -1;  // speculative decoding's drafts at most; -1 unknown (--url)
  bool ignore_eos = true;    // its requests' (a run constrained by --json-schema: false)
  RunSummary summary;
  std::optional<DeviceFigures> device;
  // outputs_digest(records): equal digests mean the runs generated the same texts.
  std::string outputs_digest;
  // Each request's record, in workload order, where --json-detailed asks for them (else
  // empty): run_json writes them as "requests".
  std::vector<RequestRecord> records;
};

// A hex FNV-1a 64 digest of every request's generated text, in request order (failed
// requests count as their error), so that runs can be compared from their JSON files.
std::string outputs_digest(const std::vector<RequestRecord>& records);

std::string format_table(const std::vector<RunReport>& runs);

nlohmann::json summary_json(const RunSummary& summary);
nlohmann::json run_json(const RunReport& run);
// One request's record as --json-detailed writes it: when it was sent, its token counts,
// finish reason and text, its end-to-end time, and where it was streamed its time to the
// first text and the gaps between text chunks (null and empty otherwise); failures carry
// their error. Times in milliseconds, the start in seconds from the run's start.
nlohmann::json request_json(const RequestRecord& record);

}  // namespace tandem::bench
