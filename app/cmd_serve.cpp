// `tandem serve`: loads a model (or the embedded default one, generated and cached on
// first use), starts the device, the scheduler and the HTTP server, prints one line with
// the address once it listens, and serves until SIGINT or SIGTERM.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli_checks.h"
#include "app/command.h"
#include "runner/model/make_model.h"
#include "scheduler/engine.h"
#include "server/http_server.h"

namespace tandem::app {
namespace {

struct ServeOptions {
  std::string model;
  std::vector<std::string> served_model_names;
  std::string chat_template;  // a file; empty: the GGUF's own
  std::string reasoning_format = "none";
  std::string pooling;  // --pooling; empty: the file's pooling_type, else last
  int32_t ctx_size = 0;
  std::string overlap = "on";
  int threads = 0;
  int32_t max_batch = 64;
  int32_t max_step_tokens = 512;
  std::string prefill_chunk = "auto";
  int64_t kv_tokens = 0;
  int64_t kv_prefault = 0;
  int64_t grammar_cache_mib =
      static_cast<int64_t>(grammar::GrammarCache::kDefaultBudgetBytes >> 20);
  std::string kv_dtype = "f16";
  std::string device = "cpu";
  std::string prefix_cache = "on";
  int32_t max_queue = 256;
  SpecFlags spec;
  server::ServerOptions server;
};

// The default model: make-model's demo shape, f16, seed 0, under the user's cache dir.
// write_random_model writes beside the target and renames, so runs racing to create it
// both end with the same complete file.
std::filesystem::path default_model_path() {
  std::filesystem::path dir;
  // The XDG spec: a relative XDG_CACHE_HOME is invalid and ignored.
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') {
    dir = std::filesystem::path(xdg) / "tandem";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = std::filesystem::path(home) / ".cache" / "tandem";
  } else {
    dir = std::filesystem::temp_directory_path() / "tandem";
  }
  const std::filesystem::path path = dir / "tandem-demo-f16-seed0-v2.gguf";
  if (std::filesystem::exists(path)) return path;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {  // the environment's fault, as a bad flag would be: exit 2, one line
    throw UsageError("cannot create " + dir.string() + " for the default model (" + ec.message() +
                     "); set XDG_CACHE_HOME to a writable directory, or give --model");
  }
  std::cerr << "tandem serve: generating the default model at " << path.string() << "\n";
  make_model::MakeModelOptions options;
  options.shape = "demo";
  options.dtype = gguf::TensorType::kF16;
  options.seed = 0;
  options.out = path;
  make_model::write_random_model(options);
  return path;
}

// The startup line's word on speculative decoding, where it is on.
std::string spec_line(const SpecFlags& spec) {
  if (spec.tokens == 0) return "";
  return ", speculative decoding: n-gram " + spec.ngram + " drafts of up to " +
         std::to_string(spec.tokens) + " tokens while at most " + std::to_string(spec.max_batch) +
         " requests decode";
}

// A host as a URL writes it: an IPv6 address in brackets (http://[::1]:8080).
std::string url_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

std::string read_template_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) {
    throw UsageError("--chat-template: cannot read a template from " + path);
  }
  return text.str();
}

// The scheduler serves at most what the KV pool holds (Scheduler::context_length); a
// --kv-tokens below the context asked for says so once, with the way to raise it.
void note_lowered_context(int32_t ctx_size, int32_t model_context, const ModelCard& card) {
  const int32_t wanted = ctx_size > 0 ? std::min(ctx_size, model_context) : model_context;
  if (card.context_length >= wanted) return;
  std::fprintf(stderr,
               "tandem serve: context lowered from %d to %d tokens, what the KV cache holds; "
               "raise --kv-tokens to at least %d to serve the whole context\n",
               wanted, card.context_length, wanted);
}

// What the startup line says of the reasoning: whether answers split it off, at which marker.
std::string reasoning_line(const ModelCard& card) {
  if (!card.chat_template || !card.chat_template->reasoning) return "none";
  const ReasoningMarkers& markers = *card.chat_template->reasoning;
  return markers.open + "..." + markers.close +
         (card.chat_template->split_reasoning ? " split off" : " kept in content");
}

