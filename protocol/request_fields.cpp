#include "protocol/request_fields.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace tandem::request_fields {
namespace {

// Error messages quote parts of the request; a bound keeps a 1 MiB string out of them.
constexpr size_t kMaxQuotedBytes = 160;

// nlohmann's parser does not recurse, but every level of nesting costs a value and a
// container on the heap: unbounded, a 1 MiB body of '[' builds a million of them.
// No request needs more than a handful of levels.
constexpr size_t kMaxNestingDepth = 64;

std::string quote_value(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kMaxQuotedBytes) {
    text.resize(kMaxQuotedBytes);
    text += "...";
  }
  return text;
}

// nlohmann's what() starts with "[json.exception.parse_error.101] "; the client does not
// need the library's taxonomy.
std::string strip_exception_prefix(const char* what) {
  std::string text(what);
  if (!text.empty() && text.front() == '[') {
    size_t end = text.find("] ");
    if (end != std::string::npos) text.erase(0, end + 2);
  }
  if (text.size() > 2 * kMaxQuotedBytes) {
    text.resize(2 * kMaxQuotedBytes);
    text += "...";
  }
  return text;
}

[[noreturn]] void reject_type(const Json& value, const std::string& param, const char* expected) {
  reject("Invalid type for '" + param + "': expected " + expected + ", but got " +
             describe_type(value) + ".",
         param);
}

}  // namespace

void reject(std::string message, std::string param) {
  throw RequestRejected{bad_request(std::move(message), std::move(param))};
}

namespace {

// Builds the body's ordered_json from nlohmann's SAX events. nlohmann's own builder inserts
// each key with ordered_map's linear search for a duplicate, so an object of n keys cost
// O(n^2): a 1 MiB body of 100,000 keys took 13.6 s, and four of them stalled every other
// request for a minute. Here members are appended as they come, and an object's repeated
// keys are resolved once it closes, by sorting its places by key: O(n log n) whatever the
// keys (a hash table would let a crafted body put every key in one bucket, as the standard
// string hash has a fixed seed). The result is nlohmann's: keys in first-seen order, and a
// repeated key's last value in its first place. Containers nested deeper than
// kMaxNestingDepth are refused as they open.
class BodyBuilder {
 public:
  using Members = Json::object_t::Container;  // ordered_map's vector of (key, value)

  BodyBuilder(Json& root, bool wide_integers) : root_(root), wide_integers_(wide_integers) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(Json::number_integer_t v) { return put(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(v); }
  // An integer literal nlohmann could not hold as int64 or uint64 arrives here as a double:
  // refused, not rounded (a tool schema's maximum would have reached the template as
  // 1.2345678901234568e+22, where Python prints the integer).
  bool number_float(Json::number_float_t v, const Json::string_t& literal) {
    if (!wide_integers_ && literal.find_first_of(".eE") == Json::string_t::npos) {
      const std::string param = current_param();
      reject((param.empty() ? "The integer " : "Invalid value for '" + param + "': the integer ") +
                 literal.substr(0, kMaxQuotedBytes) + " is beyond 64 bits (not supported).",
             param);
    }
    return put(v);
  }
  bool string(Json::string_t& v) { return put(std::move(v)); }
  bool binary(Json::binary_t& v) { return put(Json::binary(std::move(v))); }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() {
    drop_repeated_keys(members_of(*frames_.back()));
    frames_.pop_back();
    return true;
  }
  bool end_array() {
    frames_.pop_back();
    return true;
  }
  bool key(Json::string_t& name) {
    members_of(*frames_.back()).emplace_back(std::move(name), nullptr);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    // The position is in the message (line, column); the taxonomy is not the client's.
    reject("Malformed JSON in the request body: " + strip_exception_prefix(e.what()), "");
  }

 private:
  // Where the value about to be put goes, as the request's fields are named
  // ("tools[0].function.parameters.maximum").
  std::string current_param() const {
    std::string param;
    for (size_t i = 0; i < frames_.size(); ++i) {
      const Json& frame = *frames_[i];
      if (frame.is_object()) {
        const auto& members = static_cast<const Members&>(frame.get_ref<const Json::object_t&>());
        param += (param.empty() ? "" : ".") + (members.empty() ? "" : members.back().first);
      } else {  // the innermost array's next element, or an outer one's last
        param += "[" + std::to_string(frame.size() - (i + 1 < frames_.size() ? 1 : 0)) + "]";
      }
    }
    return param;
  }

  static Members& members_of(Json& object) {
    return static_cast<Members&>(object.get_ref<Json::object_t&>());
  }

  // Each repeated key's last value moves to its first place and the later places go.
  static void drop_repeated_keys(Members& members) {
    if (members.size() < 2) return;
    std::vector<size_t> order(members.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return members[a].first < members[b].first; });
    std::vector<bool> dropped(members.size(), false);
    bool any = false;
    for (size_t i = 0, j; i < order.size(); i = j) {
      for (j = i + 1; j < order.size() && members[order[j]].first == members[order[i]].first;) ++j;
      if (j - i == 1) continue;
      members[order[i]].second = std::move(members[order[j - 1]].second);
      for (size_t d = i + 1; d < j; ++d) dropped[order[d]] = true;
      any = true;
    }
    if (!any) return;
    Members kept;  // the keys are const: the kept members are rebuilt, not shifted
    kept.reserve(members.size());
    for (size_t i = 0; i < members.size(); ++i)
      if (!dropped[i]) kept.emplace_back(members[i].first, std::move(members[i].second));
    members.swap(kept);
  }

