#include "bench/http_load.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "bench/sse_reader.h"

namespace tandem::bench {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using nlohmann::json;

// Generous: a whole (non-streamed) response under heavy load can take minutes.
constexpr auto kReadTimeout = std::chrono::seconds(900);
constexpr auto kConnectTimeout = std::chrono::seconds(30);

struct Reply {
  int status = 0;
  std::string body;
};

// One request on a fresh connection, for the few set-up calls, within url.setup_timeout
// (a server that takes the connection and never answers would hold a synchronous read
// forever: Beast's timeouts apply to asynchronous operations only). Throws on network
// errors and on the timeout.
Reply fetch(const ServerUrl& url, http::verb verb, const std::string& path,
            const std::string& body) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  http::request<http::string_body> req(verb, url.prefix + path, 11);
  req.set(http::field::host, url.host);
  req.set(http::field::user_agent, "tandem-bench");
  if (!url.api_key.empty()) req.set(http::field::authorization, "Bearer " + url.api_key);
  if (verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  beast::error_code failure;
  const auto done = [&](beast::error_code ec) {
    if (ec) failure = ec;
    return !ec;
  };
  stream.expires_after(url.setup_timeout);
  stream.async_connect(
      resolver.resolve(url.host, url.port), [&](beast::error_code ec, const tcp::endpoint&) {
        if (!done(ec)) return;
        http::async_write(stream, req, [&](beast::error_code ec, size_t) {
          if (!done(ec)) return;
          http::async_read(stream, buffer, parser, [&](beast::error_code ec, size_t) { done(ec); });
        });
      });
  ioc.run();
  if (failure == beast::error::timeout) {
    throw std::runtime_error("no answer within " + std::to_string(url.setup_timeout.count()) +
                             " s");
  }
  if (failure) throw beast::system_error(failure);
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return {static_cast<int>(parser.get().result_int()), parser.get().body()};
}

std::string request_body(const std::string& model, const PlannedRequest& planned,
                         const LoadOptions& options) {
  if (options.embeddings) {  // the prompt's tokens as one input
    nlohmann::ordered_json body = {{"input", planned.prompt}, {"encoding_format", "float"}};
    if (!model.empty()) body["model"] = model;
    return body.dump();
  }
  // Ordered: the schema's properties keep their order, which the output follows.
  nlohmann::ordered_json body = {{"prompt", planned.prompt},
                                 {"max_tokens", planned.max_tokens},
                                 {"temperature", options.temperature},
                                 {"seed", planned.seed},
                                 {"stream", options.stream}};
  if (options.json_schema.empty()) {
    body["ignore_eos"] = true;
  } else {
    body["response_format"] = {
        {"type", "json_schema"},
        {"json_schema",
         {{"name", "bench"}, {"schema", nlohmann::ordered_json::parse(options.json_schema)}}}};
  }
  if (!model.empty()) body["model"] = model;
  if (options.stream) body["stream_options"] = {{"include_usage", true}};
  return body.dump();
}

// The state of one run, shared by its slots (one thread: no locks).
struct Run {
  net::io_context ioc;
  tcp::resolver::results_type endpoints;
  ServerUrl url;
  std::string model;
  const std::vector<PlannedRequest>* workload = nullptr;
  const LoadOptions* options = nullptr;
  std::vector<RequestRecord> records;
  size_t next = 0;
  Clock::time_point start, last_end;
};

// A server's field that is absent, null or of another type counts as unsaid (vLLM's
// client reads `text or ""`), so one odd chunk cannot end the run.
std::string text_of(const json& choice) {
  const auto it = choice.find("text");
  return it != choice.end() && it->is_string() ? it->get<std::string>() : std::string();
}
const json* first_choice(const json& body) {
  if (!body.is_object()) return nullptr;
  const auto it = body.find("choices");
  if (it == body.end() || !it->is_array() || it->empty() || !(*it)[0].is_object()) return nullptr;
  return &(*it)[0];
}
const json* count_at(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? &*it : nullptr;
}

// One concurrency slot: a keep-alive connection that sends the next request when the last
// one has ended and its arrival time has come.
class Slot : public std::enable_shared_from_this<Slot> {
 public:
  explicit Slot(Run& run) : run_(run), stream_(run.ioc), timer_(run.ioc) {}

  void take_next() {
    if (run_.next >= run_.workload->size()) {
      close();
      return;
    }
    index_ = run_.next++;
    const double arrival = (*run_.workload)[index_].arrival_seconds;
    timer_.expires_at(run_.start + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(arrival)));
    timer_.async_wait([self = shared_from_this()](beast::error_code) { self->send(false); });
  }

