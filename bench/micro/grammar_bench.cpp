// The grammar engine: schema compile time (the issue's 30-property object), building a
// Vocabulary, and the mask per step on the ../shared vocabularies (llama-spm: 32k tokens,
// llama3: 128k). A mask benchmark replays one generation: a JSON text written for the
// schema, tokenized greedily (at each step the longest allowed token that spells the next
// bytes, as a model tends to), or a seeded random walk of allowed tokens. Each iteration
// times every fill_mask of the replay and reports the median and p99 per mask: "warm" with
// the CompiledGrammar's mask cache already filled by an earlier replay (the steady state of
// a server that has seen the schema before), "cold" with a fresh CompiledGrammar each
// iteration (the first request with a new schema). Figures are printed, never asserted.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>

#include <time.h>

#include <nlohmann/json.hpp>

#include "runner/gguf/gguf.h"
#include "runner/grammar/grammar.h"
#include "runner/grammar/matcher.h"
#include "runner/tokenizer/tokenizer.h"

namespace {

using namespace tandem::grammar;
using Json = nlohmann::ordered_json;

std::filesystem::path vocab_dir() {
  if (const char* dir = std::getenv("TANDEM_SHARED_DIR"))
    return std::filesystem::path(dir) / "vocab";
  return std::filesystem::path(TANDEM_SOURCE_DIR) / ".." / "shared" / "vocab";
}

std::shared_ptr<const Vocabulary> shared_vocabulary(const std::string& name) {
  const auto path = vocab_dir() / ("ggml-vocab-" + name + ".gguf");
  if (!std::filesystem::exists(path)) return nullptr;
  return Vocabulary::from_tokenizer(*tandem::Tokenizer::from_gguf(tandem::gguf::File::open(path)));
}

// The same 30-property object as the tests' schema suite (tests/runner/grammar), and a
// document that fits it.
const char* const kFieldTypes[] = {
    R"({"type": "string", "maxLength": 24})",
    R"({"type": "integer", "minimum": 0, "maximum": 100000})",
    R"({"type": "boolean"})",
    R"({"type": "number"})",
    R"({"enum": ["low", "medium", "high"]})",
    R"({"type": "string", "format": "date"})",
    R"({"type": "array", "items": {"type": "integer"}, "maxItems": 4})",
    R"({"type": ["string", "null"]})",
    R"({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x", "y"]})",
    R"({"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2,4}$"})"};

std::string thirty_property_schema() {
  std::string properties, required;
  for (int i = 0; i < 30; ++i) {
    const std::string name = "field_" + std::to_string(i);
    properties += (i ? ",\n" : "") + std::string("\"") + name + "\": " + kFieldTypes[i % 10];
    if (i % 3 != 2) required += (required.empty() ? "\"" : ", \"") + name + "\"";
  }
  return R"({"type": "object", "properties": {)" + properties + "}, \"required\": [" + required +
         "], \"additionalProperties\": false}";
}

std::string thirty_property_document() {
  const Json values[] = {"the quick brown fox",
                         4242,
                         true,
                         3.25,
                         "medium",
                         "2024-02-29",
                         Json::array({1, 2, 3}),
                         nullptr,
                         Json{{"x", 1.5}, {"y", -2}},
                         "ABC-1234"};
  Json doc = Json::object();
  for (int i = 0; i < 30; ++i) doc["field_" + std::to_string(i)] = values[i % 10];
  return doc.dump(2);
}

const char* const kToolSchema = R"({"type": "object", "properties": {
  "name": {"const": "get_weather"}, "arguments": {"type": "object", "properties": {
    "location": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer", "minimum": 1, "maximum": 14}}, "required": ["location"],
    "additionalProperties": false}}, "required": ["name", "arguments"],
  "additionalProperties": false})";

const char* const kToolDocument =
    R"({"name": "get_weather", "arguments": {"location": "Paris, France", "unit": "celsius", "days": 3}})";

