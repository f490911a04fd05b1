// The schemas the JSON Schema tests and the grammar benchmark run: nested objects, arrays,
// enums, references (recursive ones too), string bounds, patterns, formats, numbers with
// bounds, tuples, combinators, and a 30-property object.
#pragma once

#include <string>
#include <vector>

namespace tandem::grammar::testing {

struct NamedSchema {
  const char* name;
  std::string text;
};

const std::vector<NamedSchema>& schema_suite();

// An object of 30 properties of mixed types, some optional, for the compile-time and mask
// benchmarks (the "30-property object").
std::string thirty_property_schema();

}  // namespace tandem::grammar::testing
