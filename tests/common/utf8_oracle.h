// An independent UTF-8 validator for tests and fuzzers: it decodes code points
// arithmetically and shares no code with runner/utf8, so it can judge that unit. Header-only
// (the fuzz targets do not link the GoogleTest support library); a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tandem::testing {

// Well-formed UTF-8 per Unicode Table 3-7: no overlong forms, no surrogates, nothing past
// U+10FFFF, no truncated sequence.
inline bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    const size_t n = b < 0x80           ? 1
                     : (b >> 5) == 0x6  ? 2
                     : (b >> 4) == 0xE  ? 3
                     : (b >> 3) == 0x1E ? 4
                                        : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? b : b & (0x7Fu >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<uint8_t>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

}  // namespace tandem::testing
