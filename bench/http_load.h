// The HTTP side of `tandem bench`: an asynchronous Boost.Beast client that sends the
// workload to any OpenAI-compatible server's /v1/completions, one keep-alive connection per
// concurrency slot, streamed (SSE) or whole, and times each request. Also asks the server
// what it serves (/v1/models) and tokenizes the prompt passage (/tokenize) to build the
// prompt token pool. Each call runs its own io_context on the calling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/load.h"
#include "bench/workload.h"

namespace tandem::bench {

struct ServerUrl {
  std::string host;
  std::string port = "80";
  std::string prefix;   // path before /v1/..., without a trailing slash
  std::string api_key;  // sent as "Authorization: Bearer KEY" when not empty
  // For each of the set-up calls (/v1/models, /tokenize): a server that takes the
  // connection and never answers is a bad --url, found before any work starts.
  std::chrono::seconds setup_timeout{30};
};

// http://HOST[:PORT][/PREFIX]; a trailing /v1 is dropped. Throws std::invalid_argument,
// also for a port outside 1-65535 and for user:password@ in the URL.
ServerUrl parse_server_url(std::string_view url);

struct ServerInfo {
  std::string model;  // the id asked for, else /v1/models' first ("" when it has none)
  // From the listed entry of that id, when there is one.
  int64_t context_length = 0;  // max_model_len, when given
  std::vector<int32_t> token_pool;
  std::string pool_source;  // how the pool was found, for the report
};

// Throws std::invalid_argument (a bad --url) when the server cannot be reached at all,
// does not answer within url.setup_timeout, or has no /v1/models (a URL past its base). A
// `model` that /v1/models does not list is still the one named (a router may serve more
// than it lists, as vllm bench serve assumes); a wrong one fails the warm-up request.
ServerInfo discover_server(const ServerUrl& url, const std::string& model = "");

LoadResult run_http(const ServerUrl& url, const std::string& model,
                    const std::vector<PlannedRequest>& workload, const LoadOptions& options);

}  // namespace tandem::bench