// What the startup line says of /v1/embeddings: its pooling and where that came from.
std::string embeddings_line(const ModelCard& card) {
  if (card.embedding_size == 0) return "off (this device computes none)";
  if (!card.pooling_refusal.empty())
    return "off (the file's pooling_type is not served; --pooling)";
  return std::to_string(card.embedding_size) + "-wide, " + std::string(pooling_name(card.pooling)) +
         " pooling (" + card.pooling_origin + ")";
}

int run_serve(ServeOptions o) {
  // Before the model loads: a bad log path would otherwise surface only after it.
  if (!o.server.access_log.empty() && o.server.access_log != "-")
    check_output_path("--access-log", o.server.access_log, /*in_place=*/true);
  const bool default_model = o.model.empty();
  const std::filesystem::path path =
      default_model ? default_model_path() : std::filesystem::path(o.model);

  EngineOptions engine_options;
  engine_options.model = path;
  engine_options.served_names = o.served_model_names;
  if (default_model && o.served_model_names.empty()) engine_options.served_names = {"tandem-demo"};
  if (!o.chat_template.empty()) {
    engine_options.chat_template = read_template_file(o.chat_template);
    engine_options.chat_template_origin = o.chat_template;
  }
  engine_options.split_reasoning = o.reasoning_format == "deepseek";
  engine_options.context_length = o.ctx_size;
  if (!o.pooling.empty()) engine_options.pooling = parse_pooling(o.pooling);
  engine_options.threads = o.threads;
  engine_options.kv_tokens = o.kv_tokens;
  engine_options.kv_prefault_tokens = o.kv_prefault;
  engine_options.grammar_cache_bytes = static_cast<size_t>(o.grammar_cache_mib) << 20;
  engine_options.kv_type = *parse_kv_type(o.kv_dtype);
  engine_options.device = o.device;
  engine_options.scheduler.overlap = o.overlap == "on";
  engine_options.scheduler.max_batch = o.max_batch;
  engine_options.scheduler.max_step_tokens = o.max_step_tokens;
  engine_options.scheduler.paced_prefill = o.prefill_chunk == "auto";
  engine_options.scheduler.prefill_chunk = prefill_chunk_value(o.prefill_chunk);
  engine_options.scheduler.max_queue = o.max_queue;
  engine_options.scheduler.prefix_cache = o.prefix_cache == "on";
  o.spec.set(engine_options.scheduler);
  std::unique_ptr<Engine> engine;
  try {
    engine = std::make_unique<Engine>(engine_options);
  } catch (const gguf::GgufError& e) {
    throw UsageError(std::string("--model: ") + e.what());
  } catch (const EngineOptionError& e) {
    throw UsageError(e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--kv-dtype: ") + e.what());
  }
  const ModelCard& card = engine->card();
  note_lowered_context(o.ctx_size, engine->config().context_length, card);
  if (card.pooling == Pooling::kCls && card.embedding_size > 0)
    std::fprintf(stderr,
                 "tandem serve: cls pooling reads the first position, which a causal model "
                 "computes from the first token alone: every text that starts with BOS gets "
                 "the same embedding\n");
  server::HttpServer http(engine->scheduler(), engine->tokenizer(), card, o.server);
  uint16_t port = 0;
  try {
    port = http.listen();
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string("--host/--port: ") + e.what());
  }
  engine->start();
  std::string kv_local;  // the sliding-window layers' own pool, when the model has one
  if (card.kv_local_capacity_tokens > 0)
    kv_local = " + sliding-window layers " + std::to_string(card.kv_local_capacity_tokens) +
               " tokens (window " + std::to_string(card.sliding_window) + ") at " +
               std::to_string(card.kv_local_bytes_per_token) + " bytes each";
  const DeviceInfo& device = engine->device_info();
  if (device.kv_prefaulted_tokens > 0)
    kv_local += ", the first " + std::to_string(device.kv_prefaulted_tokens) +
                " positions' pages written in " +
                std::to_string(static_cast<int>(device.kv_prefault_seconds * 1000 + 0.5)) + " ms";
  std::printf(
      "tandem: listening on http://%s:%u (model %s, context %d, vocab %d, chat template %s "
      "(tool calls: %s, reasoning: %s), embeddings %s, KV %lld tokens of %s at %lld bytes each%s, "
      "prefix cache "
      "%s, device %s, "
      "overlap %s%s)\n",
      url_host(o.server.host).c_str(), static_cast<unsigned>(port), path.string().c_str(),
      card.context_length, card.vocab_size,
      card.chat_template ? card.chat_template->origin.c_str() : "none",
      card.chat_template ? tool_call_format_name(card.chat_template->tool_format) : "none",
      reasoning_line(card).c_str(), embeddings_line(card).c_str(),
      static_cast<long long>(card.kv_capacity_tokens), card.kv_type.c_str(),
      static_cast<long long>(card.kv_bytes_per_token), kv_local.c_str(), o.prefix_cache.c_str(),
      engine->device_description().c_str(), o.overlap.c_str(), spec_line(o.spec).c_str());
  std::fflush(stdout);
  http.run();
  std::fprintf(stderr, "tandem serve: stopped\n");
  return 0;
}

}  // namespace