const char* const kObjectDocument = R"({
  "users": [{"name": "Ann Lee", "age": 31, "tags": ["admin", "ops"], "active": true},
            {"name": "Bo", "age": null, "tags": [], "active": false, "score": -12.5e3}],
  "total": 2, "next": {"cursor": "c2Vjb25k", "more": false}
})";

bool bit(const std::vector<uint32_t>& mask, int32_t id) {
  return (mask[static_cast<size_t>(id) / 32] >> (id % 32)) & 1;
}

// Greedy tokenization of `text` under the grammar: the longest allowed token that spells
// the next bytes, then end-of-generation.
std::vector<int32_t> greedy_trace(const std::shared_ptr<const CompiledGrammar>& compiled,
                                  const std::string& text) {
  const Vocabulary& vocab = compiled->vocabulary();
  Matcher m(compiled);
  std::vector<uint32_t> mask(m.mask_words());
  std::vector<int32_t> trace;
  for (size_t pos = 0; pos < text.size();) {
    m.fill_mask(mask);
    int32_t best = -1;
    for (int32_t id = 0; id < vocab.size(); ++id) {
      const std::string_view b = vocab.bytes(id);
      if (bit(mask, id) && !b.empty() && text.compare(pos, b.size(), b) == 0 &&
          (best < 0 || b.size() > vocab.bytes(best).size()))
        best = id;
    }
    if (best < 0 || !m.advance(best)) throw std::runtime_error("the document does not fit");
    trace.push_back(best);
    pos += vocab.bytes(best).size();
  }
  if (!vocab.end_of_generation().empty()) trace.push_back(vocab.end_of_generation()[0]);
  return trace;
}

// A seeded random walk of allowed tokens, ending when the grammar accepts after `length`.
std::vector<int32_t> random_trace(const std::shared_ptr<const CompiledGrammar>& compiled,
                                  size_t length) {
  Matcher m(compiled);
  std::mt19937_64 rng(42);
  std::vector<uint32_t> mask(m.mask_words());
  std::vector<int32_t> trace;
  const Vocabulary& vocab = compiled->vocabulary();
  while (!m.is_terminated() && trace.size() < 4 * length) {
    m.fill_mask(mask);
    std::vector<int32_t> allowed, short_allowed;
    for (int32_t id = 0; id < vocab.size(); ++id) {
      if (!bit(mask, id)) continue;
      allowed.push_back(id);
      if (vocab.bytes(id).size() == 1) short_allowed.push_back(id);
    }
    const auto eog = vocab.end_of_generation();
    int32_t token;
    if (m.accepts() && trace.size() >= length && !eog.empty())
      token = eog[0];
    else if (trace.size() >= length && !short_allowed.empty())
      token = short_allowed[rng() % short_allowed.size()];  // heading for the end
    else
      token = allowed[rng() % allowed.size()];
    m.advance(token);
    trace.push_back(token);
  }
  return trace;
}

double thread_cpu_us() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

struct Times {
  std::vector<double> wall, cpu;  // microseconds per mask
};

