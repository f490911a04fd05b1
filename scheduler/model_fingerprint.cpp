#include "scheduler/model_fingerprint.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace tandem {
namespace {

struct Fnv1a64 {
  uint64_t state = 0xcbf29ce484222325ull;
  void add(const char* data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      state ^= static_cast<unsigned char>(data[i]);
      state *= 0x100000001b3ull;
    }
  }
  void add_u64(uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      const char byte = static_cast<char>(value >> (8 * i));
      add(&byte, 1);
    }
  }
};

}  // namespace

std::string_view tandem_version() { return TANDEM_VERSION; }

std::string model_fingerprint(const std::filesystem::path& model, uint64_t header_bytes,
                              std::string_view build) {
  std::ifstream in(model, std::ios::binary);
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(model, ec);
  if (!in || ec) throw std::runtime_error(model.string() + ": cannot read it to fingerprint");
  Fnv1a64 hash;
  hash.add_u64(size);
  std::vector<char> buffer(1 << 16);
  uint64_t left = std::min<uint64_t>(header_bytes, size);
  while (left > 0) {
    const auto chunk = static_cast<std::streamsize>(std::min<uint64_t>(left, buffer.size()));
    if (!in.read(buffer.data(), chunk)) {
      throw std::runtime_error(model.string() + ": cannot read it to fingerprint");
    }
    hash.add(buffer.data(), static_cast<size_t>(chunk));
    left -= static_cast<uint64_t>(chunk);
  }
  hash.add_u64(build.size());
  hash.add(build.data(), build.size());
  char hex[20];
  std::snprintf(hex, sizeof(hex), "fp_%016llx", static_cast<unsigned long long>(hash.state));
  return hex;
}

}  // namespace tandem
