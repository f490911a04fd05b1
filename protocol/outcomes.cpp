#include "protocol/outcomes.h"

#include <iterator>

namespace tandem {
namespace {

// Indexed by the enumerators' values.
constexpr const char* kFinishReasonNames[] = {"stop", "length", "tool_calls", "cancelled"};
constexpr const char* kErrorKindNames[] = {"invalid_request", "overloaded", "shutting_down",
                                           "internal"};
static_assert(std::size(kFinishReasonNames) == kFinishReasons);
static_assert(std::size(kErrorKindNames) == kErrorKinds);

template <size_t N>
const char* name_at(const char* const (&names)[N], int index) {
  return index >= 0 && index < static_cast<int>(N) ? names[index] : "unknown";
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  return name_at(kFinishReasonNames, static_cast<int>(reason));
}

const char* error_kind_name(ErrorKind kind) {
  return name_at(kErrorKindNames, static_cast<int>(kind));
}

}  // namespace tandem
