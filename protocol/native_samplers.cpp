#include "protocol/native_samplers.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace tandem::request_fields {
namespace {

// The stages llama.cpp's chains name. Their order here is no order of application: the
// chain's own order is read (apply_sampler_chain), and the last four have no filter here.
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
  kTopNSigma,
  kAdaptiveP
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
    // llama.cpp's adaptive-p (off while adaptive_target < 0, as SillyTavern's default chain
    // sends it).
    {"adaptive_p", 'a', Stage::kAdaptiveP},
    {"adaptive-p", '\0', Stage::kAdaptiveP},
};

// Tail-free sampling, which llama.cpp has removed: its chains skip the name (old presets
// still send it), as llama.cpp does with any name it no longer knows.
constexpr const char* kRemovedNames[] = {"tfs_z", "tfs"};

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
      const auto* found =
          std::find_if(std::begin(kNames), std::end(kNames),
                       [&](const StageName& n) { return n.letter != '\0' && n.letter == letter; });
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
    if (std::ranges::find(kRemovedNames, name) != std::end(kRemovedNames)) continue;
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
      completion.erase("dynatemp_range");
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
    case Stage::kAdaptiveP:
      completion.erase("adaptive_target");
      completion.erase("adaptive_decay");
      break;
    case Stage::kInfill:
      break;
  }
}

bool acts(Stage stage, const Json& completion) {
  switch (stage) {
    case Stage::kTemperature:  // a dynamic one acts at 1 too
      return number_or(completion, "temperature", 1.0) != 1.0 ||
             number_or(completion, "dynatemp_range", 0.0) > 0.0;
    case Stage::kTopK:
      return number_or(completion, "top_k", 0) > 0;
    case Stage::kTopP:
      return number_or(completion, "top_p", 1.0) < 1.0;
    case Stage::kMinP:
      return number_or(completion, "min_p", 0.0) > 0.0;
    case Stage::kPenalties:
      return number_or(completion, "repetition_penalty", 1.0) != 1.0 ||
             number_or(completion, "repeat_penalty", 1.0) != 1.0 ||
             number_or(completion, "presence_penalty", 0.0) != 0.0 ||
             number_or(completion, "frequency_penalty", 0.0) != 0.0;
    case Stage::kInfill:
      return true;
    case Stage::kXtc:
      return number_or(completion, "xtc_probability", 0.0) > 0.0 &&
             number_or(completion, "xtc_threshold", 0.1) <= 0.5;
    case Stage::kDry:
      return number_or(completion, "dry_multiplier", 0.0) > 0.0 &&
             number_or(completion, "dry_penalty_last_n", -1.0) != 0.0;
    case Stage::kTopNSigma:
      return number_or(completion, "top_n_sigma", -1.0) > 0.0;
    case Stage::kTypical:
      return number_or(completion, "typical_p", 1.0) < 1.0;
    default:
      return false;  // adaptive_p: the completion parser refuses it acting
  }
}

// adaptive_target (<= 1; below 0 off, llama-server's default -1) and adaptive_decay
// ([0, 0.99]; 0.9), for a chain that names adaptive_p.
void read_adaptive_p(const Json& native, SamplerChain& out) {
  if (const Json* target = find_field(native, "adaptive_target")) {
    out.adaptive_target = read_float(*target, "adaptive_target");
    if (!(target->get<double>() <= 1.0)) {
      reject(
          "Invalid value for 'adaptive_target': expected a probability <= 1 (below 0: off), "
          "got " +
              target->dump() + ".",
          "adaptive_target");
    }
  }
  if (const Json* decay = find_field(native, "adaptive_decay")) {
    out.adaptive_decay = read_float(*decay, "adaptive_decay");
    const double sent = decay->get<double>();
    if (!(sent >= 0.0 && sent <= 0.99)) {
      reject("Invalid value for 'adaptive_decay': expected a number in [0, 0.99], got " +
                 decay->dump() + ".",
             "adaptive_decay");
    }
  }
}

[[noreturn]] void refuse_order(const std::string& why) {
  reject("'samplers' " + why +
             ", which this server cannot apply (it applies the penalties, dry and top_n_sigma "
             "first, then min_p before top_k or after top_p, top_k, typ_p, top_p, then xtc and "
             "infill, and the temperature before or after all of typ_p, top_p, xtc and infill). "
             "Reorder them, or leave one out.",
         "samplers");
}

// typ_p runs after top_k and before top_p; min_p runs before both, or after the last of
// them.
void refuse_typical_order(int y, int k, int p, int m) {
  if (y < 0) return;
  if (k >= 0 && y < k) refuse_order("applies typ_p before top_k");
  if (p >= 0 && p < y) refuse_order("applies top_p before typ_p");
  if (m >= 0 && p >= 0 && y < m && m < p) refuse_order("applies min_p between typ_p and top_p");
}

// The chain native's `samplers` names; absent, llama-server's default.
std::vector<Stage> chain_of(const Json& native) {
  static const Json kDefaultChain = kLlamaDefaultChain;
  const Json* value = find_field(native, "samplers");
  return read_chain(value != nullptr ? *value : kDefaultChain);
}

}  // namespace

Json sampler_chain_names(const Json& native) {
  Json names = Json::array();
  for (const Stage stage : chain_of(native)) names.push_back(stage_name(stage));
  return names;
}

bool mirostat_replaces_chain(const Json& body) { return number_or(body, "mirostat", 0.0) != 0.0; }

