#include "protocol/embedding_request.h"

#include <boost/archive/iterators/base64_from_binary.hpp>
#include <boost/archive/iterators/transform_width.hpp>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "protocol/request_fields.h"

namespace tandem {

using request_fields::element_param;
using request_fields::find_field;
using request_fields::Json;
using request_fields::reject;

namespace {

// One element of a list "input": a text, or a list of token ids.
EmbeddingInput read_one_input(const Json& value, const std::string& param) {
  EmbeddingInput in;
  if (value.is_string()) {
    in.text = value.get<std::string>();
    if (in.text.empty()) reject("'input' must not hold an empty string.", param);
    return in;
  }
  if (!value.is_array()) {
    reject("Invalid type for '" + param +
               "': expected a string or an array of token ids, but got " +
               request_fields::describe_type(value) + ".",
           param);
  }
  in.tokens = request_fields::read_token_ids(value, param);
  if (in.tokens.empty()) reject("'input' must not hold an empty list of tokens.", param);
  in.is_tokens = true;
  return in;
}

// OpenAI's four forms: a string, a list of token ids (one input), or a list of strings or
// of token id lists (one input each, all of one kind: `listed`).
std::vector<EmbeddingInput> read_inputs(const Json& body, bool& listed) {
  const Json* input = find_field(body, "input");
  if (input == nullptr) reject("'input' is required.", "input");
  listed = input->is_array() && !input->empty() && !input->front().is_number();
  if (input->is_string()) return {read_one_input(*input, "input")};
  if (!input->is_array()) {
    reject(
        "Invalid type for 'input': expected a string, an array of strings or an array of "
        "token ids, but got " +
            request_fields::describe_type(*input) + ".",
        "input");
  }
  if (input->empty()) reject("'input' must not be an empty list.", "input");
  if (input->front().is_number()) return {read_one_input(*input, "input")};
  if (input->size() > kMaxEmbeddingInputs) {
    reject("'input' may hold at most " + std::to_string(kMaxEmbeddingInputs) + " inputs, got " +
               std::to_string(input->size()) + ".",
           "input");
  }
  std::vector<EmbeddingInput> inputs;
  for (size_t i = 0; i < input->size(); ++i) {
    inputs.push_back(read_one_input((*input)[i], element_param("input", i)));
    if (inputs.back().is_tokens != inputs.front().is_tokens)
      reject("'input' must hold only strings or only token id lists.", element_param("input", i));
  }
  return inputs;
}

// vLLM's normalize and llama-server's embd_normalize (2: Euclidean, -1: none); when both
// are sent they must agree.
void read_normalize(const Json& body, EmbeddingRequest& request) {
  const Json* normalize = find_field(body, "normalize");
  if (normalize != nullptr) request.normalize = request_fields::read_bool(*normalize, "normalize");
  const Json* norm = find_field(body, "embd_normalize");
  if (norm == nullptr) return;
  const int64_t p = request_fields::read_integer(*norm, "embd_normalize", -1, 1 << 20);
  if (p != 2 && p != -1) {
    reject("'embd_normalize' " + std::to_string(p) +
               " is not supported: 2 (Euclidean) or -1 (none) only.",
           "embd_normalize");
  }
  if (normalize != nullptr && request.normalize != (p == 2))
    reject("'embd_normalize' and 'normalize' disagree.", "embd_normalize");
  request.normalize = p == 2;
}

EmbeddingRequest read_embedding_request(const Json& body) {
  EmbeddingRequest request;
  if (const Json* model = find_field(body, "model"))
    request.model = request_fields::read_string(*model, "model");
  request.inputs = read_inputs(body, request.listed);
  if (const Json* format = find_field(body, "encoding_format")) {
    const std::string& f = request_fields::read_string(*format, "encoding_format");
    if (f != "float" && f != "base64")
      reject("'encoding_format' must be 'float' or 'base64', got '" + f + "'.", "encoding_format");
    request.base64 = f == "base64";
  }
  if (const Json* dims = find_field(body, "dimensions"))
    request.dimensions = request_fields::read_integer(*dims, "dimensions", 1, 1 << 24);
  read_normalize(body, request);
  if (const Json* k = find_field(body, "truncate_prompt_tokens")) {
    request.truncate_prompt_tokens =
        request_fields::read_integer(*k, "truncate_prompt_tokens", -1, 1 << 30);
    if (*request.truncate_prompt_tokens == 0)
      reject("'truncate_prompt_tokens' must be -1 or at least 1.", "truncate_prompt_tokens");
  }
  if (const Json* add = find_field(body, "add_special_tokens"))
    request.add_special_tokens = request_fields::read_bool(*add, "add_special_tokens");
  if (const Json* user = find_field(body, "user"))
    request.user = request_fields::read_string(*user, "user");
  if (const Json* salt = find_field(body, "cache_salt")) {
    request.cache_salt = request_fields::read_string(*salt, "cache_salt");
    if (request.cache_salt.empty())
      reject("'cache_salt' must be a non-empty string when given.", "cache_salt");
  }
  return request;
}

// The floats' little-endian bytes in base64, as OpenAI's encoding_format "base64" sends
// them (numpy's frombuffer(..., dtype=float32) reads them back on a little-endian host).
std::string base64_floats(const std::vector<float>& v) {
  static_assert(std::numeric_limits<float>::is_iec559);
  std::string bytes(v.size() * sizeof(float), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], sizeof bits);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  using namespace boost::archive::iterators;
  using Encode = base64_from_binary<transform_width<std::string::const_iterator, 6, 8>>;
  std::string out(Encode(bytes.begin()), Encode(bytes.end()));
  out.append((3 - bytes.size() % 3) % 3, '=');
  return out;
}

// The shortest text that reads back as the same float (std::to_chars), in a JSON array.
void append_floats(std::string& out, const std::vector<float>& v) {
  out += '[';
  char buffer[32];
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v[i]);
    out.append(buffer, ec == std::errc() ? end : buffer);
  }
  out += ']';
}

}  // namespace

std::variant<EmbeddingRequest, ApiError> parse_embedding_request(std::string_view body) {
  try {
    return read_embedding_request(request_fields::parse_body_object(body));
  } catch (const request_fields::RequestRejected& rejected) {
    return rejected.error;
  }
}

void normalize_embedding(std::vector<float>& v) {
  double squares = 0;
  for (float x : v) squares += static_cast<double>(x) * x;
  if (squares == 0) return;
  const double scale = 1.0 / std::sqrt(squares);
  for (float& x : v) x = static_cast<float>(x * scale);
}

std::string embedding_response_json(std::string_view model,
                                    std::span<const std::vector<float>> embeddings, bool base64,
                                    int64_t prompt_tokens) {
  std::string out = R"({"object":"list","data":[)";
  for (size_t i = 0; i < embeddings.size(); ++i) {
    if (i > 0) out += ',';
    out += R"({"object":"embedding","index":)" + std::to_string(i) + R"(,"embedding":)";
    if (base64) {
      out += '"' + base64_floats(embeddings[i]) + '"';
    } else {
      append_floats(out, embeddings[i]);
    }
    out += '}';
  }
  out += R"(],"model":)" +
         Json(std::string(model)).dump(-1, ' ', false, Json::error_handler_t::replace) +
         R"(,"usage":{"prompt_tokens":)" + std::to_string(prompt_tokens) + R"(,"total_tokens":)" +
         std::to_string(prompt_tokens) + "}}";
  return out;
}

}  // namespace tandem
