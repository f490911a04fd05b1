// `tandem generate` and a server request take one path (Engine -> Scheduler -> device):
// the same prompt, seed and sampling fields give the same text on both.
#include <string>

#include <gtest/gtest.h>

#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

std::string served_text(const std::string& prompt, const std::string& sampling) {
  HttpClient client(shared_server().port());
  const HttpResult r = client.send(
      "POST", "/v1/completions",
      R"({"prompt": ")" + prompt + R"(", "max_tokens": 24, "ignore_eos": true, )" + sampling + "}");
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json()["choices"][0]["text"].get<std::string>();
}

std::string generated_text(const std::string& prompt, std::vector<std::string> sampling) {
  std::vector<std::string> args = {"generate", "--model",     tiny_model().string(),
                                   "--prompt", prompt,        "--max-tokens",
                                   "24",       "--ignore-eos"};
  args.insert(args.end(), sampling.begin(), sampling.end());
  const CommandResult r = run_tandem(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(r.out.size(), 1u);               // some text, not just the newline
  return r.out.substr(0, r.out.size() - 1);  // generate ends its text with a newline
}

TEST(GenerateMatchesServe, GreedyTextIsTheSame) {
  EXPECT_EQ(generated_text("The cat", {"--temperature", "0"}),
            served_text("The cat", R"("temperature": 0)"));
}

TEST(GenerateMatchesServe, SeededSampledTextIsTheSame) {
  EXPECT_EQ(generated_text("abc", {"--temperature", "0.9", "--top-p", "0.95", "--seed", "1234"}),
            served_text("abc", R"("temperature": 0.9, "top_p": 0.95, "seed": 1234)"));
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
