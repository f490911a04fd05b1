#include "protocol/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "protocol/jinja/unicode.h"
#include "protocol/utf8_encode.h"

namespace tandem {
namespace {

using Json = nlohmann::ordered_json;

Json logprob_value(float logprob) { return std::isnan(logprob) ? Json(nullptr) : Json(logprob); }

Json byte_list(const std::string& token) {
  Json bytes = Json::array();
  for (unsigned char c : token) bytes.push_back(static_cast<int>(c));
  return bytes;
}

// A token's text as the body shows it: bytes that are part of a character become U+FFFD,
// as the body's dump writes them.
std::string shown(const std::string& token) {
  if (jinja::is_valid_utf8(token)) return token;
  const std::string quoted = Json(token).dump(-1, ' ', false, Json::error_handler_t::replace);
  return Json::parse(quoted).get<std::string>();
}

// A token as the body names it: its text, or with token_ids "token_id:N".
std::string named(const LogprobEntry& e, bool token_ids) {
  return token_ids ? "token_id:" + std::to_string(e.id) : e.token;
}

// A completions token's {token: logprob} object, most likely first, as OpenAI's legacy API
// and vLLM give it: the k best and the sampled token, which joins them at its rank when
// it is not among them (up to k + 1 entries). Keys are the texts as shown: tokens that show
// alike (parts of characters, all U+FFFD) keep the first, most likely, one's value, so no
// key appears twice in the body.
Json completion_tops(const TokenLogprobs& t, bool token_ids) {
  Json top = Json::object();
  bool chosen_listed = false;
  auto add = [&top, token_ids](const LogprobEntry& e) {
    std::string key = shown(named(e, token_ids));
    if (!top.contains(key)) top[std::move(key)] = e.logprob;
  };
  for (const LogprobEntry& e : t.top) {
    if (!chosen_listed && t.chosen.logprob > e.logprob) {
      add(t.chosen);
      chosen_listed = true;
    }
    add(e);
  }
  if (!chosen_listed) add(t.chosen);
  return top;
}

Json completion_logprobs(const LogprobsPiece& piece) {
  Json tokens = Json::array(), values = Json::array(), tops = Json::array(),
       offsets = Json::array();
  TextPosition at = piece.start;
  for (const TokenLogprobs& t : piece.tokens) {
    tokens.push_back(named(t.chosen, piece.style.token_ids));
    values.push_back(logprob_value(t.chosen.logprob));
    tops.push_back(std::isnan(t.chosen.logprob) ? Json(nullptr)
                                                : completion_tops(t, piece.style.token_ids));
    offsets.push_back(at.offset);
    at.advance(t.chosen.token);
  }
  return Json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(values)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

// The token's text as llama-server shows it: cut before a UTF-8 sequence the token leaves
// open (its bytes say the whole).
std::string_view whole_characters(std::string_view bytes) {
  for (size_t back = 1; back <= std::min<size_t>(3, bytes.size()); ++back) {
    const auto c = static_cast<unsigned char>(bytes[bytes.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? bytes.substr(0, bytes.size() - back) : bytes;
  }
  return bytes;
}

Json probability_entry(const LogprobEntry& entry, bool probability) {
  Json out{{"id", entry.id},
           {"token", whole_characters(entry.token)},
           {"bytes", byte_list(entry.token)}};
  if (probability) {
    out["prob"] = std::exp(entry.logprob);
  } else {
    out["logprob"] =
        std::isfinite(entry.logprob) ? entry.logprob : std::numeric_limits<float>::lowest();
  }
  return out;
}

Json chat_logprobs(const LogprobsPiece& piece) {
  if (piece.style.probabilities) return Json{{"content", llama_probabilities_json(piece)}};
  Json content = Json::array();
  for (const TokenLogprobs& t : piece.tokens) {
    Json top = Json::array();
    for (const LogprobEntry& e : t.top) {
      top.push_back(Json{{"token", named(e, piece.style.token_ids)},
                         {"logprob", e.logprob},
                         {"bytes", byte_list(e.token)}});
    }
    content.push_back(Json{{"token", named(t.chosen, piece.style.token_ids)},
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

Json llama_probabilities_json(const LogprobsPiece& piece) {
  const bool p = piece.style.probabilities;
  Json out = Json::array();
  for (const TokenLogprobs& token : piece.tokens) {
    Json entry = probability_entry(token.chosen, p);
    Json top = Json::array();
    for (const LogprobEntry& alternative : token.top)
      top.push_back(probability_entry(alternative, p));
    entry[p ? "top_probs" : "top_logprobs"] = std::move(top);
    out.push_back(std::move(entry));
  }
  return out;
}

// One character per sequence begun, counted at its first byte: it becomes either that
// character or, cut short, one U+FFFD for its maximal valid part (Unicode's "maximal
// subpart" rule, which Python follows). A byte the open sequence cannot take ends it and
// is read afresh.
void TextPosition::advance(std::string_view bytes) {
  for (const char ch : bytes) {
    const auto b = static_cast<unsigned char>(ch);
    if (expected > 0) {
      if (b >= low && b <= high) {
        --expected;
        low = 0x80;
        high = 0xBF;
        continue;
      }
      expected = 0;  // cut short: its U+FFFD is counted; b starts afresh
      low = 0x80;
      high = 0xBF;
    }
    ++offset;  // ASCII, a lead byte, or an invalid byte (its own U+FFFD)
    const Utf8Lead lead = utf8_lead(b);
    if (lead.length > 1) {
      expected = static_cast<uint8_t>(lead.length - 1);
      low = lead.second_lo;
      high = lead.second_hi;
    }
  }
}

TextPosition advanced(TextPosition position, std::span<const TokenLogprobs> tokens) {
  for (const TokenLogprobs& t : tokens) position.advance(t.chosen.token);
  return position;
}

}  // namespace tandem
