// What the two load paths (HTTP client, direct to the scheduler) share: how requests are
// paced and what a run returns. Pacing: request i is sent at its planned arrival time or
// when one of `concurrency` slots frees up, whichever is later, always in index order.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "bench/summary.h"

namespace tandem::bench {

struct LoadOptions {
  int32_t concurrency = 0;  // requests in flight at most; 0: no bound (open loop)
  bool stream = false;      // HTTP only: the scheduler path always sees every token
  float temperature = 1.0f;
  // Called once per finished request (from the load's own thread), for the progress bar.
  std::function<void(const RequestRecord&)> on_done;
};

struct LoadResult {
  std::vector<RequestRecord> records;  // in request order
  double duration_seconds = 0;         // first send to last response
};

}  // namespace tandem::bench
