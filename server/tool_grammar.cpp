#include "server/tool_grammar.h"

#include <mutex>
#include <string>
#include <unordered_map>

#include "runner/grammar/compile_gate.h"

namespace tandem::server {
namespace {

// The schema error of the tool whose parameters do not compile (the framed grammar's own
// error names a place in the combined document, not the request's field).
ApiError parameters_error(const ToolRequest& tools, const grammar::GrammarError& framed_error) {
  if (auto error = check_tool_parameters(tools)) return *error;
  return bad_request(
      std::string("The tools' call grammar does not compile: ") + framed_error.what(), "tools");
}

// Each schema text's verdict ("" when it compiles, else the GrammarError's message), kept
// for the process: an agent sends the same tools every turn, and compiling twenty of them
// took 70 ms a request (a 2-vCPU Zen 4, perf: trim and determinize), where a lookup takes
// microseconds. Bounded: past kMaxVerdicts texts the map starts afresh.
class ParameterVerdicts {
 public:
  std::string verdict(const nlohmann::ordered_json& parameters) {
    std::string text = parameters.dump();
    {
      std::lock_guard lock(mutex_);
      if (const auto it = verdicts_.find(text); it != verdicts_.end()) return it->second;
    }
    grammar::throw_if_compiles_deferred();
    std::string error;
    try {
      grammar::compile_json_schema(parameters);
    } catch (const grammar::GrammarError& e) {
      error = e.what();
    }
    std::lock_guard lock(mutex_);
    if (verdicts_.size() >= kMaxVerdicts) verdicts_.clear();
    verdicts_.emplace(std::move(text), error);
    return error;
  }

 private:
  static constexpr size_t kMaxVerdicts = 4096;
  std::mutex mutex_;
  std::unordered_map<std::string, std::string> verdicts_;
};

}  // namespace

std::optional<ApiError> check_tool_parameters(const ToolRequest& tools) {
  static ParameterVerdicts verdicts;
  if (!tools.constrains()) return std::nullopt;
  for (size_t i = 0; i < tools.functions.size(); ++i) {
    const ToolFunction& function = tools.functions[i];
    if (!tools.may_call(function)) continue;
    const std::string error = verdicts.verdict(function.parameters);
    if (!error.empty()) {
      const std::string param = "tools[" + std::to_string(i) + "].function.parameters";
      return bad_request("Invalid '" + param + "': " + error, param);
    }
  }
  return std::nullopt;
}

grammar::FramedJson tool_call_grammar_spec(const ToolRequest& tools, ToolCallFormat format) {
  const ToolCallFraming framing = tool_call_framing(format);
  grammar::FramedJson spec;
  spec.open = framing.open;
  spec.separator = framing.separator;
  spec.close = framing.close;
  spec.min_items = 1;
  // A named function is called exactly once, as OpenAI's forced function call is.
  const bool one = !tools.parallel || tools.choice.mode == ToolChoice::Mode::kNamed;
  spec.max_items = one ? 1 : grammar::GrammarBuilder::kUnbounded;
  for (const ToolFunction& function : tools.callable()) {
    using Part = grammar::FramedJson::Part;
    spec.alternatives.push_back({
        Part{framing.before_name + function.name + framing.after_name},
        Part{"", function.parameters, true},
        Part{framing.after_arguments},
    });
  }
  return spec;
}

std::variant<std::shared_ptr<const grammar::CompiledGrammar>, ApiError> compile_tool_call_grammar(
    const ToolRequest& tools, ToolCallFormat format, grammar::GrammarCache* grammars) {
  if (!tools.constrains()) return std::shared_ptr<const grammar::CompiledGrammar>{};
  if (grammars == nullptr) {
    return bad_request(
        "'tool_choice' other than 'auto' and 'none' is not supported by this server.",
        "tool_choice");
  }
  try {
    return grammars->framed_json(tool_call_grammar_spec(tools, format));
  } catch (const grammar::GrammarError& error) {
    return parameters_error(tools, error);
  }
}

}  // namespace tandem::server
