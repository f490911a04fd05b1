#include "protocol/request_fields.h"

#include <cmath>
#include <limits>
#include <utility>

namespace tandem::request_fields {
namespace {

// Error messages quote parts of the request; a bound keeps a 1 MiB string out of them.
constexpr size_t kMaxQuotedBytes = 160;

// nlohmann's parser does not recurse, but every level of nesting costs a value and a
// container on the heap: unbounded, a 1 MiB body of '[' builds a million of them.
// No request needs more than a handful of levels.
constexpr int kMaxNestingDepth = 64;

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

Json parse_body_object(std::string_view body) {
  Json parsed;
  // Called as each value starts; depth counts the containers around it.
  auto bound_depth = [](int depth, Json::parse_event_t event, Json&) {
    const bool opens =
        event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start;
    if (opens && depth >= kMaxNestingDepth) {
      reject("The request body nests arrays and objects deeper than " +
                 std::to_string(kMaxNestingDepth) + " levels.",
             "");
    }
    return true;
  };
  try {
    parsed = Json::parse(body.begin(), body.end(), bound_depth);
  } catch (const Json::exception& e) {
    // parse_error says where (line, column); out_of_range is a number beyond double.
    reject("Malformed JSON in the request body: " + strip_exception_prefix(e.what()), "");
  }
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