// One replay: every mask timed, by the wall clock and by the thread's CPU clock (which a
// busy machine's other processes do not inflate; it costs a system call, so sub-microsecond
// masks read high on it).
void replay(const std::shared_ptr<const CompiledGrammar>& compiled,
            const std::vector<int32_t>& trace, Times& times) {
  Matcher m(compiled);
  std::vector<uint32_t> mask(m.mask_words());
  for (int32_t token : trace) {
    const double cpu_start = thread_cpu_us();
    const auto start = std::chrono::steady_clock::now();
    m.fill_mask(mask);
    const auto end = std::chrono::steady_clock::now();
    times.cpu.push_back(thread_cpu_us() - cpu_start);
    times.wall.push_back(std::chrono::duration<double, std::micro>(end - start).count());
    benchmark::DoNotOptimize(mask.data());
    m.advance(token);
  }
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct Workload {
  std::string vocab_name;
  std::string schema;    // "" for json_object mode
  std::string document;  // "" for a random walk
};

void masks(benchmark::State& state, const Workload& w, bool warm) {
  const auto vocab = shared_vocabulary(w.vocab_name);
  if (!vocab) {
    state.SkipWithError("vocabulary not found (../shared/vocab absent)");
    return;
  }
  const auto grammar = w.schema.empty() ? json_object_grammar() : compile_json_schema(w.schema);
  auto compiled = std::make_shared<const CompiledGrammar>(grammar, vocab);
  const auto trace =
      w.document.empty() ? random_trace(compiled, 300) : greedy_trace(compiled, w.document);
  Times times;
  for (auto _ : state) {
    if (!warm) {
      state.PauseTiming();
      compiled = std::make_shared<const CompiledGrammar>(grammar, vocab);
      state.ResumeTiming();
    }
    replay(compiled, trace, times);
  }
  state.counters["masks"] = static_cast<double>(trace.size());
  state.counters["median_us"] = percentile(times.wall, 0.5);
  state.counters["p99_us"] = percentile(times.wall, 0.99);
  state.counters["max_us"] = percentile(times.wall, 1.0);
  state.counters["cpu_median_us"] = percentile(times.cpu, 0.5);
  state.counters["cpu_p99_us"] = percentile(times.cpu, 0.99);
  state.counters["cache_KiB"] = static_cast<double>(compiled->cache_bytes()) / 1024.0;
}

void compile(benchmark::State& state, const std::string& schema) {
  size_t states = 0;
  for (auto _ : state) states = static_cast<size_t>(compile_json_schema(schema)->num_states());
  state.counters["states"] = static_cast<double>(states);
}

void precompute(benchmark::State& state, const std::string& schema, const std::string& vocab_name) {
  const auto vocab = shared_vocabulary(vocab_name);
  if (!vocab) {
    state.SkipWithError("vocabulary not found (../shared/vocab absent)");
    return;
  }
  const auto grammar = compile_json_schema(schema);
  for (auto _ : state) CompiledGrammar(grammar, vocab).precompute();
}

void vocabulary(benchmark::State& state, const std::string& name) {
  const auto path = vocab_dir() / ("ggml-vocab-" + name + ".gguf");
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("vocabulary not found (../shared/vocab absent)");
    return;
  }
  const auto tokenizer = tandem::Tokenizer::from_gguf(tandem::gguf::File::open(path));
  for (auto _ : state) benchmark::DoNotOptimize(Vocabulary::from_tokenizer(*tokenizer));
}

}  // namespace

int main(int argc, char** argv) {
  static const std::string thirty = thirty_property_schema();
  benchmark::RegisterBenchmark("compile/thirty_properties", compile, thirty)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("compile/tool_call", compile, std::string(kToolSchema))
      ->Unit(benchmark::kMillisecond);
  for (const std::string vocab : {"llama-spm", "llama3"}) {
    const Workload workloads[] = {{vocab, thirty, thirty_property_document()},
                                  {vocab, kToolSchema, kToolDocument},
                                  {vocab, "", kObjectDocument},
                                  {vocab, thirty, ""}};
    const char* const names[] = {"thirty_properties", "tool_call", "json_object", "thirty_random"};
    for (size_t i = 0; i < std::size(workloads); ++i) {
      for (const bool warm : {true, false}) {
        const std::string name =
            std::string("mask/") + names[i] + "/" + vocab + (warm ? "/warm" : "/cold");
        benchmark::RegisterBenchmark(name.c_str(), masks, workloads[i], warm)
            ->Unit(benchmark::kMillisecond)
            ->Iterations(warm ? 20 : 3);
      }
    }
    benchmark::RegisterBenchmark(("precompute/thirty_properties/" + vocab).c_str(), precompute,
                                 thirty, vocab)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
    benchmark::RegisterBenchmark(("vocabulary/" + vocab).c_str(), vocabulary, vocab)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