Subcommand make_serve_command(CLI::App& app) {
  auto opts = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over OpenAI-compatible HTTP");
  cmd->add_option("--model", opts->model,
                  "GGUF model file (default: the embedded demo model, generated on first use)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--served-model-name", opts->served_model_names,
                  "The names /v1/models lists and requests may use; responses report the "
                  "first (default: the file's stem, tandem-demo for the default model)")
      ->expected(1, -1)
      ->check(non_empty_name());
  cmd->add_option("--chat-template", opts->chat_template,
                  "A Jinja chat template file to use instead of the GGUF's "
                  "tokenizer.chat_template")
      ->check(CLI::ExistingFile);
  cmd->add_option("--reasoning-format", opts->reasoning_format,
                  "A thinking model's reasoning in chat answers: none (left in content) or "
                  "deepseek (split off as reasoning_content, and a reasoning item on "
                  "/v1/responses); a request's reasoning_format overrides it")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "deepseek"}));
  cmd->add_option("--pooling", opts->pooling,
                  "How /v1/embeddings pools the prompt's last hidden states: mean, cls or last "
                  "(default: the file's pooling_type, else last)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  cmd->add_option("--ctx-size", opts->ctx_size,
                  "The longest sequence (prompt + output) served, at most the model's context; "
                  "the default KV budget holds at least one (default: the model's context)")
      ->check(CLI::Range(16, 1 << 30));
  // An empty host listened on every interface (an unset variable in a launch script would
  // open the server to the network); an IPv6 address may come in a URL's brackets.
  cmd->add_option("--host", opts->server.host, "Address to listen on")
      ->capture_default_str()
      ->transform(CLI::Validator(
          [](std::string& host) {
            if (host.size() > 2 && host.front() == '[' && host.back() == ']')
              host = host.substr(1, host.size() - 2);
            return host.empty() ? std::string(
                                      "an empty host; give 0.0.0.0 (or ::) to listen on "
                                      "every interface")
                                : std::string();
          },
          "HOST"));
  // Read as a wider integer: CLI11 named a 16-bit overflow only "Could not convert".
  cmd->add_option_function<int64_t>(
         "--port", [opts](int64_t port) { opts->server.port = static_cast<uint16_t>(port); },
         "Port (0: pick a free one; default 8080)")
      ->check(CLI::Range(int64_t{0}, int64_t{65535}));
  cmd->add_option("--overlap", opts->overlap, "Overlap host work with device steps")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--threads", opts->threads, "Compute threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-batch", opts->max_batch, "Requests running at once")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--max-step-tokens", opts->max_step_tokens, "Tokens fed per step")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  add_prefill_chunk_option(*cmd, opts->prefill_chunk);
  cmd->add_option(
         "--kv-tokens", opts->kv_tokens,
         "KV cache capacity in tokens (default: the smaller of 2 GiB and 1048576 tokens, at "
         "least one context); below the context, the served context is lowered to it")
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 32));
  cmd->add_option("--kv-prefault", opts->kv_prefault,
                  "KV positions whose pages are written at startup, so that no request pays a "
                  "page's first write (0: none; more than the cache: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--grammar-cache-mib", opts->grammar_cache_mib,
                  "MiB that compiled grammars (structured outputs, tools) may hold for reuse, "
                  "at most 64 of them; least recently used go first (0: only the latest). Their "
                  "token masks, running requests' included, keep within it too (32 at least)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  add_kv_dtype_option(*cmd, opts->kv_dtype);
  add_device_option(*cmd, opts->device);
  cmd->add_option("--prefix-cache", opts->prefix_cache,
                  "Reuse the KV blocks of prompt prefixes computed before")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  add_spec_options(*cmd, opts->spec);
  // At least 1: every request waits in the queue until the scheduler admits it, so 0 refused
  // them all (with a 400 that blamed the request).
  cmd->add_option("--max-queue", opts->max_queue, "Requests waiting before 503")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  // An empty key would serve without authentication: a deploy script whose variable is
  // unset would open the server without a word.
  cmd->add_option("--api-key", opts->server.api_key, "Require 'Authorization: Bearer KEY'")
      ->check(CLI::Validator(
          [](std::string& key) {
            if (key.empty())
              return std::string(
                  "an empty key would leave the server open; leave --api-key out to serve "
                  "without one");
            // A header carries no blank or control byte in a token: such a key admits nobody.
            for (const char c : key)
              if (c < 0x21 || c > 0x7e)
                return std::string("a key is visible ASCII characters, without blanks");
            return std::string();
          },
          "KEY"));
  cmd->add_option("--max-body", opts->server.max_body, "Largest request body in bytes")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32))
      ->capture_default_str();
  cmd->add_option("--body-total-mib", opts->server.body_total_mib,
                  "MiB of request bodies all connections together may be receiving at once: "
                  "a request whose body would pass it gets 503")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--shutdown-grace", opts->server.shutdown_grace_seconds,
                  "Seconds running requests get to finish on SIGINT/SIGTERM")
      ->check(finite_range(0, 3600))
      ->capture_default_str();
  cmd->add_option("--idle-timeout", opts->server.idle_timeout_seconds,
                  "Seconds a keep-alive connection may wait for its next request")
      ->check(finite_range(0.01, 86400))
      ->capture_default_str();
  cmd->add_option("--read-timeout", opts->server.read_timeout_seconds,
                  "Seconds a request may take to arrive once begun")
      ->check(finite_range(0.01, 86400))
      ->capture_default_str();
  cmd->add_option("--write-timeout", opts->server.write_timeout_seconds,
                  "Seconds a response may go without the client taking any of it before the "
                  "connection is closed (a slow but steady reader keeps its stream)")
      ->check(finite_range(0.01, 86400))
      ->capture_default_str();
  cmd->add_option("--stream-backlog-mib", opts->server.stream_backlog_mib,
                  "MiB of a stream's events a client may fall behind by before it is dropped "
                  "as too slow and its generation cancelled")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--stream-backlog-total-mib", opts->server.stream_backlog_total_mib,
                  "MiB of stream events all clients together may fall behind by: past it, a "
                  "client more than 1 MiB behind is dropped as too slow")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--io-threads", opts->server.io_threads,
                  "HTTP I/O threads (default: 1, or 2 on machines with 8 cores or more)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--allowed-origins", opts->server.allowed_origins,
                  "CORS: origins browsers may call from, comma-separated, '*' for any (as vLLM "
                  "and llama-server allow by default) or '' for none")
      ->capture_default_str();
  cmd->add_option("--access-log", opts->server.access_log,
                  "Record each accepted generation request (id, user, route) as a JSON line "
                  "in FILE ('-': standard error)");
  return {cmd, [opts] { return run_serve(*opts); }};
}

}  // namespace tandem::app
