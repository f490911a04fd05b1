// For tests that check a kernel on every instruction set this CPU runs: the list of them,
// and a scope that switches the kernels to one and restores the previous one on exit.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "runner/kernels/kernels.h"

namespace tandem::testing {

// Every ISA this machine can run, for loops that check each kernel path.
inline std::vector<kernels::Isa> runnable_isas() {
  const kernels::Isa saved = kernels::detected_isa();
  std::vector<kernels::Isa> isas;
  for (kernels::Isa isa :
       {kernels::Isa::kAvx2, kernels::Isa::kAvx512, kernels::Isa::kAvx512Bf16, kernels::Isa::kAmx})
    if (kernels::set_isa_for_testing(isa)) isas.push_back(isa);
  kernels::set_isa_for_testing(saved);
  return isas;
}

// Sets an ISA for the scope of a test section and restores the previous one.
class IsaScope {
 public:
  explicit IsaScope(kernels::Isa isa) : saved_(kernels::detected_isa()) {
    EXPECT_TRUE(kernels::set_isa_for_testing(isa));
  }
  ~IsaScope() { kernels::set_isa_for_testing(saved_); }
  IsaScope(const IsaScope&) = delete;
  IsaScope& operator=(const IsaScope&) = delete;

 private:
  kernels::Isa saved_;
};

}  // namespace tandem::testing
