// A request body's parse (request_fields.h): built from nlohmann's SAX events with a hash
// index per object, it must give what nlohmann's own DOM parser gives (the oracle) on any
// body: values, key order, and a repeated key's last value in its first place. The own
// builder exists because nlohmann's inserts each key with a linear search: a 1 MiB body
// of 100,000 keys took 13.6 s and held up every other request behind it.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "protocol/request_fields.h"

namespace tandem::request_fields::TANDEM_UNITY_ID {
namespace {

// Random JSON text: nested objects (with repeated keys) and arrays, every scalar kind, and
// whitespace between tokens.
class RandomBody {
 public:
  explicit RandomBody(uint32_t seed) : rng_(seed) {}
  std::string object(int depth = 0) {
    std::string text = "{" + space();
    const int members = pick(depth < 3 ? 6 : 2);
    for (int i = 0; i < members; ++i) {
      if (i) text += "," + space();
      // Few distinct keys, so objects repeat some.
      text += "\"k" + std::to_string(pick(5)) + (pick(4) == 0 ? "\\u00e9" : "") + "\"" + space() +
              ":" + space() + value(depth + 1) + space();
    }
    return text + "}";
  }

 private:
  std::string value(int depth) {
    switch (pick(depth < 4 ? 9 : 7)) {
      case 0:
        return "null";
      case 1:
        return pick(2) ? "true" : "false";
      case 2:
        return std::to_string(static_cast<int64_t>(rng_()) - (int64_t{1} << 31));
      case 3:
        return "18446744073709551615";  // unsigned beyond int64
      case 4:
        return pick(2) ? "-0.5e-3" : "1.25E+2";
      case 5:
        return "\"s\\n\\\"" + std::to_string(pick(100)) + "\\ud83d\\ude00\"";
      case 6:
        return pick(2) ? "[]" : "{}";
      case 7: {
        std::string text = "[" + space();
        const int n = 1 + pick(4);
        for (int i = 0; i < n; ++i) text += (i ? "," : "") + value(depth + 1);
        return text + space() + "]";
      }
      default:
        return object(depth);
    }
  }
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  std::string space() { return pick(3) == 0 ? " \n\t" : ""; }
  std::mt19937 rng_;
};

TEST(RequestBody, ParsesAsNlohmannsOwnParserDoes) {
  for (uint32_t seed = 0; seed < 300; ++seed) {
    const std::string text = RandomBody(seed).object();
    const Json expected = Json::parse(text);
    const Json parsed = parse_body_object(text);
    EXPECT_EQ(parsed.dump(), expected.dump()) << text;
  }
}

TEST(RequestBody, ARepeatedKeysLastValueTakesItsFirstPlace) {
  const Json parsed = parse_body_object(R"({"a": 1, "b": {"x": [1], "x": [2, 3]}, "a": 3})");
  EXPECT_EQ(parsed.dump(), R"({"a":3,"b":{"x":[2,3]}})");
}

// Every key of a 100,000-key object arrives, in order. (How long it takes is bench's
// business; this is the body that stalled the server.)
TEST(RequestBody, AnObjectOfAHundredThousandKeysKeepsThemAllInOrder) {
  std::string text = R"({"prompt": "hi", "logit_bias": {)";
  for (int i = 0; i < 100000; ++i) text += (i ? ",\"" : "\"") + std::to_string(i) + "\":1";
  text += "}}";
  const Json parsed = parse_body_object(text);
  const Json& bias = parsed.at("logit_bias");
  ASSERT_EQ(bias.size(), 100000u);
  int expected = 0;
  for (const auto& [key, value] : bias.items()) {
    ASSERT_EQ(key, std::to_string(expected++));
    ASSERT_EQ(value, 1);
  }
}

TEST(RequestBody, BadBodiesAreRefusedWithOneMessage) {
  auto message_of = [](const std::string& text) -> std::string {
    try {
      parse_body_object(text);
    } catch (const RequestRejected& r) {
      return r.error.message;
    }
    return "accepted";
  };
  EXPECT_NE(message_of(R"({"a": 1} x)")
                .find("Malformed JSON in the request body: parse error at line 1, column 10"),
            std::string::npos);
  EXPECT_NE(message_of("{\"a\": \"\xff\"}").find("Malformed JSON"), std::string::npos);
  EXPECT_EQ(message_of("[1]"), "The request body must be a JSON object, but it is an array.");
  // 64 levels in all are allowed (the object and 63 arrays); the 65th is refused as it opens.
  const std::string arrays = std::string(63, '[') + std::string(63, ']');
  EXPECT_EQ(message_of("{\"a\":" + arrays + "}"), "accepted");
  EXPECT_EQ(message_of("{\"a\":[" + arrays + "]}"),
            "The request body nests arrays and objects deeper than 64 levels.");
  // An integer literal beyond int64 and uint64 is refused, not rounded to a double that a
  // template would print as 1.2345678901234568e+22 (Python prints the integer); the
  // extremes of both ranges and any literal with a fraction or exponent stay.
  for (const char* big : {"12345678901234567890123", "-9223372036854775809"})
    EXPECT_EQ(message_of(std::string(R"({"a": [{"b": 1}, {"c": )") + big + "}]}"),
              std::string("Invalid value for 'a[1].c': the integer ") + big +
                  " is beyond 64 bits (not supported).");
  EXPECT_EQ(message_of(R"({"a": [18446744073709551615, -9223372036854775808, 1e300, 2.5]})"),
            "accepted");
}

}  // namespace
}  // namespace tandem::request_fields::TANDEM_UNITY_ID
