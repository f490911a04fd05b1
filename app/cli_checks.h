// Checks every subcommand applies to its flags the same way: numbers CLI11's own
// validators let through (NaN passes CLI::Range, "-1" wraps to 2^64 - 1 as an unsigned),
// and output paths that cannot be written, found before any work starts.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "app/command.h"

namespace tandem::app {

// A finite number in [lo, hi]. CLI::Range compares with < and >, which NaN passes, and a
// NaN temperature or timeout then misbehaves silently (greedy sampling, empty replies).
inline CLI::Validator finite_range(double lo, double hi) {
  char bounds[64];
  std::snprintf(bounds, sizeof(bounds), "%g to %g", lo, hi);
  const std::string range = bounds;
  std::snprintf(bounds, sizeof(bounds), "[%g - %g]", lo, hi);  // as CLI::Range shows it
  const std::string shown = bounds;
  return CLI::Validator(
      [lo, hi, range](std::string& text) {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool ok = !text.empty() && end == text.c_str() + text.size() && std::isfinite(v) &&
                        v >= lo && v <= hi;
        return ok ? std::string() : "'" + text + "' is not a number from " + range;
      },
      "FLOAT in " + shown);
}

// An unsigned 64-bit integer, written in decimal. CLI11 alone reads "-1" as 2^64 - 1 and
// saturates a longer number at the maximum.
inline CLI::Validator uint64_value() {
  return CLI::Validator(
      [](std::string& text) {
        uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (text.empty() || ec != std::errc() || ptr != end)
          return "'" + text + "' is not an integer from 0 to 18446744073709551615";
        return std::string();
      },
      "UINT64");
}

// A model name (--served-model-name): an empty one could never be asked for by name.
inline CLI::Validator non_empty_name() {
  return CLI::Validator(
      [](std::string& name) {
        return name.empty() ? std::string("a served model name cannot be empty") : std::string();
      },
      "NAME");
}

// A file the command will create (or replace): not a directory, in a directory that
// exists and may be written. Checked before the work, so that a run does not end in an
// exit 1 after it. in_place: the command opens the file itself (bench's --json, the access
// log) rather than renaming a finished temporary over it, so an existing file must open
// for writing; it is opened to append, which changes nothing. (access() alone says yes to
// root for any mode bits; the open asks the file system.) Otherwise the finished file is
// renamed over the path, which would replace a device or FIFO by a file (as root,
// /dev/null too): only a regular file is replaced, and a symbolic link is followed, `path`
// becoming its target, so that the link stays and its file is written.
inline void check_output_path(const std::string& flag, std::string& path, bool in_place = false) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) throw UsageError(flag + ": an empty path");
  if (!in_place && fs::is_symlink(path, ec)) {
    // Link by link (weakly_canonical takes a link whose target is missing for a file of
    // its own, which the rename would replace), then what is left resolved whole.
    fs::path target = path;
    for (int hops = 0; fs::is_symlink(target, ec); ++hops) {
      if (hops == 40) throw UsageError(flag + ": " + path + ": too many levels of symbolic links");
      const fs::path next = fs::read_symlink(target, ec);
      if (ec) throw UsageError(flag + ": " + path + ": " + ec.message());
      target = next.is_absolute() ? next : target.parent_path() / next;
    }
    target = fs::weakly_canonical(target, ec);
    if (ec) throw UsageError(flag + ": " + path + ": " + ec.message());
    path = target.string();
  }
  if (fs::is_directory(path, ec)) throw UsageError(flag + ": " + path + " is a directory");
  const fs::path parent = fs::path(path).parent_path();
  const fs::path dir = parent.empty() ? fs::path(".") : parent;
  if (!fs::is_directory(dir, ec))
    throw UsageError(flag + ": " + path + ": directory " + dir.string() + " does not exist");
  const bool exists = fs::exists(path, ec);
  if (!in_place && exists && !fs::is_regular_file(path, ec)) {
    throw UsageError(flag + ": " + path +
                     " is not a regular file (a device, FIFO or socket); the output would "
                     "replace it");
  }
  if (in_place && exists) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
      throw UsageError(flag + ": " + path + " cannot be written: " + std::strerror(errno));
    ::close(fd);
  } else if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw UsageError(flag + ": " + path + ": directory " + dir.string() +
                     " cannot be written: " + std::strerror(errno));
  }
}

// What a path is, for a message about an input that is not a regular file.
inline std::string describe_non_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  switch (status.type()) {
    case fs::file_type::not_found:
      return path + ": no such file";
    case fs::file_type::directory:
      return path + ": is a directory, not a file";
    case fs::file_type::fifo:
      return path + ": is a FIFO, not a regular file";
    default:
      return path + ": not a regular file";
  }
}

}  // namespace tandem::app
