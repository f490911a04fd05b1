// The known fields of OpenAI's, vLLM's and llama-server's request bodies that tandem does
// not implement, in one table: each is refused by name (a 400 whose param is the field)
// unless it is sent at its neutral value, which changes nothing and is accepted (clients
// often send defaults explicitly). Fields no one defines are still ignored, as vLLM does.
// Internal to protocol/: throws request_fields::RequestRejected like the other readers.
#pragma once

#include "protocol/completion_request.h"
#include "protocol/request_fields.h"

namespace tandem::request_fields {

// Refuses the first field of the table present in body, for endpoint, at a value other
// than its neutral one. A wrongly typed value of such a field is refused too.
void reject_unimplemented_fields(const Json& body, Endpoint endpoint);

}  // namespace tandem::request_fields
