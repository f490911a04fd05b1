// The GPU suite's shared helpers: every test skips, saying why, where no GPU can be used
// (a machine without one, such as CI's), and runs on the device machine (docs/gpu.md).
#pragma once

#include <gtest/gtest.h>

#include "runner/cuda/cuda_executor.h"

#define TANDEM_REQUIRE_GPU()                                                       \
  do {                                                                             \
    if (const std::string why = ::tandem::cuda_unavailable_reason(); !why.empty()) \
      GTEST_SKIP() << "no GPU: " << why;                                           \
  } while (0)