 private:
  RequestRecord& record() { return run_.records[index_]; }

  void send(bool retry) {
    const PlannedRequest& planned = (*run_.workload)[index_];
    if (!retry) {
      record() = RequestRecord{};
      record().prompt_tokens = static_cast<int64_t>(planned.prompt.size());
      record().start_seconds = seconds_between(run_.start, Clock::now());
      req_ = {http::verb::post,
              run_.url.prefix + (run_.options->embeddings ? "/v1/embeddings" : "/v1/completions"),
              11};
      req_.set(http::field::host, run_.url.host);
      req_.set(http::field::user_agent, "tandem-bench");
      req_.set(http::field::content_type, "application/json");
      if (!run_.url.api_key.empty())
        req_.set(http::field::authorization, "Bearer " + run_.url.api_key);
      req_.keep_alive(true);
      req_.body() = request_body(run_.model, planned, *run_.options);
      req_.prepare_payload();
    }
    retried_ = retry;
    parser_.reset();
    sent_ = Clock::now();
    sse_ = SseReader{};
    seen_text_ = false;
    usage_seen_ = false;
    chunks_ = 0;
    reused_ = connected_;
    if (connected_) return write();
    stream_.expires_after(kConnectTimeout);
    stream_.async_connect(run_.endpoints,
                          [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
                            if (ec) return self->fail("connect: " + ec.message());
                            self->connected_ = true;
                            self->write();
                          });
  }

  void write() {
    stream_.expires_after(kReadTimeout);
    http::async_write(stream_, req_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->retry_or_fail("write: " + ec.message());
      self->parser_.emplace();
      self->parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
      self->read();
    });
  }

  void read() {
    stream_.expires_after(kReadTimeout);
    http::async_read_some(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  // A keep-alive connection the server closed while idle fails the first write or read;
  // that is no failure of the request, which is sent once more on a new connection.
  void retry_or_fail(const std::string& what) {
    if (reused_ && !retried_ && !(parser_ && parser_->is_header_done())) {
      reset_connection();
      return send(true);
    }
    fail(what);
  }

  void on_read(beast::error_code ec) {
    const auto now = Clock::now();
    if (ec) return retry_or_fail("read: " + ec.message());
    auto& response = parser_->get();
    if (parser_->is_header_done() && response.result() == http::status::ok &&
        run_.options->stream) {
      for (std::string& data : sse_.feed(response.body())) on_event(data, now);
      response.body().clear();
    }
    if (!parser_->is_done()) return read();
    if (response.result() != http::status::ok) {
      std::string body = response.body().substr(0, 300);
      return fail("HTTP " + std::to_string(response.result_int()) + ": " + body);
    }
    RequestRecord& r = record();
    r.e2e = seconds_between(sent_, now);
    if (run_.options->stream) {
      r.streamed = true;
      if (!seen_text_) r.ttft = r.e2e;
      if (!usage_seen_) r.output_tokens = chunks_;  // a server without usage: one per chunk
      if (!r.error.empty()) return fail(r.error);
    } else {
      const json body = json::parse(response.body(), nullptr, false);
      if (!(run_.options->embeddings ? read_embedding(body) : read_choice(body)))
        return fail("unexpected response: " + response.body().substr(0, 300));
    }
    r.ok = true;
    const bool keep = parser_->keep_alive();
    end(now);
    if (!keep) reset_connection();
    take_next();
  }

  // A whole completion: its first choice's text and finish reason, and the usage.
  bool read_choice(const json& body) {
    if (body.is_discarded() || !first_choice(body)) return false;
    const json& choice = *first_choice(body);
    RequestRecord& r = record();
    r.text = text_of(choice);
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      r.finish_reason = choice["finish_reason"];
    read_usage(body);
    return true;
  }

  // An embeddings answer: its one vector as the record's text, its usage's prompt tokens.
  bool read_embedding(const json& body) {
    const json* data = body.is_object() && body.contains("data") && body["data"].is_array() &&
                               body["data"].size() == 1 && body["data"][0].is_object()
                           ? &body["data"][0]
                           : nullptr;
    if (data == nullptr || !data->contains("embedding") || !(*data)["embedding"].is_array())
      return false;
    std::vector<float> embedding;
    for (const json& x : (*data)["embedding"])
      embedding.push_back(x.is_number() ? x.get<float>() : std::nanf(""));
    record().text = embedding_text(embedding);
    read_usage(body);
    return true;
  }

  void on_event(const std::string& data, Clock::time_point now) {
    if (data == "[DONE]") return;
    const json chunk = json::parse(data, nullptr, false);
    RequestRecord& r = record();
    if (chunk.is_discarded()) return;
    if (chunk.is_object() && chunk.contains("error") && !chunk["error"].is_null()) {
      r.error = "stream error: " + chunk["error"].dump().substr(0, 300);
      return;
    }
    read_usage(chunk);
    if (!first_choice(chunk)) return;
    const json& choice = *first_choice(chunk);
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      r.finish_reason = choice["finish_reason"];
    const std::string text = text_of(choice);
    if (text.empty()) return;
    ++chunks_;
    if (!seen_text_)
      r.ttft = seconds_between(sent_, now);
    else
      r.itl.push_back(seconds_between(last_text_, now));
    seen_text_ = true;
    last_text_ = now;
    r.text += text;
  }

  void read_usage(const json& body) {
    if (!body.contains("usage") || !body["usage"].is_object()) return;
    const json& usage = body["usage"];
    RequestRecord& r = record();
    if (const json* n = count_at(usage, "completion_tokens")) {
      r.output_tokens = n->get<int64_t>();
      usage_seen_ = true;
    }
    if (const json* n = count_at(usage, "prompt_tokens")) r.prompt_tokens = n->get<int64_t>();
    if (usage.contains("prompt_tokens_details") && usage["prompt_tokens_details"].is_object())
      if (const json* n = count_at(usage["prompt_tokens_details"], "cached_tokens"))
        r.cached_tokens = n->get<int64_t>();
  }

  void fail(const std::string& what) {
    const auto now = Clock::now();
    RequestRecord& r = record();
    r.ok = false;
    r.error = what;
    r.e2e = seconds_between(sent_, now);
    // A stream cut short records what it had received, as one that ended with an error
    // event does: its first token's time and its chunks (a server's usage never came).
    if (run_.options->stream && seen_text_) {
      r.streamed = true;
      if (!usage_seen_) r.output_tokens = chunks_;
    }
    end(now);
    reset_connection();
    take_next();
  }

  void end(Clock::time_point now) {
    run_.last_end = std::max(run_.last_end, now);
    if (run_.options->on_done) run_.options->on_done(record());
  }

  void reset_connection() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    buffer_.clear();
    connected_ = false;
  }

  void close() {
    if (connected_) reset_connection();
  }

  Run& run_;
  beast::tcp_stream stream_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  std::optional<http::response_parser<http::string_body>> parser_;
  SseReader sse_;
  size_t index_ = 0;
  bool connected_ = false, reused_ = false, retried_ = false;
  bool seen_text_ = false, usage_seen_ = false;
  int64_t chunks_ = 0;
  Clock::time_point sent_, last_text_;
};

}  // namespace

