#include "server/tool_grammar.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

// Where `schema` (within the parameters document `root`) admits a value that is not an
// object, as a JSON pointer; "" where it admits objects only. A constrained call's
// arguments are an object (OpenAI's and every client's reading), and as_object_schema
// types only what names nothing; an enum of strings, a $ref to a scalar, or an anyOf with
// an integer branch would let the call's arguments be `"a"` or `5`, which no client reads
// as a call. $refs are followed (a cycle counts as objects: its other paths decide);
// one unresolvable is the compiler's to report.
std::string non_object_at(const nlohmann::ordered_json& schema, const nlohmann::ordered_json& root,
                          const std::string& at, std::vector<std::string>& refs) {
  if (!schema.is_object()) return schema == false ? "" : at;
  if (const auto type = schema.find("type"); type != schema.end()) {
    const bool objects = *type == "object" || (type->is_array() && !type->empty() &&
                                               std::all_of(type->begin(), type->end(),
                                                           [](auto& t) { return t == "object"; }));
    if (!objects) return at;
  }
  if (const auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
    const std::string target = ref->get<std::string>();
    // A chain of references is bounded as the compiler bounds its depth (the body's
    // nesting is bounded already; a chain of $refs is not).
    if (target.empty() || target[0] != '#' || refs.size() >= 64 ||
        std::find(refs.begin(), refs.end(), target) != refs.end())
      return "";
    const nlohmann::ordered_json* found = nullptr;
    try {  // a malformed pointer is the compiler's to report
      const nlohmann::ordered_json::json_pointer pointer(target.substr(1));
      if (root.contains(pointer)) found = &root.at(pointer);
    } catch (const nlohmann::json::exception&) {
    }
    if (found == nullptr) return "";
    refs.push_back(target);
    std::string inner = non_object_at(*found, root, target, refs);
    refs.pop_back();
    return inner;
  }
  for (const char* each : {"anyOf", "oneOf"}) {
    const auto list = schema.find(each);
    if (list == schema.end() || !list->is_array()) continue;
    for (size_t i = 0; i < list->size(); ++i) {
      std::string inner =
          non_object_at((*list)[i], root, at + "/" + each + "/" + std::to_string(i), refs);
      if (!inner.empty()) return inner;
    }
  }
  if (const auto all = schema.find("allOf"); all != schema.end() && all->is_array()) {
    std::string first;  // an intersection holds objects only where one part does
    for (size_t i = 0; i < all->size(); ++i) {
      std::string inner = non_object_at((*all)[i], root, at + "/allOf/" + std::to_string(i), refs);
      if (inner.empty()) return "";
      if (first.empty()) first = inner;
    }
    return first;
  }
  for (const char* each : {"enum", "const"}) {
    const auto values = schema.find(each);
    if (values == schema.end()) continue;
    const bool objects =
        std::string_view(each) == "const"
            ? values->is_object()
            : values->is_array() && std::all_of(values->begin(), values->end(),
                                                [](auto& v) { return v.is_object(); });
    if (!objects) return at + "/" + each;
  }
  return schema.contains("type") || schema.contains("anyOf") || schema.contains("oneOf") ||
                 schema.contains("enum") || schema.contains("const")
             ? ""
             : at;
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
    std::vector<std::string> refs;
    std::string error;
    if (const std::string at = non_object_at(parameters, parameters, "#", refs); !at.empty()) {
      error = "a call's arguments are a JSON object, and this schema allows other values (at " +
              at + ")";
    } else {
      grammar::throw_if_compiles_deferred();
      try {
        grammar::compile_json_schema(parameters);
      } catch (const grammar::GrammarError& e) {
        error = e.what();
      }
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

std::shared_ptr<const grammar::CompiledGrammar> compile_call_or_answer_grammar(
    const ToolRequest& tools, ToolCallFormat format, const OutputConstraint& constraint,
    grammar::GrammarCache* grammars) {
  using Kind = OutputConstraint::Kind;
  const bool json = constraint.kind == Kind::kJsonSchema || constraint.kind == Kind::kJsonObject;
  if (grammars == nullptr || !json || !tools.any() || tools.choice.mode != ToolChoice::Mode::kAuto)
    return nullptr;
  ToolRequest required = tools;  // the checks a required call's tools pass
  required.choice.mode = ToolChoice::Mode::kRequired;
  if (check_tool_parameters(required)) return nullptr;
  grammar::FramedJson spec = tool_call_grammar_spec(tools, format);
  const nlohmann::ordered_json answer = constraint.kind == Kind::kJsonSchema
                                            ? nlohmann::ordered_json::parse(constraint.text)
                                            : nlohmann::ordered_json{{"type", "object"}};
  spec.instead = {grammar::FramedJson::Part{"", answer, true}};
  try {
    return grammars->framed_json(spec);
  } catch (const grammar::GrammarError&) {
    return nullptr;  // the answer's own grammar compiled, so its error was reported there
  }
}

}  // namespace tandem::server
