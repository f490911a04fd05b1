// Soak and stress of `tandem serve` on the tiny model: storms of 1000 concurrent
// connections (one Asio io_context in this process) against a server whose queue is
// bounded, so that some requests get 503, mixing /v1/completions and /v1/chat/completions,
// streamed and whole, seeded sampling with top_k/top_p/min_p, stop strings, clients that
// hang up mid-stream and clients that hang up before a whole answer arrives (half of the
// hang-ups close with a TCP reset, as a crashed client does).
//
// After each storm: the KV pool is full again and nothing is running or waiting; the
// server's counters agree with what the clients saw; the server still answers; every
// completed answer (all, or a random sample) equals a replay of the same request on the
// quiet server; and the server's RSS is back near where a warm-up round of the same shape
// left it.
//
//   ctest -L stress                      the short form (CI): one storm round
//   TANDEM_STRESS=full ctest -L stress   ten storm rounds with longer generations
//   TANDEM_STRESS_SEED=N                 replays a run (each run prints its seed)
//
// The test raises RLIMIT_NOFILE to the hard limit (the server inherits it) and skips when
// the hard limit cannot hold 1000 connections at both ends.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"
#include "tests/stress/storm_client.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TANDEM_STRESS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TANDEM_STRESS_SANITIZED 1
#endif
#endif

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using Json = nlohmann::json;
using Kind = Outcome::Kind;

#ifdef TANDEM_STRESS_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

constexpr int kConnections = 1000;
// Both ends of 1000 connections live in this process and the server, plus their files.
constexpr rlim_t kNeededDescriptors = 2200;

// The server under stress: a batch of 32 and a queue of 640 behind it, so that a storm
// of 1000 requests overflows it; a KV pool of 2048 tokens (128 blocks), so that admission
// also waits for blocks; two I/O threads, as on a production machine (sessions then run
// on strands of a shared pool; with one thread, the default here, they could not race).
const std::vector<std::string> kServerArgs = {"--max-batch", "32",   "--max-queue",  "640",
                                              "--kv-tokens", "2048", "--io-threads", "2"};

struct StressConfig {
  bool full = false;
  int rounds = 1;                // storm rounds after the warm-up round
  int requests_per_round = 0;    // planned requests of a round
  int max_tokens = 16;           // upper bound of a request's max_tokens
  size_t replays_per_round = 0;  // completed answers replayed, at most
  std::chrono::seconds storm_deadline{0};
  std::chrono::seconds settle_deadline{0};
};

StressConfig config() {
  StressConfig c;
  const char* mode = std::getenv("TANDEM_STRESS");
  c.full = mode != nullptr && std::string(mode) == "full";
  const int slow = kSanitized ? 4 : 1;  // sanitizer builds run several times slower
  if (c.full) {
    c.rounds = 10;
    c.requests_per_round = 3000;
    c.max_tokens = 96;
    c.replays_per_round = 300;
  } else {
    c.rounds = 1;
    c.requests_per_round = kSanitized ? 1200 : 2000;
    c.max_tokens = 16;
    c.replays_per_round = kSanitized ? 200 : 400;
  }
  c.storm_deadline = std::chrono::seconds(120 * slow);
  c.settle_deadline = std::chrono::seconds(30 * slow);
  return c;
}

uint64_t run_seed() {
  if (const char* s = std::getenv("TANDEM_STRESS_SEED")) return std::stoull(s);
  return std::random_device{}() * 0x9e3779b97f4a7c15ull ^ std::random_device{}();
}

// Raises the soft descriptor limit to the hard one; false when that is too low.
bool raise_descriptor_limit(rlim_t* hard) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  *hard = limit.rlim_max;
  if (limit.rlim_max < kNeededDescriptors) return false;
  limit.rlim_cur = limit.rlim_max;
  return ::setrlimit(RLIMIT_NOFILE, &limit) == 0;
}

// The server's resident set in KiB, from /proc/<pid>/status.
int64_t rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

bool alive(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == 0;
}

// The counters and gauges a round is judged by.
struct Gauges {
  double running = 0, waiting = 0, kv_used = 0, kv_capacity = 0;
  double rejected = 0;  // 503s of the two completion routes
  double answered_200 = 0;
  double stop = 0, length = 0, cancelled = 0, error = 0;
};

