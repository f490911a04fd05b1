// The checks of a request's head that decide how its body is framed and whom it is for,
// made before the request is taken (session.cpp): a refusal closes the connection, since
// the bytes after the head cannot be trusted to be the next request.
#pragma once

#include <optional>

#include <boost/beast/http/fields.hpp>

#include "protocol/api_error.h"

namespace tandem::server {

// RFC 9112: Transfer-Encoding (6.1, 6.3) and Host (3.2). version is Beast's (11: HTTP/1.1).
// Null where the head is fine.
std::optional<ApiError> framing_refusal(const boost::beast::http::fields& fields, unsigned version);

}  // namespace tandem::server
