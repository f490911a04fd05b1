// Reads a request's output constraint (output_constraint.h) from its body: response_format,
// json_schema, grammar, vLLM's guided_json, guided_choice, guided_grammar and
// structured_outputs, of which at most one may constrain the output (regexes are refused). Internal
// to protocol/: throws request_fields::RequestRejected like the other readers.
#pragma once

#include "protocol/output_constraint.h"
#include "protocol/request_fields.h"

namespace tandem::request_fields {

OutputConstraint read_output_constraint(const Json& body);

// OpenAI's rule for the names of schemas and functions: 1 to 64 of a-z A-Z 0-9 _ -.
bool valid_openai_name(const std::string& name);

}  // namespace tandem::request_fields
