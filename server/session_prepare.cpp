// A POST's preparation off the I/O thread (Session::prepare_elsewhere): parsing,
// tokenizing, compiling its grammar on the prepare or compile pool, and the answer or plan
// posted back onto the session's strand. Split from session.cpp, which holds the rest of
// the connection's life.
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include <boost/asio/post.hpp>

#include "runner/grammar/compile_gate.h"
#include "server/session.h"

namespace tandem::server {

// A POST among the active generations (the shutdown grace) and the preparing gauge, from
// its hand-off to the prepare pool until the last task holding it is gone: after
// on_prepared, whose generation, if any, has counted itself by then; also when a task is
// dropped unrun (the io_context stopping), or something on the way throws.
class PrepareTicket {
 public:
  explicit PrepareTicket(SessionContext& context) : context_(context) {
    context_.active.begin();
    context_.endpoints.metrics().prepare_began();
  }
  ~PrepareTicket() {
    context_.endpoints.metrics().prepare_ended();
    context_.active.end();
  }
  PrepareTicket(const PrepareTicket&) = delete;
  PrepareTicket& operator=(const PrepareTicket&) = delete;

 private:
  SessionContext& context_;
};

// A request's parts, owned, for its preparation off the strand (prepare_elsewhere).
struct OwnedRequest {
  std::string method, target, authorization, api_key, body, route, request_id;
  std::unique_ptr<PrepareTicket> ticket;
};

// Endpoints::handle, with an exception (a bug) answered as a 500 rather than dropping
// the connection.
std::variant<HttpAnswer, GenerationPlan> Session::handle(Endpoints& endpoints,
                                                         const ApiRequest& api,
                                                         const std::string& route) {
  try {
    return endpoints.handle(api);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem serve: %s %s failed: %s\n", std::string(api.method).c_str(),
                 route.c_str(), e.what());
    return error_answer(internal_error());
  }
}

// The request's parts are copied (its body moved) into the task, which touches nothing
// else of the session: the strand runs nothing of this session meanwhile (no generation
// is running, no read or timer is pending), and the answer comes back onto it. It counts
// among the active generations from here (until its generation, if any, counts itself):
// a request taken before SIGTERM gets the grace period even while it is tokenized or its
// grammar compiles, whatever else runs; it was refused when nothing else was generating.
void Session::prepare_elsewhere(bool keep_alive) {
  auto& request = parser_->get();
  auto owned = std::make_shared<OwnedRequest>(
      OwnedRequest{std::string(request.method_string()), std::string(request.target()),
                   std::string(request[http::field::authorization]),
                   std::string(request["x-api-key"]), std::move(request.body()), route_,
                   client_request_id_, std::make_unique<PrepareTicket>(context_)});
  net::post(*context_.prepare, [self = shared_from_this(), owned, keep_alive] {
    if (self->context_.compile == nullptr) return self->prepare_on_this_thread(owned, keep_alive);
    try {
      grammar::DeferCompiles quick;
      self->prepare_on_this_thread(owned, keep_alive);
    } catch (const grammar::CompileDeferred&) {
      // Nothing was answered or kept: preparation is repeated from the start there.
      net::post(*self->context_.compile,
                [self, owned, keep_alive] { self->prepare_on_this_thread(owned, keep_alive); });
    }
  });
}

void Session::prepare_on_this_thread(const std::shared_ptr<OwnedRequest>& owned, bool keep_alive) {
  const ApiRequest api{owned->method,  owned->target, owned->authorization,
                       owned->api_key, owned->body,   owned->request_id};
  auto result = std::make_shared<std::variant<HttpAnswer, GenerationPlan>>(
      handle(context_.endpoints, api, owned->route));
  // `owned` rides along: its ticket ends once on_prepared has run.
  net::post(stream_.get_executor(), [self = shared_from_this(), owned, result, keep_alive] {
    self->on_prepared(std::move(*result), keep_alive);
  });
}

void Session::on_prepared(std::variant<HttpAnswer, GenerationPlan> result, bool keep_alive) {
  if (auto* plan = std::get_if<GenerationPlan>(&result)) {
    start_generation(std::move(*plan), keep_alive);
  } else {
    answer(std::move(std::get<HttpAnswer>(result)), keep_alive);
  }
}

}  // namespace tandem::server
