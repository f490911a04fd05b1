// The sampler's rank order, which its filters, draws and weighings share: z descending,
// ties to the lower id (a strict total order, ids being distinct).
#pragma once

namespace tandem::sampler_rank {

template <typename T>
bool precedes(const T& a, const T& b) {
  return a.z > b.z || (a.z == b.z && a.id < b.id);
}

}  // namespace tandem::sampler_rank
