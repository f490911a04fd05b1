// Reads a request's output constraint (output_constraint.h) from its body: response_format,
// json_schema and grammar, of which at most one may constrain the output. Internal to
// protocol/: throws request_fields::RequestRejected like the other readers.
#pragma once

#include "protocol/output_constraint.h"
#include "protocol/request_fields.h"

namespace tandem::request_fields {

OutputConstraint read_output_constraint(const Json& body);

}  // namespace tandem::request_fields