ServerUrl parse_server_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme)
    throw std::invalid_argument("--url: only http://HOST[:PORT] URLs are supported");
  url.remove_prefix(kScheme.size());
  ServerUrl out;
  const size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : url.substr(slash);
  // Credentials in a URL would be echoed in every message that names it.
  if (authority.find('@') != std::string_view::npos)
    throw std::invalid_argument("--url: user:password@ is not supported; send --api-key");
  const size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    out.port = std::string(authority.substr(colon + 1));
    authority = authority.substr(0, colon);
    const bool digits = !out.port.empty() && out.port.size() <= 5 &&
                        out.port.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(out.port) < 1 || std::stoi(out.port) > 65535)
      throw std::invalid_argument("--url: bad port in " + std::string(url) + " (1 to 65535)");
  }
  if (authority.size() >= 2 && authority.front() == '[' && authority.back() == ']')
    authority = authority.substr(1, authority.size() - 2);
  if (authority.empty()) throw std::invalid_argument("--url: no host");
  out.host = std::string(authority);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.size() >= 3 && path.substr(path.size() - 3) == "/v1") path.remove_suffix(3);
  out.prefix = std::string(path);
  return out;
}

namespace {

// http://HOST:PORT as a message names it, an IPv6 host back in its brackets.
std::string server_address(const ServerUrl& url) {
  const bool v6 = url.host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + url.host + "]" : url.host) + ":" + url.port;
}

// The /v1/models entry whose id is `model`, or the first when `model` is empty; null when
// the list has no such entry. Ids that are not strings are no one's.
const json* listed_model(const json& list, const std::string& model) {
  if (!list.is_object() || !list.contains("data") || !list["data"].is_array()) return nullptr;
  for (const json& entry : list["data"]) {
    if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_string()) continue;
    if (model.empty() || entry["id"].get<std::string>() == model) return &entry;
  }
  return nullptr;
}

}  // namespace