Gauges read_gauges(uint16_t port) {
  const std::string page = fetch(port, "GET", "/metrics").body;
  auto value = [&](const std::string& series) { return metric_value(page, series).value_or(0); };
  auto http = [&](const char* status) {
    return value(std::string("tandem_http_requests_total{endpoint=\"/v1/completions\",status=\"") +
                 status + "\"}") +
           value(std::string(
                     "tandem_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"") +
                 status + "\"}");
  };
  auto finished = [&](const char* reason) {
    return value(std::string("tandem_generations_finished_total{reason=\"") + reason + "\"}");
  };
  Gauges g;
  g.running = value("tandem_requests_running");
  g.waiting = value("tandem_requests_waiting");
  g.kv_used = value("tandem_kv_blocks_used");
  g.kv_capacity = value("tandem_kv_blocks_capacity");
  g.rejected = http("503");
  g.answered_200 = http("200");
  g.stop = finished("stop");
  g.length = finished("length");
  g.cancelled = finished("cancelled");
  g.error = finished("error");
  return g;
}

// Polls /metrics until nothing runs, waits or holds KV blocks; fails the test with the
// last reading if that does not happen before the deadline.
Gauges wait_until_settled(uint16_t port, std::chrono::seconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  Gauges g = read_gauges(port);
  while (g.running != 0 || g.waiting != 0 || g.kv_used != 0) {
    if (std::chrono::steady_clock::now() > until) {
      ADD_FAILURE() << "the server did not settle: running " << g.running << ", waiting "
                    << g.waiting << ", KV blocks used " << g.kv_used;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // between polls, bounded
    g = read_gauges(port);
  }
  return g;
}

// What a planned request is for: its answer is checked against `expected_text` when set.
struct Planned {
  PlannedRequest request;
  std::optional<std::string> expected_text;  // a stop-string request: the text before it
};

// A quiet answer from which a stop request is made: the same body with a `stop` string
// taken from the first half of the text, so the request must end on it.
struct StopSource {
  Json body;
  std::string text;
};

const std::vector<std::string> kWords = {"the",    "river", "stone", "quick", "light", "over",
                                         "under",  "seven", "blue",  "night", "tower", "bread",
                                         "market", "slow",  "green", "paper", "cloud", "iron"};

std::string prompt_text(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> count(3, 20);
  std::uniform_int_distribution<size_t> word(0, kWords.size() - 1);
  std::string text;
  for (int i = count(rng); i > 0; --i) text += (text.empty() ? "" : " ") + kWords[word(rng)];
  return text;
}

template <typename T>
T pick(std::mt19937_64& rng, const std::vector<T>& choices) {
  return choices[std::uniform_int_distribution<size_t>(0, choices.size() - 1)(rng)];
}

// Seeded sampling with the filters on or off at random.
void add_sampling(std::mt19937_64& rng, Json& body, int max_tokens) {
  body["max_tokens"] = std::uniform_int_distribution<int>(1, max_tokens)(rng);
  body["seed"] = rng() >> 1;
  body["temperature"] = pick<double>(rng, {0.0, 0.6, 1.0, 1.5});
  if (rng() % 2) body["top_k"] = pick<int>(rng, {0, 1, 8, 50});
  if (rng() % 2) body["top_p"] = pick<double>(rng, {1.0, 0.9, 0.5});
  if (rng() % 2) body["min_p"] = pick<double>(rng, {0.0, 0.05, 0.2});
}

PlannedRequest request_of(const Json& body, bool chat) {
  PlannedRequest r;
  r.chat = chat;
  r.stream = body.value("stream", false);
  r.target = chat ? "/v1/chat/completions" : "/v1/completions";
  r.body = body.dump();
  return r;
}

std::vector<Planned> plan_round(std::mt19937_64& rng, const StressConfig& c,
                                const std::vector<StopSource>& stop_sources) {
  std::vector<Planned> plan;
  std::uniform_int_distribution<int> percent(0, 99);
  for (int i = 0; i < c.requests_per_round; ++i) {
    const int roll = percent(rng);
    Planned p;
    if (roll < 10 && !stop_sources.empty()) {  // ends on a stop string
      const StopSource& source = pick(rng, stop_sources);
      Json body = source.body;
      const std::string& text = source.text;
      const size_t half = text.size() / 2;
      const size_t at = std::uniform_int_distribution<size_t>(0, half)(rng);
      size_t length = std::uniform_int_distribution<size_t>(1, 3)(rng);
      length = std::min(length, text.size() - at);
      const std::string stop = text.substr(at, length);
      // Only ASCII: a cut inside a UTF-8 sequence is not text a client could send.
      if (std::any_of(stop.begin(), stop.end(), [](char ch) { return ch & 0x80; })) {
        --i;
        continue;
      }
      body["stop"] = Json::array({stop});
      body["stream"] = rng() % 2 == 0;
      p.request = request_of(body, false);
      p.expected_text = text.substr(0, text.find(stop));
      plan.push_back(std::move(p));
      continue;
    }
    const bool chat = rng() % 2 == 0;
    Json body;
    if (chat) {
      body["messages"] = Json::array({{{"role", "user"}, {"content", prompt_text(rng)}}});
    } else {
      body["prompt"] = prompt_text(rng);
    }
    add_sampling(rng, body, c.max_tokens);
    if (roll < 25) {  // hangs up mid-stream
      body["stream"] = true;
      p.request = request_of(body, chat);
      p.request.hang_up = PlannedRequest::HangUp::kAfterEvents;
      p.request.hang_up_events = std::uniform_int_distribution<int>(1, 6)(rng);
      p.request.reset = rng() % 2 == 0;
    } else if (roll < 35) {  // hangs up before the whole answer
      body["stream"] = false;
      p.request = request_of(body, chat);
      p.request.hang_up = PlannedRequest::HangUp::kAfterDelay;
      p.request.hang_up_delay = std::chrono::microseconds(
          rng() % 2 ? 0 : std::uniform_int_distribution<int>(1, 20'000)(rng));
      p.request.reset = rng() % 2 == 0;
    } else {
      body["stream"] = rng() % 2 == 0;
      if (body["stream"] && rng() % 4 == 0) body["stream_options"] = {{"include_usage", true}};
      p.request = request_of(body, chat);
    }
    plan.push_back(std::move(p));
  }
  return plan;
}

std::vector<PlannedRequest> requests_of(const std::vector<Planned>& plan) {
  std::vector<PlannedRequest> out;
  for (const auto& p : plan) out.push_back(p.request);
  return out;
}

// Quiet whole answers to seeded completions, the sources of stop-string requests.
std::vector<StopSource> stop_sources(uint16_t port, std::mt19937_64& rng, int max_tokens) {
  std::vector<Json> bodies;
  std::vector<PlannedRequest> plan;
  for (int i = 0; i < 48; ++i) {
    Json body{{"prompt", prompt_text(rng)}};
    add_sampling(rng, body, max_tokens);
    body["max_tokens"] = max_tokens;
    body["temperature"] = 0.8;
    bodies.push_back(body);
    plan.push_back(request_of(body, false));
  }
  const std::vector<Outcome> outcomes = run_storm(port, plan, 8, std::chrono::seconds(120));
  std::vector<StopSource> sources;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_EQ(outcomes[i].kind, Kind::kCompleted) << outcomes[i].error;
    if (outcomes[i].text.size() >= 4) sources.push_back({bodies[i], outcomes[i].text});
  }
  return sources;
}

struct RoundTally {
  int completed = 0, overloaded = 0, hung_up_streams = 0, hung_up_whole = 0;
  int blind_hang_ups = 0;  // before any byte of the answer arrived
  int blind_resets = 0;    // those that closed with a reset
  int seen_200 = 0, stop = 0, length = 0, stop_ended = 0;
  int replayed = 0, replays_equal = 0;
  int server_cancelled = 0;  // generations the server cancelled for vanished clients
  int unread = 0;            // requests reset before the server read them
};

// Runs one storm round and checks what the clients saw and what the server counted.
RoundTally storm_round(ServerProcess& server, std::mt19937_64& rng, const StressConfig& c,
                       const std::vector<StopSource>& sources, const Gauges& before,
                       std::vector<Planned>* plan_out, std::vector<Outcome>* outcomes_out) {
  const uint16_t port = server.port();
  std::vector<Planned> plan = plan_round(rng, c, sources);
  StormStats stats;
  std::vector<Outcome> outcomes =
      run_storm(port, requests_of(plan), kConnections, c.storm_deadline, &stats);
  EXPECT_FALSE(stats.timed_out) << stats.outstanding << " requests had no answer in "
                                << c.storm_deadline.count() << " s";
  EXPECT_TRUE(stats.all_connected_at_once)
      << "only " << stats.peak_open << " of " << kConnections << " connections were open at once";

  RoundTally t;
  int failures = 0;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const Outcome& o = outcomes[i];
    switch (o.kind) {
      case Kind::kCompleted:
        ++t.completed;
        ++t.seen_200;
        (o.finish_reason == "stop" ? t.stop : t.length) += 1;
        if (plan[i].expected_text) {
          EXPECT_EQ(o.finish_reason, "stop") << plan[i].request.body;
          EXPECT_EQ(o.text, *plan[i].expected_text) << plan[i].request.body;
          if (o.finish_reason == "stop" && o.text == *plan[i].expected_text) ++t.stop_ended;
        }
        break;
      case Kind::kOverloaded:
        ++t.overloaded;
        break;
      case Kind::kHungUp:
        (plan[i].request.stream ? t.hung_up_streams : t.hung_up_whole) += 1;
        if (o.status == 0) ++t.blind_hang_ups;
        if (o.status == 0 && plan[i].request.reset) ++t.blind_resets;
        if (o.status == 200) ++t.seen_200;
        if (o.status == 503) ++t.overloaded;
        break;
      case Kind::kFailed:
        if (++failures <= 5) ADD_FAILURE() << "request " << i << ": " << o.error;
        break;
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(t.overloaded, 0) << "the bounded queue never overflowed: no 503 to check";
  EXPECT_GT(t.completed, 0);

  const Gauges after = wait_until_settled(port, c.settle_deadline);
  EXPECT_EQ(after.kv_capacity, before.kv_capacity);
  EXPECT_TRUE(alive(server.pid())) << server.stderr_text();
  // Every planned request reached the server (hang-ups come after the request is
  // written) and was refused with a 503 or ended exactly one generation; except that a
  // reset arriving before the server read the request may discard it unread.
  const double rejected = after.rejected - before.rejected;
  const double finished = (after.stop - before.stop) + (after.length - before.length) +
                          (after.cancelled - before.cancelled) + (after.error - before.error);
  EXPECT_LE(rejected + finished, static_cast<double>(plan.size()));
  EXPECT_GE(rejected + finished, static_cast<double>(plan.size() - t.blind_resets));
  EXPECT_EQ(after.error - before.error, 0);
  // A client that hung up before reading anything may have been refused unseen.
  EXPECT_GE(rejected, t.overloaded);
  EXPECT_LE(rejected, t.overloaded + t.blind_hang_ups);
  EXPECT_GE(after.answered_200 - before.answered_200, t.seen_200);
  // Generations that ended normally include every answer the clients read whole; the
  // rest of the hang-ups raced to an end before the server noticed.
  EXPECT_GE(after.stop - before.stop, t.stop);
  EXPECT_GE(after.length - before.length, t.length);
  EXPECT_LE(after.cancelled - before.cancelled, t.hung_up_streams + t.hung_up_whole);
  t.server_cancelled = static_cast<int>(after.cancelled - before.cancelled);
  t.unread = static_cast<int>(static_cast<double>(plan.size()) - rejected - finished);
  *plan_out = std::move(plan);
  *outcomes_out = std::move(outcomes);
  return t;
}

// Sends a sample of the completed requests again on the quiet server, a few at a time,
// and checks each answer equals the one the storm got.
void replay(uint16_t port, std::mt19937_64& rng, const StressConfig& c,
            const std::vector<Planned>& plan, const std::vector<Outcome>& outcomes, RoundTally& t) {
  std::vector<size_t> completed;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].kind == Kind::kCompleted) completed.push_back(i);
  }
  std::shuffle(completed.begin(), completed.end(), rng);
  if (completed.size() > c.replays_per_round) completed.resize(c.replays_per_round);
  std::vector<PlannedRequest> again;
  for (size_t i : completed) again.push_back(plan[i].request);
  const std::vector<Outcome> replays = run_storm(port, again, 8, c.storm_deadline);
  int mismatches = 0;
  for (size_t k = 0; k < completed.size(); ++k) {
    const Outcome& first = outcomes[completed[k]];
    const Outcome& second = replays[k];
    ++t.replayed;
    if (second.kind == Kind::kCompleted && second.text == first.text &&
        second.finish_reason == first.finish_reason) {
      ++t.replays_equal;
    } else if (++mismatches <= 5) {
      ADD_FAILURE() << "replay differs for " << plan[completed[k]].request.target << " "
                    << plan[completed[k]].request.body << "\nstorm:  [" << first.finish_reason
                    << "] " << first.text << "\nreplay: [" << second.finish_reason << "] "
                    << second.text << " " << second.error;
    }
  }
}

void expect_serves_a_good_request(uint16_t port) {
  const HttpResult health = fetch(port, "GET", "/health");
  EXPECT_EQ(health.status, 200) << health.body;
  const HttpResult answer =
      fetch(port, "POST", "/v1/completions", R"({"prompt":"the river","max_tokens":4,"seed":1})");
  EXPECT_EQ(answer.status, 200) << answer.body;
}

TEST(ServerStress, StormsLeaveNoStuckRequestsLeakedBlocksOrChangedAnswers) {
  rlim_t hard = 0;
  if (!raise_descriptor_limit(&hard)) {
    GTEST_SKIP() << "RLIMIT_NOFILE hard limit is " << hard << "; the storm needs at least "
                 << kNeededDescriptors << " descriptors (raise it with ulimit -Hn)";
  }
  const StressConfig c = config();
  const uint64_t seed = run_seed();
  std::printf("stress[%s]: seed %llu (TANDEM_STRESS_SEED=%llu reproduces it)\n",
              c.full ? "full" : "short", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const auto started = std::chrono::steady_clock::now();

  // One malloc arena in the server (glibc reads MALLOC_ARENA_MAX at start; the child
  // inherits it): with an arena per thread, each of the I/O, scheduler and device threads
  // keeps its own freed high-water mark and RSS wanders by 2-6 MiB from round to round,
  // which would hide a leak; with one, ten full rounds stay within 1 MiB.
  const char* arenas = std::getenv("MALLOC_ARENA_MAX");
  const std::string saved_arenas = arenas ? arenas : "";
  ::setenv("MALLOC_ARENA_MAX", "1", 1);
  ServerProcess server(tiny_model(), kServerArgs);
  if (arenas) {
    ::setenv("MALLOC_ARENA_MAX", saved_arenas.c_str(), 1);
  } else {
    ::unsetenv("MALLOC_ARENA_MAX");
  }
  const uint16_t port = server.port();
  const Gauges initial = read_gauges(port);
  ASSERT_GT(initial.kv_capacity, 0);
  const std::vector<StopSource> sources = stop_sources(port, rng, c.max_tokens);
  ASSERT_FALSE(sources.empty()) << "no quiet answer long enough to take a stop string from";

  std::vector<Planned> plan;
  std::vector<Outcome> outcomes;
  // The warm-up round has the storm's shape: after it the allocator holds what a round
  // needs, so RSS after the storms can be compared with RSS after it.
  storm_round(server, rng, c, sources, read_gauges(port), &plan, &outcomes);
  if (::testing::Test::HasFailure()) return;
  const int64_t rss_warm = rss_kib(server.pid());
  // The bound: 10% of the warm RSS plus 4 MiB. After the warm-up round the (single) malloc
  // arena already holds a round's high-water mark, and what later rounds add is
  // fragmentation: at most 1 MiB over ten full rounds here (RSS ~19 MiB). A leak of 4 KiB
  // per request (a response body, a session's buffers) goes past the bound within the
  // short form's 2000 requests; 256 bytes per request within the full form's 30000.
  // Sanitizer builds keep freed memory in quarantine and shadow, so there RSS is only
  // printed (LeakSanitizer checks the ASan build at the server's exit instead).
  const int64_t bound_kib = rss_warm / 10 + 4 * 1024;

  RoundTally total;
  int64_t rss_after = rss_warm;
  for (int round = 0; round < c.rounds; ++round) {
    RoundTally t = storm_round(server, rng, c, sources, read_gauges(port), &plan, &outcomes);
    replay(port, rng, c, plan, outcomes, t);
    expect_serves_a_good_request(port);
    wait_until_settled(port, c.settle_deadline);
    rss_after = rss_kib(server.pid());
    if (!kSanitized) {
      EXPECT_LE(rss_after, rss_warm + bound_kib)
          << "round " << round + 1 << ": RSS grew from " << rss_warm << " KiB after the warm-up to "
          << rss_after << " KiB";
    }
    std::printf(
        "stress round %d: %zu requests, %d completed, %d 503, %d hung up (the server "
        "cancelled %d, %d reset unread), %d replays equal of %d, RSS %lld KiB\n",
        round + 1, plan.size(), t.completed, t.overloaded, t.hung_up_streams + t.hung_up_whole,
        t.server_cancelled, t.unread, t.replays_equal, t.replayed,
        static_cast<long long>(rss_after));
    total.completed += t.completed;
    total.overloaded += t.overloaded;
    total.hung_up_streams += t.hung_up_streams;
    total.hung_up_whole += t.hung_up_whole;
    total.stop_ended += t.stop_ended;
    total.server_cancelled += t.server_cancelled;
    total.replayed += t.replayed;
    total.replays_equal += t.replays_equal;
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_EQ(total.replays_equal, total.replayed);
  EXPECT_GE(total.replayed, std::min<int>(200, total.completed));
  EXPECT_GT(total.stop_ended, 0);

  // A clean shutdown: the drain ends and the exit status is 0 (LeakSanitizer reports
  // leaks at exit in the ASan build, which makes it non-zero).
  EXPECT_EQ(server.signal_and_wait(SIGTERM), 0) << server.stderr_text();
  // The server reports a handler that threw, or a request it failed, on stderr.
  EXPECT_EQ(server.stderr_text().find("failed"), std::string::npos) << server.stderr_text();

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "stress[%s] summary: seed %llu, %d rounds x %d connections x %d requests: %d completed 200s, "
      "%d 503s, "
      "%d mid-stream disconnects, %d hang-ups before the answer (the server cancelled %d in all), "
      "%d stop-ended, %d/%d replays "
      "equal, RSS %lld KiB after warm-up, %lld KiB after the storms (bound +%lld KiB), %.1f s\n",
      c.full ? "full" : "short", static_cast<unsigned long long>(seed), c.rounds, kConnections,
      c.requests_per_round, total.completed, total.overloaded, total.hung_up_streams,
      total.hung_up_whole, total.server_cancelled, total.stop_ended, total.replays_equal,
      total.replayed, static_cast<long long>(rss_warm), static_cast<long long>(rss_after),
      static_cast<long long>(bound_kib), seconds);
}

// With a descriptor limit far below the connections waiting, accept fails with EMFILE;
// the server must retry and end up answering everyone, not stop accepting.
TEST(ServerStress, AcceptRetriesWhenOutOfDescriptors) {
  rlim_t hard = 0;
  if (!raise_descriptor_limit(&hard)) {
    GTEST_SKIP() << "RLIMIT_NOFILE hard limit is " << hard << "; need " << kNeededDescriptors;
  }
  constexpr rlim_t kServerLimit = 128;  // the server gets this soft limit; 600 connect
  constexpr int kClients = 600;
  rlimit mine{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &mine), 0);
  rlimit low = mine;
  low.rlim_cur = kServerLimit;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::optional<ServerProcess> server;
  try {
    server.emplace(tiny_model(), std::vector<std::string>{"--max-queue", "1000"});
  } catch (...) {
    ::setrlimit(RLIMIT_NOFILE, &mine);
    throw;
  }
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &mine), 0);

  // A few requests first, while descriptors are free: a server has usually served before
  // it runs out. (In the ASan+UBSan build this also fills UBSan's cache of checked
  // dynamic types: its slow path reads memory through a pipe(), which fails at the limit
  // and then reports a false "invalid vptr".)
  std::vector<PlannedRequest> warm;
  for (int i = 0; i < 16; ++i) {
    warm.push_back(request_of(Json{{"prompt", "the sea"}, {"max_tokens", 2}, {"seed", i}}, false));
  }
  for (const Outcome& o : run_storm(server->port(), warm, 16, config().storm_deadline)) {
    ASSERT_EQ(o.kind, Kind::kCompleted) << o.error;
  }

  std::vector<PlannedRequest> plan;
  for (int i = 0; i < kClients; ++i) {
    Json body{{"prompt", "the river"}, {"max_tokens", 2}, {"seed", i}};
    plan.push_back(request_of(body, false));
  }
  StormStats stats;
  const std::vector<Outcome> outcomes =
      run_storm(server->port(), plan, kClients, config().storm_deadline, &stats);
  // All were connected (in the listen backlog) at once, so the server hit its limit.
  EXPECT_TRUE(stats.all_connected_at_once);
  EXPECT_FALSE(stats.timed_out) << stats.outstanding << " requests had no answer";
  int completed = 0;
  int failures = 0;
  for (const Outcome& o : outcomes) {
    if (o.kind == Kind::kCompleted) {
      ++completed;
    } else if (++failures <= 5) {
      ADD_FAILURE() << o.error;
    }
  }
  EXPECT_EQ(completed, kClients);
  ASSERT_TRUE(alive(server->pid())) << server->stderr_text();
  expect_serves_a_good_request(server->port());
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
