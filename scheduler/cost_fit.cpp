#include "scheduler/cost_fit.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace tandem {
namespace {

// Solves the n x n system m x = v in place (Gaussian elimination, partial pivoting).
// False where it is singular.
template <size_t N>
bool solve(std::array<std::array<double, N>, N>& m, std::array<double, N>& v, size_t n) {
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
    if (!(std::abs(m[pivot][c]) > 0)) return false;
    std::swap(m[c], m[pivot]);
    std::swap(v[c], v[pivot]);
    for (size_t r = c + 1; r < n; ++r) {
      const double f = m[r][c] / m[c][c];
      for (size_t k = c; k < n; ++k) m[r][k] -= f * m[c][k];
      v[r] -= f * v[c];
    }
  }
  for (size_t c = n; c-- > 0;) {
    for (size_t k = c + 1; k < n; ++k) v[c] -= m[c][k] * v[k];
    v[c] /= m[c][c];
  }
  return true;
}

}  // namespace

template <size_t N>
double CostFit<N>::predict(const Vec& x) const {
  double y = 0;
  for (size_t i = 0; i < N; ++i) y += cost_[i] * x[i];
  return y;
}

// Least squares with every cost >= 0 (a token or a key never saves time): each subset of
// the features is solved on its own (2^N - 1 of them), and the best fit whose costs are all
// >= 0 is kept. A tiny ridge splits collinear features' part between them (steps of one
// shape say nothing of how their cost divides), and where subsets fit equally well, the one
// with more features wins: the split, rather than an arbitrary one of them.
template <size_t N>
void CostFit<N>::record(const Vec& x, double y) {
  for (size_t i = 0; i < N; ++i) {
    for (size_t j = 0; j < N; ++j) xx_[i][j] = forget_ * xx_[i][j] + x[i] * x[j];
    xy_[i] = forget_ * xy_[i] + x[i] * y;
  }
  yy_ = forget_ * yy_ + y * y;
  ++samples_;
  double best = std::numeric_limits<double>::infinity();
  for (int size = N; size > 0; --size)
    for (unsigned mask = 1; mask < (1u << N); ++mask)
      if (std::popcount(mask) == size) fit_subset(mask, best);
}

// The least-squares costs of the features in `mask` (the others 0), kept as the fit when
// they are all >= 0 and fit better than `best` by more than rounding.
template <size_t N>
void CostFit<N>::fit_subset(unsigned mask, double& best) {
  std::array<size_t, N> index{};
  size_t n = 0;
  for (size_t i = 0; i < N; ++i)
    if (mask & (1u << i)) index[n++] = i;
  std::array<Vec, N> m{};
  Vec v{};
  for (size_t r = 0; r < n; ++r) {
    for (size_t c = 0; c < n; ++c) m[r][c] = xx_[index[r]][index[c]];
    m[r][r] += 1e-6 * xx_[index[r]][index[r]] + 1e-300;
    v[r] = xy_[index[r]];
  }
  if (!solve(m, v, n)) return;
  Vec cost{};
  for (size_t r = 0; r < n; ++r) {
    if (!(v[r] >= 0)) return;
    cost[index[r]] = v[r];
  }
  // The weighted squared residual: y^2 - 2 c.xy + c' xx c.
  double residual = yy_;
  for (size_t i = 0; i < N; ++i) {
    residual -= 2 * cost[i] * xy_[i];
    for (size_t j = 0; j < N; ++j) residual += cost[i] * xx_[i][j] * cost[j];
  }
  if (residual < best - 1e-9 * yy_) {
    best = residual;
    cost_ = cost;
  }
}

template class CostFit<2>;
template class CostFit<3>;

}  // namespace tandem