SamplerChain apply_sampler_chain(const Json& native, Json& completion) {
  SamplerChain out;
  const std::vector<Stage> chain = chain_of(native);
  // Mirostat replaces llama.cpp's chain by the temperature and itself: the chain's order and
  // stages do not apply (the completion parser turns the stages off), its names are still
  // checked above.
  if (mirostat_replaces_chain(native)) return out;
  auto named = [&](Stage s) { return std::find(chain.begin(), chain.end(), s) != chain.end(); };
  for (Stage stage : {Stage::kPenalties, Stage::kTemperature, Stage::kMinP, Stage::kTopK,
                      Stage::kTopP, Stage::kDry, Stage::kTypical, Stage::kXtc, Stage::kTopNSigma}) {
    if (!named(stage)) turn_off(stage, completion);
  }
  // adaptive_p is in no default chain: its target is left for the completion parser to refuse
  // unless the client's own chain leaves the stage out. Named, it is read here: llama.cpp puts
  // it last, wherever the chain names it, in the draw's place.
  if (named(Stage::kAdaptiveP)) {
    read_adaptive_p(native, out);
    turn_off(Stage::kAdaptiveP, completion);
  } else if (find_field(native, "samplers") != nullptr) {
    turn_off(Stage::kAdaptiveP, completion);
  }
  out.infill = named(Stage::kInfill);
  // Where each acting stage stands in the chain (-1: it does not act).
  const auto at = [&](Stage s) {
    const auto found = std::find(chain.begin(), chain.end(), s);
    return found == chain.end() || !acts(s, completion) ? -1
                                                        : static_cast<int>(found - chain.begin());
  };
  const int pen = at(Stage::kPenalties), t = at(Stage::kTemperature), m = at(Stage::kMinP),
            k = at(Stage::kTopK), p = at(Stage::kTopP), inf = at(Stage::kInfill),
            x = at(Stage::kXtc), dry = at(Stage::kDry), sigma = at(Stage::kTopNSigma),
            y = at(Stage::kTypical);
  // min_p after top_p, or after typ_p where top_p does not act, cuts what they kept.
  out.min_p_last = m >= 0 && ((p >= 0 && m > p) || (p < 0 && y >= 0 && m > y));
  // Greedy keeps the best token of what the chain keeps, whatever order the rest is in (only
  // XTC and typ_p can drop the top one).
  if (number_or(completion, "temperature", 1.0) <= 0.0) return out;
  for (int other : {t, m, k, p, inf, x, sigma, y}) {
    if (pen >= 0 && other >= 0 && other < pen) refuse_order("applies the penalties after a filter");
    if (dry >= 0 && other >= 0 && other < dry) refuse_order("applies dry after a filter");
  }
  if (pen >= 0 && dry >= 0 && dry < pen) refuse_order("applies dry before the penalties");
  // top_n_sigma's deviation is the whole row's; its cut scales with the temperature, so its
  // side of it does not matter.
  for (int filter : {m, k, p, inf, x, y}) {
    if (sigma >= 0 && filter >= 0 && filter < sigma)
      refuse_order("applies top_n_sigma after a filter");
  }
  if (k >= 0 && p >= 0 && p < k) refuse_order("applies top_p before top_k");
  refuse_typical_order(y, k, p, m);
  for (int filter : {k, p, m, y}) {
    if (inf >= 0 && filter > inf) refuse_order("applies a filter after infill");
    if (x >= 0 && filter > x) refuse_order("applies a filter after xtc");
  }
  if (x >= 0 && inf >= 0 && x > inf) refuse_order("applies xtc after infill");
  if (t < 0) return out;
  // top_p (and infill) read the logits as the temperature left them: before it, the raw ones.
  if (p >= 0 && inf >= 0 && (t > p) != (t > inf)) {
    refuse_order("puts the temperature between top_p and infill");
  }
  // xtc and typ_p read the logits as top_p and infill do.
  for (int reader : {p, inf}) {
    if (reader >= 0 && x >= 0 && (t > reader) != (t > x)) {
      refuse_order("puts the temperature between xtc and the filters before it");
    }
  }
  for (int reader : {p, inf, x}) {
    if (reader >= 0 && y >= 0 && (t > reader) != (t > y)) {
      refuse_order("puts the temperature between typ_p and the filters after it");
    }
  }
  // Without those only min_p's side matters: the mode that reads its logits as they are
  // asked for needs no conversion (whose float rounds towards 1 at huge T).
  out.temperature_last = p >= 0     ? t > p
                         : y >= 0   ? t > y
                         : inf >= 0 ? t > inf
                         : x >= 0   ? t > x
                                    : m >= 0 && m < t;
  // A dynamic temperature measures what its stage sees: the whole row or what every filter
  // kept (top_k's and top_n_sigma's sides matter too), nothing between.
  if (number_or(completion, "dynatemp_range", 0.0) > 0.0) {
    bool before = false, after = false;
    for (int filter : {m, k, p, inf, x, sigma, y}) {
      if (filter >= 0) (t > filter ? after : before) = true;
    }
    if (before && after) refuse_order("puts the temperature, with dynatemp_range, between filters");
    out.temperature_last = after;
  }
  // min_p reads them either way: p >= m * p_max on the raw logits is p >= m^(1/T) * p_max
  // on the tempered ones, exactly, so its place is a change of its value.
  if (m >= 0 && (m < t) != out.temperature_last) {
    const double temperature = number_or(completion, "temperature", 1.0);
    const double min_p = number_or(completion, "min_p", 0.0);
    completion["min_p"] = std::pow(min_p, out.temperature_last ? temperature : 1.0 / temperature);
  }
  return out;
}

}  // namespace tandem::request_fields
