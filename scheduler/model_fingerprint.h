// system_fingerprint, as OpenAI defines it: what backend configuration answered, so a
// client can tell when outputs may change for the same request and seed. tandem's is the
// model file (its size and the bytes of its header, metadata and tensor infos: cheap to
// read, and they name every tensor's type, shape and offset) and the build's version.
// The weights themselves are not hashed: reading gigabytes at every start is too slow.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tandem {

// "fp_" + 16 hex digits of FNV-1a 64 over (file size, the file's first header_bytes
// bytes, build). Throws std::runtime_error naming the file when it cannot be read.
std::string model_fingerprint(const std::filesystem::path& model, uint64_t header_bytes,
                              std::string_view build);

// The version tandem was built as (CMake's project version).
std::string_view tandem_version();

}  // namespace tandem
