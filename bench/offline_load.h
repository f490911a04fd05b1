// The workload sent straight into Scheduler::submit, without HTTP: `tandem bench --offline`,
// which separates the engine's speed from the serving overhead. Timings come from the
// request sink's callbacks (text deltas), so every request counts as streamed.
#pragma once

#include <vector>

#include "bench/load.h"
#include "bench/workload.h"
#include "scheduler/scheduler.h"

namespace tandem::bench {

// Runs the whole workload on a started scheduler and blocks until every request ends.
// A submit the scheduler refuses (queue full, invalid) is a failed request.
LoadResult run_offline(Scheduler& scheduler, const std::vector<PlannedRequest>& workload,
                       const LoadOptions& options);

}  // namespace tandem::bench
