// The bad-input catalogue, end to end: malformed HTTP, abusive connections and bad request
// bodies go over a raw socket to a real `tandem serve`, each with the answer it must get
// (its status and OpenAI error object, or the connection closed by a timeout). After every
// case the server answers a seeded completion, on a fresh connection, exactly as it did
// before (law 6). tests/protocol/bad_request_catalogue_test.cpp holds the parser's own list.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;
using Millis = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// Every wait here is bounded by this: a server that neither answers nor closes fails the
// case instead of hanging the suite.
constexpr Millis kClientDeadline{15'000};

// A TCP connection that sends bytes no HTTP library would, and reads with a deadline.
class RawConnection {
 public:
  explicit RawConnection(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address)) {
      throw std::runtime_error("cannot connect to the server");
    }
  }
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // False once the server has closed the connection: it may refuse a request and close
  // before the client has sent all of it.
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Waits at most `wait` for the server to send something or close.
  bool readable(Millis wait) {
    pollfd pfd{fd_, POLLIN, 0};
    return ::poll(&pfd, 1, static_cast<int>(wait.count())) > 0;
  }

  // All the server sends until it closes; nullopt when it has not closed by the deadline.
  std::optional<std::string> read_until_closed() {
    std::string out;
    const auto deadline = SteadyClock::now() + kClientDeadline;
    char chunk[16384];
    while (true) {
      const auto left = std::chrono::duration_cast<Millis>(deadline - SteadyClock::now());
      if (left.count() <= 0 || !readable(left)) return std::nullopt;
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return out;  // closed, or reset after the answer
      out.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
};

// The responses in `raw`, in order. A HEAD's answer has no body, whatever its length says.
std::vector<HttpResult> parse_responses(std::string_view raw, bool head) {
  std::vector<HttpResult> out;
  while (!raw.empty()) {
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    parser.skip(head);
    parser.body_limit(boost::none);
    boost::beast::error_code ec;
    const size_t used = parser.put(boost::asio::buffer(raw.data(), raw.size()), ec);
    if (ec || !parser.is_done()) {
      ADD_FAILURE() << "not a whole HTTP response (" << ec.message() << "): " << raw.substr(0, 300);
      break;
    }
    HttpResult result;
    result.status = static_cast<int>(parser.get().result_int());
    for (const auto& field : parser.get()) {
      std::string name(field.name_string());
      for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      result.headers[name] = std::string(field.value());
    }
    result.body = parser.get().body();
    result.keep_alive = parser.get().keep_alive();
    out.push_back(std::move(result));
    raw.remove_prefix(used);
  }
  return out;
}

// An OpenAI error object: {"error": {"message", "type", "param", "code"}}. param and code
// are checked when given ("" stands for null), skipped when "-".
void expect_error_object(const HttpResult& answer, const std::string& param,
                         const std::string& code) {
  EXPECT_EQ(answer.headers.count("content-type") ? answer.headers.at("content-type") : "",
            "application/json");
  const json body = json::parse(answer.body, nullptr, false);
  ASSERT_TRUE(body.is_object() && body.contains("error")) << answer.body;
  const json& error = body["error"];
  ASSERT_TRUE(error.is_object()) << answer.body;
  EXPECT_EQ(error.size(), 4u) << answer.body;
  // A message may quote the request, but never much of it.
  EXPECT_LT(answer.body.size(), 2048u) << answer.body.substr(0, 300);
  EXPECT_TRUE(error["message"].is_string() && !error["message"].get<std::string>().empty());
  EXPECT_TRUE(error["type"].is_string()) << answer.body;
  EXPECT_TRUE(error.contains("param") && (error["param"].is_string() || error["param"].is_null()));
  EXPECT_TRUE(error.contains("code") && (error["code"].is_string() || error["code"].is_null()));
  auto expect_field = [&](const char* name, const std::string& expected) {
    if (expected == "-") return;
    EXPECT_EQ(error[name], expected.empty() ? json(nullptr) : json(expected)) << answer.body;
  };
  expect_field("param", param);
  expect_field("code", code);
}

// A completion or chat completion body with some generated text and its usage.
void expect_sane_completion(const HttpResult& answer) {
  const json body = json::parse(answer.body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << answer.body;
  const json& choice = body["choices"][0];
  const json& text =
      body["object"] == "chat.completion" ? choice["message"]["content"] : choice["text"];
  EXPECT_TRUE(text.is_string()) << answer.body;
  EXPECT_GE(body["usage"]["completion_tokens"].get<int>(), 1) << answer.body;
}

// The good request after every case, and its answer before the catalogue ran.
const std::string kGoodRequest =
    R"({"prompt": "The catalogue", "max_tokens": 4, "seed": 7, "temperature": 1.0})";

const std::string& good_text_before_the_catalogue() {
  static const std::string text = [] {
    const HttpResult answer =
        fetch(shared_server().port(), "POST", "/v1/completions", kGoodRequest);
    if (answer.status != 200) throw std::runtime_error("the good request failed: " + answer.body);
    return json::parse(answer.body)["choices"][0]["text"].get<std::string>();
  }();
  return text;
}

void expect_serves_on(uint16_t port) {
  const HttpResult answer = fetch(port, "POST", "/v1/completions", kGoodRequest);
  ASSERT_EQ(answer.status, 200) << answer.body;
  const json body = json::parse(answer.body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["seed"], 7);
  EXPECT_EQ(body["choices"][0]["text"], good_text_before_the_catalogue());
  EXPECT_LE(body["usage"]["completion_tokens"].get<int>(), 4);
}

// A second server whose idle and read timeouts end the slow cases in a quarter second.
ServerProcess& short_timeout_server() {
  static ServerProcess server(
      tiny_model(), {"--idle-timeout", "0.25", "--read-timeout", "0.25", "--kv-tokens", "4096"});
  return server;
}

enum class On { kSharedServer, kShortTimeouts };

struct Case {
  std::string name;
  std::string request;      // the bytes sent, as they are
  int status;               // of the answer; 0: none, the server closes the connection
  std::string param = "-";  // the error's param: "" for null, "-" unchecked
  std::string code = "-";   // the error's code, likewise
  On on = On::kSharedServer;
};

// A request with a body, asking the server to close after answering.
std::string post(const std::string& target, const std::string& body,
                 const std::string& headers = "Content-Type: application/json\r\n") {
  return "POST " + target + " HTTP/1.1\r\nHost: tandem\r\nConnection: close\r\n" + headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}
std::string completion(const std::string& body) { return post("/v1/completions", body); }
std::string chat(const std::string& body) { return post("/v1/chat/completions", body); }
std::string with_prompt(const std::string& extra) {
  return completion(R"({"prompt": "hi", )" + extra + "}");
}
std::string with_messages(const std::string& extra) {
  return chat(R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, )" + extra +
              "}");
}
std::string get(const std::string& request_line, const std::string& headers = "") {
  return request_line + "\r\nHost: tandem\r\nConnection: close\r\n" + headers + "\r\n";
}
std::string post_head(const std::string& headers) {
  return "POST /v1/completions HTTP/1.1\r\nHost: tandem\r\nConnection: close\r\n" + headers +
         "\r\n";
}
std::string repeat(std::string_view piece, size_t times) {
  std::string out;
  out.reserve(piece.size() * times);
  for (size_t i = 0; i < times; ++i) out += piece;
  return out;
}
std::string chunked(const std::string& chunks) {
  return post_head("Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n") + chunks;
}
std::string hex(size_t n) {
  char text[32];
  std::snprintf(text, sizeof text, "%zx", n);
  return text;
}

const std::string kSmallBody = R"({"prompt": "hi", "max_tokens": 2})";
constexpr size_t kTenMegabytes = 10 << 20;  // ten times the default --max-body

std::vector<Case> make_framing_cases() {
  std::string many_headers;
  for (int i = 0; i < 2000; ++i) many_headers += "X-Flood-" + std::to_string(i) + ": x\r\n";
  const std::string big_chunks =
      repeat(hex(64 << 10) + "\r\n" + std::string(64 << 10, ' ') + "\r\n", 32);
  return {
      // The request line.
      {"RequestLineGarbage", "GARBAGE\r\n\r\n", 400, "", ""},
      {"RequestLineWithoutVersion", "GET /health\r\n\r\n", 400},
      {"RequestLineExtraWord", get("GET /health HTTP/1.1 please"), 400},
      {"RequestLineDoubleSpace", get("GET  /health HTTP/1.1"), 400},
      {"TlsHandshakeOnThePlainPort",
       std::string("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11) + std::string(32, '\x42'),
       400},
      {"BareLineFeeds", "GET /health HTTP/1.1\nHost: tandem\nConnection: close\n\n", 400},
      {"LowercaseMethod", get("get /health HTTP/1.1"), 405, "", "method_not_allowed"},
      {"UnknownMethod", get("BREW /v1/models HTTP/1.1"), 405, "", "method_not_allowed"},
      // Beast parses HTTP/1.0 and 1.1 only; any other version is a 400 "bad version".
      {"Http20", get("GET /health HTTP/2.0"), 400, "", ""},
      {"Http09", get("GET /health HTTP/0.9"), 400, "", ""},
      {"HttpVersionNotANumber", get("GET /health HTTP/1.x"), 400},
      {"HttpVersionTwoDigits", get("GET /health HTTP/11.1"), 400},
      {"H2cPriorKnowledgePreface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "", ""},
      {"Http12", get("GET /health HTTP/1.2"), 400, "", ""},
      {"TargetTooLong", get("GET /health?q=" + std::string(32 << 10, 'q') + " HTTP/1.1"), 431, "",
       "request_header_fields_too_large"},
      {"AbsoluteFormTarget", get("GET http://127.0.0.1/v1/models HTTP/1.1"), 200},
      {"UnknownRoute", get("GET /v2/everything HTTP/1.1"), 404},
      {"TargetWithAControlByte", get("GET /hea\x01lth HTTP/1.1"), 400},
      {"CompletionsByGet", get("GET /v1/completions HTTP/1.1"), 405, "", "method_not_allowed"},
      {"CorsPreflight", get("OPTIONS /v1/chat/completions HTTP/1.1"), 204},
      {"HeadOfHealth", get("HEAD /health HTTP/1.1"), 200},
      {"HeadOfCompletions", get("HEAD /v1/completions HTTP/1.1"), 405},
      // RFC 9112 3.2: an HTTP/1.1 request names its Host once; HTTP/1.0 may omit it.
      {"Http11WithoutHost", "GET /health HTTP/1.1\r\nConnection: close\r\n\r\n", 400},
      {"HostTwice", get("GET /health HTTP/1.1", "Host: elsewhere\r\n"), 400},
      {"Http10WithoutHost", "GET /health HTTP/1.0\r\n\r\n", 200},
      {"Http11WithAnEmptyHost", "GET /health HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n", 200},
      // A Host value is host[:port] (RFC 3986): a comma list (two lines joined), space, or
      // bytes past ASCII are 400s; refused before any 100 Continue or body byte.
      {"HostAsACommaList", "GET /health HTTP/1.1\r\nHost: a, b\r\nConnection: close\r\n\r\n", 400},
      {"HostWithASpace", "GET /health HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n", 400},
      {"HostOfNonAscii", "GET /health HTTP/1.1\r\nHost: \xff\xfe\r\nConnection: close\r\n\r\n",
       400},
      {"HostWithAPortTooLong",
       "GET /health HTTP/1.1\r\nHost: a:123456\r\nConnection: close\r\n\r\n", 400},
      {"HostAnIpv6LiteralAndPort",
       "GET /health HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n", 200},
      {"HostANameAndPort",
       "GET /health HTTP/1.1\r\nHost: api.example-1.com:443\r\nConnection: close\r\n\r\n", 200},
      {"NoHostBeforeAnExpectedBody",
       "POST /tokenize HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 16\r\n\r\n", 400},
      // Headers.
      {"HeaderWithoutColon", get("GET /health HTTP/1.1", "Just-A-Name\r\n"), 400},
      {"HeaderSpaceBeforeColon", get("GET /health HTTP/1.1", "X-Spaced : yes\r\n"), 400},
      {"HeaderNameWithParenthesis", get("GET /health HTTP/1.1", "Bad(Name): x\r\n"), 400},
      {"HeaderValueWithNul", get("GET /health HTTP/1.1", std::string("X-Nul: a\0b\r\n", 12)), 400},
      {"HeaderFloodOfTwoThousand", get("GET /health HTTP/1.1", many_headers), 431, "",
       "request_header_fields_too_large"},
      {"OneHeaderOf64KiB",
       get("GET /health HTTP/1.1", "X-Big: " + std::string(64 << 10, 'b') + "\r\n"), 431, "",
       "request_header_fields_too_large"},
      // Body framing.
      {"ContentLengthNegative", post_head("Content-Length: -5\r\n") + "{}", 400},
      {"ContentLengthNotANumber", post_head("Content-Length: ten\r\n") + "{}", 400},
      {"ContentLengthBeyondUint64", post_head("Content-Length: 99999999999999999999999\r\n"), 400},
      {"ContentLengthTwiceDiffering",
       post_head("Content-Length: 2\r\nContent-Length: 3\r\n") + "{}", 400},
      {"ContentLengthShorterThanBody",
       post_head("Content-Length: 10\r\n") + R"({"prompt": "hi", "max_tokens": 2})", 400, ""},
      {"ContentLengthAndChunked",
       post_head("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") + "0\r\n\r\n", 400},
      {"ChunkSizeNotHex", chunked("zz\r\n" + kSmallBody + "\r\n0\r\n\r\n"), 400},
      {"ChunkSizeOverflow", chunked("fffffffffffffffffffff\r\n" + kSmallBody), 400},
      {"ChunkLongerThanItsSize", chunked("2\r\n" + kSmallBody + "\r\n0\r\n\r\n"), 400},
      {"ChunkedAsItShouldBe",
       chunked(hex(10) + "\r\n" + kSmallBody.substr(0, 10) + "\r\n" + hex(kSmallBody.size() - 10) +
               "\r\n" + kSmallBody.substr(10) + "\r\n0\r\n\r\n"),
       200},
      {"ChunkedPastTheBodyLimit", chunked(big_chunks + "0\r\n\r\n"), 413, "", "request_too_large"},
      // RFC 9112 6.1/6.3: chunked, once and last, is the one coding read; anything else
      // closes (no request hidden in a body is run) with a 501 for a coding not implemented
      // or a 400 for chunked repeated or not last.
      {"TransferEncodingSmuggling",
       "GET /health HTTP/1.1\r\nHost: tandem\r\nTransfer-Encoding: gzip\r\n\r\n" +
           get("GET /v1/smuggled HTTP/1.1"),
       501, "", "not_implemented"},
      {"TransferEncodingGzipOnly",
       post_head("Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n") + kSmallBody, 501,
       "", "not_implemented"},
      {"TransferEncodingGzipThenChunked",
       post_head("Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n") +
           hex(kSmallBody.size()) + "\r\n" + kSmallBody + "\r\n0\r\n\r\n",
       501, "", "not_implemented"},
      {"TransferEncodingChunkedTwiceHidingARequest",
       "POST /tokenize HTTP/1.1\r\nHost: tandem\r\nTransfer-Encoding: chunked, chunked\r\n\r\n" +
           get("GET /v1/models HTTP/1.1"),
       400, ""},
      {"TransferEncodingChunkedIdentityChunked",
       "POST /tokenize HTTP/1.1\r\nHost: tandem\r\nTransfer-Encoding: chunked, identity, "
       "chunked\r\n\r\n" +
           get("GET /v1/models HTTP/1.1"),
       501, "", "not_implemented"},
      {"TenMegabytesDeclaredNotSent",
       post_head("Content-Length: " + std::to_string(kTenMegabytes) + "\r\n"), 413, "",
       "request_too_large"},
      {"TenMegabytesSent",
       post_head("Content-Length: " + std::to_string(kTenMegabytes) + "\r\n") +
           std::string(kTenMegabytes, 'x'),
       413, "", "request_too_large"},
      {"TenMegabytesAfterExpectContinue",
       post_head("Expect: 100-continue\r\nContent-Length: " + std::to_string(kTenMegabytes) +
                 "\r\n"),
       413, "", "request_too_large"},
      {"PostWithoutContentLength", post_head("Content-Type: application/json\r\n"), 400, ""},
      {"EmptyBody", completion(""), 400, ""},
      // Content-Type: the body is read as JSON whatever it says (curl -d sends a form type).
      {"ContentTypeTextPlain", post("/v1/completions", kSmallBody, "Content-Type: text/plain\r\n"),
       200},
      {"ContentTypeForm",
       post("/v1/completions", kSmallBody, "Content-Type: application/x-www-form-urlencoded\r\n"),
       200},
      {"ContentTypeMissing", post("/v1/completions", kSmallBody, ""), 200},
      // A compressed body is named as such, not read as malformed JSON.
      {"ContentEncodingGzip",
       post("/v1/completions", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8),
            "Content-Encoding: gzip\r\n"),
       415, "", "unsupported_media_type"},
      // Two lines are one list: identity, then gzip.
      {"ContentEncodingOnASecondLine",
       post("/v1/completions", kSmallBody,
            "Content-Encoding: identity\r\nContent-Encoding: gzip\r\n"),
       415, "", "unsupported_media_type"},
      {"ContentEncodingIdentity",
       post("/v1/completions", kSmallBody, "Content-Encoding: Identity\r\n"), 200},
      {"MultipartFormBody",
       post("/v1/completions",
            "--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nhi\r\n--b--\r\n",
            "Content-Type: multipart/form-data; boundary=b\r\n"),
       400, ""},
      // Requests that never finish, closed by the timeouts without an answer.
      {"SilentConnection", "", 0, "-", "-", On::kShortTimeouts},
      {"RequestLineNeverEnds", "GET /heal", 0, "-", "-", On::kShortTimeouts},
      {"HeadersNeverEnd", "GET /health HTTP/1.1\r\nHost: tandem\r\n", 0, "-", "-",
       On::kShortTimeouts},
      {"BodyShorterThanContentLength", post_head("Content-Length: 100\r\n") + R"({"prompt")", 0,
       "-", "-", On::kShortTimeouts},
      {"ChunkedNeverTerminated", chunked("5\r\n{\"pro\r\n"), 0, "-", "-", On::kShortTimeouts},
      {"ExpectContinueThenNoBody", post_head("Expect: 100-continue\r\nContent-Length: 30\r\n"), 0,
       "-", "-", On::kShortTimeouts},
  };
}

std::vector<Case> make_body_cases() {
  const std::string deep_open = repeat("[", 100'000);
  const std::string deep_closed = deep_open + repeat("]", 100'000);
  const std::string deep_objects = repeat(R"({"a":)", 50'000) + "1" + repeat("}", 50'000);
  const std::string long_prompt = json{{"prompt", std::vector<int>(600, 65)}}.dump();
  const std::string long_chat =
      json{{"messages", {{{"role", "user"}, {"content", std::string(700, 'a')}}}}}.dump();
  const std::string thousand_stops =
      json{{"prompt", "hi"}, {"stop", std::vector<std::string>(1000, "x")}}.dump();
  return {
      // Truncated JSON, at several points.
      {"TruncatedAfterBrace", completion("{"), 400, ""},
      {"TruncatedInKey", completion(R"({"pro)"), 400, ""},
      {"TruncatedAfterKey", completion(R"({"prompt")"), 400, ""},
      {"TruncatedInString", completion(R"({"prompt": "hel)"), 400, ""},
      {"TruncatedInEscape", completion(R"({"prompt": "hi\)"), 400, ""},
      {"TruncatedAfterComma", completion(R"({"prompt": "hi",)"), 400, ""},
      {"TruncatedInNumber", completion(R"({"prompt": "hi", "max_tokens": 1)"), 400, ""},
      {"TruncatedInArray", completion(R"({"prompt": [1, 2,)"), 400, ""},
      {"TrailingSecondObject", completion(R"({"prompt": "a"} {"prompt": "b"})"), 400, ""},
      // Bodies that are JSON but not an object.
      {"BodyIsArray", completion("[1, 2]"), 400, ""},
      {"BodyIsString", completion(R"("hi")"), 400, ""},
      {"BodyIsNull", completion("null"), 400, ""},
      {"BodyIsNumber", chat("42"), 400, ""},
      // Nesting: refused past the depth limit, however deep, without exhausting anything.
      {"HundredThousandOpenBrackets", completion(deep_open), 400, ""},
      {"HundredThousandNestedArraysInAField",
       completion(R"({"prompt": "hi", "x": )" + deep_closed + "}"), 400, ""},
      {"FiftyThousandNestedObjects", completion(deep_objects), 400, ""},
      {"NestingWithinTheLimit",
       completion(R"({"prompt": "hi", "max_tokens": 2, "x": )" + repeat("[", 32) + repeat("]", 32) +
                  "}"),
       200},
      // Duplicate keys: the last wins, as in Python's json (vLLM).
      {"DuplicateKeyLastValid", completion(R"({"prompt": "hi", "max_tokens": 0, "max_tokens": 2})"),
       200},
      {"DuplicateKeyLastInvalid", completion(R"({"prompt": "hi", "prompt": 5})"), 400, "prompt"},
      // Wrong types.
      {"PromptNumber", completion(R"({"prompt": 5})"), 400, "prompt"},
      {"MaxTokensString", with_prompt(R"("max_tokens": "16")"), 400, "max_tokens"},
      {"StopObject", with_prompt(R"("stop": {"a": 1})"), 400, "stop"},
      {"MessagesNotArray", chat(R"({"messages": {"role": "user", "content": "hi"}})"), 400,
       "messages"},
      {"TemperatureBool", with_prompt(R"("temperature": true)"), 400, "temperature"},
      {"StreamString", with_prompt(R"("stream": "yes")"), 400, "stream"},
      {"TokenIdString", completion(R"({"prompt": [1, "2"]})"), 400, "prompt[1]"},
      {"ModelNumber", with_prompt(R"("model": 7)"), 400, "model"},
      // Huge numbers.
      {"NumberBeyondDouble", with_prompt(R"("temperature": 1e309)"), 400, ""},
      {"MaxTokensTwoToThe64", with_prompt(R"("max_tokens": 18446744073709551616)"), 400,
       "max_tokens"},
      {"MaxTokensUint64Max", with_prompt(R"("max_tokens": 18446744073709551615)"), 400,
       "max_tokens"},
      {"MaxTokens1e18", with_prompt(R"("max_tokens": 1e18)"), 400, "max_tokens"},
      {"MaxTokensNegative", with_prompt(R"("max_tokens": -5)"), 400, "max_tokens"},
      {"SeedTwoToThe64", with_prompt(R"("seed": 18446744073709551616)"), 400, "seed"},
      {"Seed1e300", with_prompt(R"("seed": 1e300)"), 400, "seed"},
      {"SeedUint64MaxIsFine", with_prompt(R"("seed": 18446744073709551615, "max_tokens": 2)"), 200},
      {"NHuge", with_prompt(R"("n": 1e20)"), 400, "n"},
      {"NUint64Max", with_prompt(R"("n": 18446744073709551615)"), 400, "n"},
      {"TopKHuge", with_prompt(R"("top_k": 1e100)"), 400, "top_k"},
      // Ranges: top_p is in (0, 1], as vLLM checks it.
      {"TopPZero", with_prompt(R"("top_p": 0)"), 400, "top_p"},
      {"TopPAboveOne", with_prompt(R"("top_p": 1.0001)"), 400, "top_p"},
      {"TemperatureNegative", with_prompt(R"("temperature": -0.1)"), 400, "temperature"},
      // Invalid UTF-8, raw and escaped.
      {"RawByteFF", completion("{\"prompt\": \"a\xff\"}"), 400, ""},
      {"OverlongSlash", completion("{\"prompt\": \"\xc0\xaf\"}"), 400, ""},
      {"TruncatedSequence", completion("{\"prompt\": \"\xe2\x82\"}"), 400, ""},
      {"EncodedSurrogate", completion("{\"prompt\": \"\xed\xa0\x80\"}"), 400, ""},
      {"InvalidUtf8InAKey", completion("{\"pr\xfe\": 1, \"prompt\": \"hi\"}"), 400, ""},
      {"InvalidUtf8InChat", chat("{\"messages\": [{\"role\": \"user\", \"content\": \"\x80\"}]}"),
       400, ""},
      {"LoneHighSurrogate", completion(R"({"prompt": "\ud800"})"), 400, ""},
      {"LoneLowSurrogate", completion(R"({"prompt": "\udc00"})"), 400, ""},
      {"HighSurrogateThenLetter", completion(R"({"prompt": "\ud800\u0041"})"), 400, ""},
      {"InvalidByteAfterAHalfMegabyteString",
       completion("{\"prompt\": \"" + std::string(512 << 10, 'a') + "\xff\"}"), 400, ""},
      {"SurrogatePairIsFine", completion(R"({"prompt": "\ud83d\ude00", "max_tokens": 2})"), 200},
      // NUL bytes.
      {"RawNulInString", completion(std::string("{\"prompt\": \"a\0b\"}", 17)), 400, ""},
      {"RawNulBetweenTokens", completion(std::string("{\"prompt\":\0\"hi\"}", 16)), 400, ""},
      // nlohmann's lexer ends its input at a raw NUL: the body must not pass as its head.
      {"RawNulAfterTheObject",
       completion(std::string("{\"prompt\": \"hi\", \"max_tokens\": 2}\0garbage{{{", 44)), 400, ""},
      {"EscapedNulInPrompt", completion(R"({"prompt": "a\u0000b", "max_tokens": 2})"), 200},
      {"EscapedNulInStop", completion(R"({"prompt": "hi", "max_tokens": 2, "stop": "\u0000"})"),
       200},
      // What needs the model, and the options this server refuses.
      {"UnknownModel", with_prompt(R"("model": "gpt-9")"), 404, "model", "model_not_found"},
      {"UnknownModelOnChat", with_messages(R"("model": "gpt-9")"), 404, "model", "model_not_found"},
      {"UnknownModelOfHalfAMegabyte",
       completion(json{{"prompt", "hi"}, {"model", std::string(512 << 10, 'm')}}.dump()), 404,
       "model", "model_not_found"},
      {"StreamedWithAnUnknownModel", with_prompt(R"("stream": true, "model": "gpt-9")"), 404,
       "model", "model_not_found"},
      {"ServedModelByName", with_prompt(R"("model": "tiny", "max_tokens": 2)"), 200},
      {"EmptyMessages", chat(R"({"messages": []})"), 400, "messages"},
      {"UnknownRole", chat(R"({"messages": [{"role": "wizard", "content": "hi"}]})"), 400,
       "messages[0].role"},
      {"TokenIdOutsideTheVocabulary", completion(R"({"prompt": [1, 2, 999]})"), 400, "prompt"},
      {"TokenIdNegative", completion(R"({"prompt": [-1]})"), 400, "prompt[0]"},
      {"LogitBiasOutsideTheVocabulary", with_prompt(R"("logit_bias": {"4000": 1})"), 400,
       "logit_bias"},
      {"PromptLongerThanTheContext", completion(long_prompt), 400, "prompt",
       "context_length_exceeded"},
      {"ChatLongerThanTheContext", chat(long_chat), 400, "messages", "context_length_exceeded"},
      {"StreamedChatLongerThanTheContext",
       chat(json{{"messages", {{{"role", "user"}, {"content", std::string(700, 'a')}}}},
                 {"stream", true}}
                .dump()),
       400, "messages", "context_length_exceeded"},
      {"EmptyPrompt", completion(R"({"prompt": ""})"), 400, "prompt"},
      {"TopLogprobsWithoutLogprobs", with_messages(R"("top_logprobs": 2)"), 400, "top_logprobs"},
      {"LogprobsAboveTwenty", with_prompt(R"("logprobs": 21)"), 400, "logprobs"},
      {"StopTokenIdOutsideTheVocabulary", with_prompt(R"("stop_token_ids": [4000])"), 400,
       "stop_token_ids"},
      {"MinTokensAboveMaxTokens", with_prompt(R"("min_tokens": 9, "max_tokens": 2)"), 400,
       "min_tokens"},
      {"RepetitionPenaltyZero", with_prompt(R"("repetition_penalty": 0)"), 400,
       "repetition_penalty"},
      {"PresencePenaltyThree", with_messages(R"("presence_penalty": 3)"), 400, "presence_penalty"},
      {"BestOfTwo", with_prompt(R"("best_of": 2)"), 400, "best_of"},
      {"SuffixText", with_prompt(R"("suffix": "x")"), 400, "suffix"},
      {"NSeventeen", with_prompt(R"("n": 17)"), 400, "n"},
      {"NTwoIsFine", with_prompt(R"("n": 2, "max_tokens": 2)"), 200},
      {"PromptTokenListOutsideTheVocabulary", completion(R"({"prompt": [[1, 2], [3, 4000]]})"), 400,
       "prompt"},
      {"StreamOptionsWithoutStream", with_prompt(R"("stream_options": {"include_usage": true})"),
       400, "stream_options"},
      {"FiveStops", with_prompt(R"("stop": ["a", "b", "c", "d", "e"])"), 400, "stop"},
      {"ThousandStops", completion(thousand_stops), 400, "stop"},
      {"StopNumberEntry", with_prompt(R"("stop": ["a", 1])"), 400, "stop[1]"},
      {"StopNullEntry", with_prompt(R"("stop": [null])"), 400, "stop[0]"},
      {"AStopOf100KiB",
       completion(
           json{{"prompt", "hi"}, {"max_tokens", 2}, {"stop", std::string(100 << 10, 's')}}.dump()),
       200},
      {"TokenizeContentNumber", post("/tokenize", R"({"content": 5})"), 400, "content"},
      {"DetokenizeOutsideTheVocabulary", post("/detokenize", R"({"tokens": [99999]})"), 400,
       "tokens[0]"},
      {"DetokenizeNegative", post("/detokenize", R"({"tokens": [-3]})"), 400, "tokens[0]"},
  };
}

// Made once: the tables hold ten-megabyte requests.
const std::vector<Case>& framing_cases() {
  static const std::vector<Case> cases = make_framing_cases();
  return cases;
}
const std::vector<Case>& body_cases() {
  static const std::vector<Case> cases = make_body_cases();
  return cases;
}

// One case: its answer (or the connection closed unanswered), then a good request on a
// fresh connection. The cases run in one process per table, sharing its servers: a process
// per case would start a server per case, which dominates the suite under TSan.
void check_case(const Case& c) {
  SCOPED_TRACE("case " + c.name);
  ServerProcess& server = c.on == On::kSharedServer ? shared_server() : short_timeout_server();
  RawConnection connection(server.port());
  connection.send(c.request);  // a refusal may close the connection before all is sent
  const std::optional<std::string> raw = connection.read_until_closed();
  ASSERT_TRUE(raw.has_value()) << "the server neither answered nor closed the connection";
  std::vector<HttpResult> answers = parse_responses(*raw, c.request.rfind("HEAD ", 0) == 0);
  // A 100 Continue may precede a body that never comes; it must not precede a refusal.
  const bool interim = !answers.empty() && answers.front().status == 100;
  if (interim) answers.erase(answers.begin());
  if (c.status == 0) {
    EXPECT_TRUE(answers.empty()) << *raw;
  } else {
    ASSERT_FALSE(answers.empty()) << "no answer";
    const HttpResult& answer = answers.front();
    EXPECT_EQ(answer.status, c.status) << answer.body;
    EXPECT_FALSE(interim && c.status >= 400) << "the client was invited to send a refused body";
    // Each case is one request (or a refused one with bytes after it): one answer, and for
    // HEAD no body, which would read as a second.
    EXPECT_EQ(answers.size(), 1u) << *raw;
    if (c.request.rfind("HEAD ", 0) == 0) {
      EXPECT_EQ(answer.headers.count("content-length"), 1u);
    } else if (c.status >= 400) {
      expect_error_object(answer, c.param, c.code);
    } else if (c.request.find("/v1/") != std::string::npos && c.request.rfind("GET", 0) != 0 &&
               c.request.rfind("OPTIONS", 0) != 0) {
      expect_sane_completion(answer);
    }
  }
  expect_serves_on(server.port());
}

TEST(BadInputCatalogue, EveryFramingCaseGetsItsAnswerAndTheServerServesOn) {
  good_text_before_the_catalogue();
  for (const Case& c : framing_cases()) check_case(c);
}

TEST(BadInputCatalogue, EveryBodyCaseGetsItsAnswerAndTheServerServesOn) {
  good_text_before_the_catalogue();
  for (const Case& c : body_cases()) check_case(c);
}

// A slowloris client sends its headers a byte at a time, each in time for a per-read
// timeout: the read timeout bounds the whole request, so the server closes it anyway.
TEST(BadInputConnections, ASlowlorisTrickleIsCutByTheReadTimeout) {
  good_text_before_the_catalogue();
  ServerProcess& server = short_timeout_server();
  const std::string request =
      "GET /health HTTP/1.1\r\nHost: tandem\r\n" + repeat("X-Slow: 1\r\n", 300) + "\r\n";
  RawConnection connection(server.port());
  size_t sent = 0;
  bool cut = false;
  const auto deadline = SteadyClock::now() + kClientDeadline;
  while (sent < request.size() && !cut && SteadyClock::now() < deadline) {
    cut = !connection.send(request.substr(sent, 1));
    if (!cut) ++sent;
    // The pace of the trickle: one byte per 10 ms, unless the server answers or closes.
    cut = cut || connection.readable(Millis(10));
  }
  ASSERT_TRUE(cut) << "the server let the trickle go on";
  EXPECT_LT(sent, request.size()) << "the whole request arrived: no timeout cut it";
  const std::optional<std::string> rest = connection.read_until_closed();
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(*rest, "") << "a timed-out request got an answer";
  expect_serves_on(server.port());
}

// Clients that hold half-sent requests open do not keep the server from serving others.
TEST(BadInputConnections, ACrowdOfHalfSentRequestsDoesNotStarveOthers) {
  good_text_before_the_catalogue();
  ServerProcess& server = shared_server();  // its timeouts are long: the crowd stays
  std::vector<std::unique_ptr<RawConnection>> crowd;
  for (int i = 0; i < 64; ++i) {
    crowd.push_back(std::make_unique<RawConnection>(server.port()));
    ASSERT_TRUE(crowd.back()->send(post_head("Content-Length: 100\r\n") + "{\"prom"));
  }
  expect_serves_on(server.port());
  for (auto& connection : crowd) EXPECT_FALSE(connection->readable(Millis(0)));
}

// Refusals that leave the request's framing intact keep the connection: the pipelined
// requests behind them are answered in order.
TEST(BadInputConnections, PipelinedRequestsBehindRefusalsAreAnsweredInOrder) {
  good_text_before_the_catalogue();
  RawConnection connection(shared_server().port());
  auto keep_alive = [](const std::string& target, const std::string& body) {
    return "POST " + target +
           " HTTP/1.1\r\nHost: tandem\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  };
  ASSERT_TRUE(connection.send(keep_alive("/v1/completions", R"({"prompt": "hi)") +
                              keep_alive("/v1/completions", R"({"prompt": "hi", "model": "x"})") +
                              keep_alive("/v1/nothing", "{}") +
                              keep_alive("/v1/completions", kGoodRequest) +
                              get("GET /health HTTP/1.1")));
  const std::optional<std::string> raw = connection.read_until_closed();
  ASSERT_TRUE(raw.has_value());
  const std::vector<HttpResult> answers = parse_responses(*raw, false);
  ASSERT_EQ(answers.size(), 5u) << *raw;
  EXPECT_EQ(answers[0].status, 400);
  EXPECT_EQ(answers[1].status, 404);
  EXPECT_EQ(answers[2].status, 404);
  EXPECT_EQ(answers[3].status, 200);
  EXPECT_EQ(json::parse(answers[3].body)["choices"][0]["text"], good_text_before_the_catalogue());
  EXPECT_EQ(answers[4].status, 200);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(answers[i].keep_alive) << i;
}

TEST(BadInputCatalogueSize, HoldsOverFortyCases) {
  std::printf("bad-input catalogue: %zu framing + %zu body cases\n", framing_cases().size(),
              body_cases().size());
  EXPECT_GE(framing_cases().size() + body_cases().size(), 40u);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
