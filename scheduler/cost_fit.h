// A linear cost model fitted online: y ~ c . x with every c_i >= 0, by least squares over
// the samples recorded so far, each older sample's weight multiplied by `forget` per sample
// recorded after it (so the fit follows a machine whose costs drift, and a model with no
// new samples keeps what it learned). The prefill pacer's step-time models (prefill_pacer.h).
#pragma once

#include <array>
#include <cstddef>

namespace tandem {

template <size_t N>
class CostFit {
 public:
  using Vec = std::array<double, N>;

  explicit CostFit(double forget) : forget_(forget) {}

  void record(const Vec& x, double y);
  double predict(const Vec& x) const;
  const Vec& cost() const { return cost_; }
  int samples() const { return samples_; }

 private:
  void fit_subset(unsigned mask, double& best);

  double forget_;
  int samples_ = 0;
  // Weighted sums of the samples: x x^T, x y and y^2.
  std::array<Vec, N> xx_{};
  Vec xy_{};
  double yy_ = 0;
  Vec cost_{};
};

}  // namespace tandem
