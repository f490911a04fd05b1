// Cross-origin requests from browsers (--allowed-origins): which origin an answer names, and
// the answer to a preflight.
#pragma once

#include <string>
#include <string_view>

#include "server/endpoints.h"

namespace tandem::server {

// The Access-Control-Allow-Origin a request from `origin` gets: "*" when any origin is
// allowed, the origin itself when it is listed, else none (a request without an Origin is
// no browser's cross-origin request and gets none either).
std::string cors_origin_for(const std::string& allowed, std::string_view origin);

// A CORS preflight (OPTIONS): 204, what a browser may send next. Any route, no key: the
// preflight carries no credentials, and the request that follows is checked as usual.
HttpAnswer preflight_answer(std::string_view requested_headers);

}  // namespace tandem::server
