#include "protocol/logprobs.h"

#include <cmath>

namespace tandem {
namespace {

using Json = nlohmann::json;

Json logprob_value(float logprob) { return std::isnan(logprob) ? Json(nullptr) : Json(logprob); }

Json byte_list(const std::string& token) {
  Json bytes = Json::array();
  for (unsigned char c : token) bytes.push_back(static_cast<int>(c));
  return bytes;
}

Json completion_logprobs(const LogprobsPiece& piece) {
  Json tokens = Json::array(), values = Json::array(), tops = Json::array(),
       offsets = Json::array();
  int64_t offset = piece.text_offset;
  for (const TokenLogprobs& t : piece.tokens) {
    tokens.push_back(t.chosen.token);
    values.push_back(logprob_value(t.chosen.logprob));
    if (std::isnan(t.chosen.logprob)) {
      tops.push_back(nullptr);
    } else {
      Json top = Json::object();
      for (const LogprobEntry& e : t.top) top[e.token] = e.logprob;
      tops.push_back(std::move(top));
    }
    offsets.push_back(offset);
    offset += static_cast<int64_t>(t.chosen.token.size());
  }
  return Json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(values)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

Json chat_logprobs(const LogprobsPiece& piece) {
  Json content = Json::array();
  for (const TokenLogprobs& t : piece.tokens) {
    Json top = Json::array();
    for (const LogprobEntry& e : t.top) {
      top.push_back(
          Json{{"token", e.token}, {"logprob", e.logprob}, {"bytes", byte_list(e.token)}});
    }
    content.push_back(Json{{"token", t.chosen.token},
                           {"logprob", logprob_value(t.chosen.logprob)},
                           {"bytes", byte_list(t.chosen.token)},
                           {"top_logprobs", std::move(top)}});
  }
  return Json{{"content", std::move(content)}};
}

}  // namespace

Json logprobs_json(Endpoint endpoint, const LogprobsPiece* piece) {
  if (piece == nullptr) return nullptr;
  return endpoint == Endpoint::kChatCompletions ? chat_logprobs(*piece)
                                                : completion_logprobs(*piece);
}

int64_t logprobs_text_bytes(std::span<const TokenLogprobs> tokens) {
  int64_t n = 0;
  for (const TokenLogprobs& t : tokens) n += static_cast<int64_t>(t.chosen.token.size());
  return n;
}

}  // namespace tandem