ServerInfo discover_server(const ServerUrl& url, const std::string& model) {
  ServerInfo info;
  Reply models;
  try {
    models = fetch(url, http::verb::get, "/v1/models", "");
  } catch (const std::exception& e) {
    // A URL nothing answers at is a bad flag value (exit 2), like a model file not found.
    throw std::invalid_argument("--url: cannot reach " + server_address(url) + ": " + e.what());
  }
  // A server that wants a key asks for it here, before any figure is measured.
  if (models.status == 401 || models.status == 403) {
    throw std::invalid_argument(std::string(url.api_key.empty()
                                                ? "--api-key: the server wants one"
                                                : "--api-key: the server refuses it") +
                                " (HTTP " + std::to_string(models.status) + " from /v1/models)");
  }
  // Every OpenAI-compatible server lists its models: none here is a URL with a path past
  // the server's base (.../v1/completions), which every request would repeat.
  if (models.status == 404) {
    throw std::invalid_argument("--url: no /v1/models under " + server_address(url) + url.prefix +
                                " (HTTP 404); give the server's base URL, http://HOST:PORT");
  }
  int64_t vocab = 0;
  const json list = json::parse(models.body, nullptr, false);
  info.model = model;
  const json* entry = models.status == 200 ? listed_model(list, model) : nullptr;
  if (entry != nullptr) {
    info.model = (*entry)["id"].get<std::string>();
    if (const json* length = count_at(*entry, "max_model_len"))
      info.context_length = length->get<int64_t>();
    const auto meta = entry->find("meta");  // llama-server
    if (meta != entry->end() && meta->is_object())
      if (const json* n = count_at(*meta, "n_vocab")) vocab = n->get<int64_t>();
  }
  // llama-server and tandem read "content"/"add_special", vLLM "prompt"/"add_special_tokens".
  const std::string passage(pool_passage());
  json tokenize = {{"content", passage},
                   {"add_special", false},
                   {"parse_special", false},
                   {"prompt", passage},
                   {"add_special_tokens", false}};
  if (!info.model.empty()) tokenize["model"] = info.model;
  try {
    const Reply reply = fetch(url, http::verb::post, "/tokenize", tokenize.dump());
    const json tokens = json::parse(reply.body, nullptr, false);
    if (reply.status == 200 && !tokens.is_discarded() && tokens.contains("tokens") &&
        tokens["tokens"].is_array()) {
      std::vector<int32_t> ids;
      for (const json& t : tokens["tokens"])
        if (t.is_number_integer()) ids.push_back(t.get<int32_t>());
      info.token_pool = distinct_ids(ids);
      info.pool_source = "the server's /tokenize of the prompt passage";
    }
  } catch (const std::exception&) {
    // No /tokenize: the fallback below.
  }
  if (info.token_pool.empty()) {
    // Ids well inside any large vocabulary: above the byte and control tokens at the start,
    // below the special tokens some models add at the end.
    const int64_t lo = vocab > 0 ? std::min<int64_t>(1000, vocab / 4) : 1000;
    const int64_t hi = vocab > 0 ? std::min<int64_t>(5000, vocab / 2) : 5000;
    for (int64_t id = lo; id < hi; ++id) info.token_pool.push_back(static_cast<int32_t>(id));
    info.pool_source = "ids " + std::to_string(lo) + ".." + std::to_string(hi - 1) +
                       " (the server has no /tokenize)";
  }
  return info;
}

LoadResult run_http(const ServerUrl& url, const std::string& model,
                    const std::vector<PlannedRequest>& workload, const LoadOptions& options) {
  Run run;
  run.url = url;
  run.model = model;
  run.workload = &workload;
  run.options = &options;
  run.records.resize(workload.size());
  tcp::resolver resolver(run.ioc);
  run.endpoints = resolver.resolve(url.host, url.port);
  const size_t slots = options.concurrency > 0
                           ? std::min<size_t>(options.concurrency, workload.size())
                           : workload.size();
  run.start = Clock::now();
  run.last_end = run.start;
  for (size_t i = 0; i < slots; ++i) std::make_shared<Slot>(run)->take_next();
  run.ioc.run();
  LoadResult result;
  result.records = std::move(run.records);
  result.duration_seconds = seconds_between(run.start, run.last_end);
  return result;
}

}  // namespace tandem::bench