  // Where the next value goes: the root, the value of an object's last key, or an array's
  // new last element.
  Json* next_slot() {
    if (frames_.empty()) return &root_;
    Json& container = *frames_.back();
    if (container.is_array()) {
      auto& elements = container.get_ref<Json::array_t&>();
      elements.emplace_back(nullptr);
      return &elements.back();
    }
    return &members_of(container).back().second;
  }
  template <class V>
  bool put(V&& v) {
    *next_slot() = Json(std::forward<V>(v));
    return true;
  }
  bool open(Json container) {
    if (frames_.size() >= kMaxNestingDepth) {
      reject("The request body nests arrays and objects deeper than " +
                 std::to_string(kMaxNestingDepth) + " levels.",
             "");
    }
    // A parent's storage never moves while a child is open: only the innermost container
    // grows, so this pointer stays valid until the child closes.
    Json* slot = next_slot();
    *slot = std::move(container);
    frames_.push_back(slot);
    return true;
  }

  Json& root_;
  bool wide_integers_;
  std::vector<Json*> frames_;  // the open containers, innermost last
};

}  // namespace

Json parse_json_value(std::string_view text, bool wide_integers) {
  // nlohmann's lexer takes a raw NUL for the end of its input, so a body cut by one would
  // parse as what came before it (QA); a raw NUL is never JSON.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    reject(
        "Malformed JSON in the request body: a raw NUL byte at offset " + std::to_string(nul) + ".",
        "");
  }
  Json parsed;
  BodyBuilder builder(parsed, wide_integers);
  // strict: nothing but whitespace may follow the value.
  Json::sax_parse(text.begin(), text.end(), &builder, nlohmann::detail::input_format_t::json,
                  /*strict=*/true);
  return parsed;
}

Json parse_body_object(std::string_view body) {
  Json parsed = parse_json_value(body);
  if (!parsed.is_object()) {
    reject("The request body must be a JSON object, but it is " + describe_type(parsed) + ".", "");
  }
  return parsed;
}

const Json* find_field(const Json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string describe_type(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a decimal number";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

std::string element_param(const std::string& array, size_t index) {
  return array + "[" + std::to_string(index) + "]";
}

const Json& require_object(const Json& value, const std::string& param) {
  if (!value.is_object()) {
    reject("Invalid type for '" + param + "': expected an object, but got " + describe_type(value) +
               ".",
           param);
  }
  return value;
}

const Json& require_array(const Json& value, const std::string& param) {
  if (!value.is_array()) {
    reject("Invalid type for '" + param + "': expected an array, but got " + describe_type(value) +
               ".",
           param);
  }
  return value;
}

bool read_bool(const Json& value, const std::string& param) {
  if (!value.is_boolean()) reject_type(value, param, "a boolean");
  return value.get<bool>();
}

const std::string& read_string(const Json& value, const std::string& param) {
  if (!value.is_string()) reject_type(value, param, "a string");
  return value.get_ref<const std::string&>();
}

const std::string& required_string(const Json& object, const char* key, const std::string& param) {
  const Json* value = find_field(object, key);
  if (value == nullptr) reject("'" + param + "." + key + "' is required.", param + "." + key);
  return read_string(*value, param + "." + key);
}

void refuse_chat_names(const Json& body,
                       std::span<const std::pair<const char*, const char*>> chat_names,
                       std::string_view route) {
  for (const auto& [name, instead] : chat_names) {
    const Json* value = find_field(body, name);
    if (value != nullptr && !(std::string_view(name) == "n" && *value == 1)) {
      reject("'" + std::string(name) + "' is not a field of " + std::string(route) + "; " +
                 instead + ".",
             name);
    }
  }
}

int64_t read_integer(const Json& value, const std::string& param, int64_t min, int64_t max) {
  auto out_of_range = [&]() {
    reject("'" + param + "' must be an integer in [" + std::to_string(min) + ", " +
               std::to_string(max) + "], got " + quote_value(value) + ".",
           param);
  };
  if (value.is_number_unsigned()) {
    uint64_t v = value.get<uint64_t>();
    if (max < 0 || v > static_cast<uint64_t>(max) || static_cast<int64_t>(v) < min) {
      out_of_range();
    }
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) {
    int64_t v = value.get<int64_t>();
    if (v < min || v > max) out_of_range();
    return v;
  }
  if (value.is_number_float()) {
    double v = value.get<double>();
    if (!std::isfinite(v) || v != std::floor(v)) reject_type(value, param, "an integer");
    // A cast of a double outside int64's range is undefined, so bound it first.
    if (!(v >= -0x1p63 && v < 0x1p63)) out_of_range();
    int64_t i = static_cast<int64_t>(v);
    if (i < min || i > max) out_of_range();
    return i;
  }
  reject_type(value, param, "an integer");
}

float read_float(const Json& value, const std::string& param) {
  if (!value.is_number()) reject_type(value, param, "a number");
  double v = value.get<double>();
  if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max()) {
    reject("'" + param + "' must be a finite number, got " + quote_value(value) + ".", param);
  }
  return static_cast<float>(v);
}

std::vector<int32_t> read_token_ids(const Json& value, const std::string& param) {
  if (!value.is_array()) reject_type(value, param, "an array of token ids");
  std::vector<int32_t> ids;
  ids.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string element = param + "[" + std::to_string(i) + "]";
    const Json& id = value[i];
    if (!id.is_number()) reject_type(id, element, "a token id (an integer)");
    ids.push_back(
        static_cast<int32_t>(read_integer(id, element, 0, std::numeric_limits<int32_t>::max())));
  }
  return ids;
}

}  // namespace tandem::request_fields
