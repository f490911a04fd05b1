#include "protocol/native_samplers.h"

#include <algorithm>
#include <string>
#include <vector>

namespace tandem::request_fields {
namespace {

// In this server's order of application; kTopK shares kMinP's place (they commute).
enum class Stage {
  kPenalties,
  kTemperature,
  kMinP,
  kTopK,
  kTopP,
  kInfill,
  kDry,
  kTypical,
  kXtc,
  kTopNSigma
};

struct StageName {
  const char* name;
  char letter;  // llama.cpp's common_sampler_type_to_chr
  Stage stage;
};

// llama.cpp's names and the alternative spellings it accepts.
constexpr StageName kNames[] = {
    {"penalties", 'e', Stage::kPenalties},
    {"dry", 'd', Stage::kDry},
    {"top_n_sigma", 's', Stage::kTopNSigma},
    {"top-n-sigma", 's', Stage::kTopNSigma},
    {"top_k", 'k', Stage::kTopK},
    {"top-k", 'k', Stage::kTopK},
    {"typ_p", 'y', Stage::kTypical},
    {"typical_p", 'y', Stage::kTypical},
    {"typ-p", 'y', Stage::kTypical},
    {"typical-p", 'y', Stage::kTypical},
    {"typ", 'y', Stage::kTypical},
    {"typical", 'y', Stage::kTypical},
    {"top_p", 'p', Stage::kTopP},
    {"top-p", 'p', Stage::kTopP},
    {"nucleus", 'p', Stage::kTopP},
    {"min_p", 'm', Stage::kMinP},
    {"min-p", 'm', Stage::kMinP},
    {"xtc", 'x', Stage::kXtc},
    {"temperature", 't', Stage::kTemperature},
    {"temp", 't', Stage::kTemperature},
    {"infill", 'i', Stage::kInfill},
};

const char* stage_name(Stage stage) {
  for (const StageName& n : kNames) {
    if (n.stage == stage) return n.name;
  }
  return "?";
}

std::vector<Stage> read_chain(const Json& value) {
  std::vector<Stage> chain;
  auto add = [&](Stage stage, const std::string& param) {
    if (std::find(chain.begin(), chain.end(), stage) != chain.end()) {
      reject("'samplers' names " + std::string(stage_name(stage)) + " twice.", param);
    }
    chain.push_back(stage);
  };
  if (value.is_string()) {
    for (const char letter : value.get_ref<const std::string&>()) {
      const auto* found = std::find_if(std::begin(kNames), std::end(kNames),
                                       [&](const StageName& n) { return n.letter == letter; });
      if (found == std::end(kNames)) {
        reject("Unknown sampler letter '" + std::string(1, letter) + "' in 'samplers'.",
               "samplers");
      }
      add(found->stage, "samplers");
    }
    return chain;
  }
  const Json& list = require_array(value, "samplers");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string param = element_param("samplers", i);
    const std::string& name = read_string(list[i], param);
    const auto* found = std::find_if(std::begin(kNames), std::end(kNames),
                                     [&](const StageName& n) { return name == n.name; });
    if (found == std::end(kNames)) reject("Unknown sampler '" + name + "' in 'samplers'.", param);
    add(found->stage, param);
  }
  return chain;
}

double number_or(const Json& body, const char* name, double fallback) {
  const Json* value = find_field(body, name);
  return value != nullptr && value->is_number() ? value->get<double>() : fallback;
}

// Leaves a stage out: its filter is off, as a llama.cpp chain without it.
void turn_off(Stage stage, Json& completion) {
  switch (stage) {
    case Stage::kTemperature:
      completion["temperature"] = 1.0;
      break;
    case Stage::kTopK:
      completion["top_k"] = 0;
      break;
    case Stage::kTopP:
      completion["top_p"] = 1.0;
      break;
    case Stage::kMinP:
      completion["min_p"] = 0.0;
      break;
    case Stage::kPenalties:
      for (const char* name : {"repetition_penalty", "repeat_penalty", "presence_penalty",
                               "frequency_penalty", "penalty_last_n", "repeat_last_n"})
        completion.erase(name);
      break;
    case Stage::kDry:
      completion.erase("dry_multiplier");
      break;
    case Stage::kTypical:
      completion.erase("typical_p");
      break;
    case Stage::kXtc:
      completion.erase("xtc_probability");
      break;
    case Stage::kTopNSigma:
      completion.erase("top_n_sigma");
      break;
    case Stage::kInfill:
      break;
  }
}

bool acts(Stage stage, const Json& completion) {
  switch (stage) {
    case Stage::kTemperature:
      return number_or(completion, "temperature", 1.0) != 1.0;
    case Stage::kTopK:
      return number_or(completion, "top_k", 0) > 0;
    case Stage::kTopP:
      return number_or(completion, "top_p", 1.0) < 1.0;
    case Stage::kMinP:
      return number_or(completion, "min_p", 0.0) > 0.0;
    case Stage::kPenalties:
      return number_or(completion, "repetition_penalty", 1.0) != 1.0 ||
             number_or(completion, "presence_penalty", 0.0) != 0.0 ||
             number_or(completion, "frequency_penalty", 0.0) != 0.0;
    case Stage::kInfill:
      return true;
    default:
      return false;  // dry, typ_p, xtc, top_n_sigma: the completion parser refuses them acting
  }
}

bool commute(Stage a, Stage b) {
  auto pair = [&](Stage x, Stage y) { return (a == x && b == y) || (a == y && b == x); };
  return pair(Stage::kTopK, Stage::kTemperature) || pair(Stage::kTopK, Stage::kMinP);
}

}  // namespace

bool apply_sampler_chain(const Json& native, Json& completion) {
  const Json* value = find_field(native, "samplers");
  if (value == nullptr) return false;
  const std::vector<Stage> chain = read_chain(*value);
  auto named = [&](Stage s) { return std::find(chain.begin(), chain.end(), s) != chain.end(); };
  for (Stage stage : {Stage::kPenalties, Stage::kTemperature, Stage::kMinP, Stage::kTopK,
                      Stage::kTopP, Stage::kDry, Stage::kTypical, Stage::kXtc, Stage::kTopNSigma}) {
    if (!named(stage)) turn_off(stage, completion);
  }
  // Greedy keeps the top token whatever the filters around it do.
  if (number_or(completion, "temperature", 1.0) <= 0.0) return named(Stage::kInfill);
  std::vector<Stage> acting;
  for (Stage stage : chain) {
    if (acts(stage, completion)) acting.push_back(stage);
  }
  for (size_t i = 0; i < acting.size(); ++i) {
    for (size_t j = i + 1; j < acting.size(); ++j) {
      const Stage a = acting[i], b = acting[j];
      const bool same_place =
          (a == Stage::kTopK && b == Stage::kMinP) || (a == Stage::kMinP && b == Stage::kTopK);
      if (same_place || commute(a, b) || a < b) continue;
      reject("'samplers' applies " + std::string(stage_name(a)) + " before " + stage_name(b) +
                 "; this server applies " + stage_name(b) +
                 " first (its order: penalties, temperature, min_p and top_k, top_p, infill). "
                 "Reorder them, or leave one out.",
             "samplers");
    }
  }
  return named(Stage::kInfill);
}

}  // namespace tandem::request_fields
