// A speed as a fraction of the machine's ceilings (kernels/ceilings.h): the matmul work
// done per second against the peak of the instruction the weights run on, and the weight
// bytes streamed per second against the measured read bandwidth. `tandem generate` and
// `tandem bench` print these next to their tok/s, so a figure says how far it is from
// what the machine allows.
#pragma once

#include "runner/kernels/ceilings.h"
#include "runner/model/model.h"

namespace tandem {

struct Roofline {
  double gflops = 0;              // matmul flops per second
  double peak_gflops = 0;         // the peak those flops run against
  double peak_fraction = 0;       // gflops / peak_gflops
  double weight_gbps = 0;         // weight bytes streamed per second
  double bandwidth_fraction = 0;  // of the read bandwidth with every thread
};

// The work done per second: tokens through the layers, the rows among them whose logits
// were computed (through the output head), forward steps, and the steps among them with
// any such row.
struct WorkRates {
  double rows = 0;
  double logit_rows = 0;
  double steps = 0;
  double logit_steps = 0;
};

inline Roofline roofline(const Model::TokenWork& work, const kernels::MachineCeilings& c,
                         const WorkRates& rate) {
  Roofline r;
  r.gflops = ((work.flops - work.head_flops) * rate.rows + work.head_flops * rate.logit_rows) / 1e9;
  r.peak_gflops = kernels::peak_gflops(c, work.peak);
  r.peak_fraction = r.peak_gflops > 0 ? r.gflops / r.peak_gflops : 0;
  r.weight_gbps =
      ((work.weight_bytes - work.head_bytes) * rate.steps + work.head_bytes * rate.logit_steps) /
      1e9;
  r.bandwidth_fraction = c.read_gbps_all_threads > 0 ? r.weight_gbps / c.read_gbps_all_threads : 0;
  return r;
}

}  // namespace tandem
