// llama-server's introspection routes over HTTP: GET /props (the context, total_slots, the
// /completion defaults as a /completion answer shows them, the model's path and template)
// and GET /slots (each running request in its slot, idle ones idle, and ?fail_on_no_slot's
// 503 when every slot is busy).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/test_support.h"
#include "tests/server/server_test_support.h"

namespace tandem::testing::TANDEM_UNITY_ID {
namespace {

using json = nlohmann::json;

constexpr const char* kTemplate =
    "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}";

TEST(LlamaServerInfo, PropsDescribeTheServerAndTheDefaultsCompletionApplies) {
  ScratchDir dir;
  const auto template_path = dir.file("chat.jinja");
  std::ofstream(template_path) << kTemplate;
  ServerProcess server(tiny_model(),
                       {"--max-batch", "3", "--chat-template", template_path.string()});
  const HttpResult answer = fetch(server.port(), "GET", "/props");
  ASSERT_EQ(answer.status, 200) << answer.body;
  const json props = answer.json();
  EXPECT_EQ(props["total_slots"], 3);
  const json models = fetch(server.port(), "GET", "/v1/models").json();
  const json& settings = props["default_generation_settings"];
  EXPECT_EQ(settings["n_ctx"], models["data"][0]["max_model_len"]);
  EXPECT_EQ(settings["is_processing"], false);
  EXPECT_EQ(props["model_alias"], models["data"][0]["id"]);
  EXPECT_EQ(props["model_path"], tiny_model().string());
  EXPECT_EQ(props["chat_template"], kTemplate);
  EXPECT_EQ(props["modalities"], (json{{"vision", false}, {"audio", false}}));
  EXPECT_TRUE(props["build_info"].get<std::string>().starts_with("tandem ")) << props.dump();

  // The defaults are what a /completion that sends only its prompt runs with.
  const json completion =
      post_json(server.port(), "/completion", json{{"prompt", "hi"}, {"n_predict", 2}});
  json applied = completion["generation_settings"];
  json shown = settings["params"];
  EXPECT_EQ(shown["n_predict"], -1);
  EXPECT_EQ(shown["temperature"], completion["generation_settings"]["temperature"]);
  EXPECT_NEAR(shown["temperature"].get<double>(), 0.8, 1e-6);
  EXPECT_EQ(shown["seed"], -1);  // drawn for each request
  for (const char* differs : {"n_predict", "seed"}) {
    applied.erase(differs);
    shown.erase(differs);
  }
  applied.erase("model");  // the answer's own
  EXPECT_EQ(shown, applied);

  // EOS is the tokenizer's: one special token.
  const json eos = post_json(
      server.port(), "/tokenize",
      json{{"content", props["eos_token"]}, {"add_special", false}, {"parse_special", true}});
  EXPECT_EQ(eos["tokens"].size(), 1u) << props["eos_token"];
  EXPECT_EQ(fetch(server.port(), "POST", "/props", "{}").status, 405);
}

bool has_text(const std::string& body) { return body.find("\"text\"") != std::string::npos; }

TEST(LlamaServerInfo, SlotsShowTheRunningRequestAndFailOnNoSlotWhenAllAreBusy) {
  ServerProcess server(demo_model(), {"--max-batch", "2", "--kv-tokens", "8192"});
  const json idle = fetch(server.port(), "GET", "/slots").json();
  ASSERT_EQ(idle.size(), 2u) << idle.dump();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(idle[i]["id"], i);
    EXPECT_EQ(idle[i]["is_processing"], false);
    EXPECT_FALSE(idle[i].contains("id_task"));
  }
  EXPECT_EQ(fetch(server.port(), "GET", "/slots?fail_on_no_slot=1").status, 200);

  const json body = {{"prompt", "once upon a time"},
                     {"max_tokens", 2000},
                     {"ignore_eos", true},
                     {"stream", true},
                     {"seed", 7},
                     {"temperature", 0.5},
                     {"top_k", 9}};
  const size_t prompt_tokens =
      post_json(server.port(), "/tokenize",
                json{{"content", "once upon a time"}, {"add_special", true}})["tokens"]
          .size();
  HttpClient first(server.port()), second(server.port());
  // Each stream is stopped (not read further) once its first text arrived: it is running.
  first.stream("/v1/completions", body.dump(), [](const std::string& b) { return !has_text(b); });
  json one_busy = fetch(server.port(), "GET", "/slots").json();
  ASSERT_EQ(one_busy.size(), 2u);
  const json& slot = one_busy[0];
  EXPECT_EQ(slot["is_processing"], true) << one_busy.dump();
  EXPECT_EQ(slot["n_prompt_tokens"], prompt_tokens);
  EXPECT_EQ(slot["params"]["seed"], 7);
  EXPECT_EQ(slot["params"]["top_k"], 9);
  EXPECT_NEAR(slot["params"]["temperature"].get<double>(), 0.5, 1e-6);
  const json& next = slot["next_token"][0];
  // As of the last published step, which may come before the token the client has seen.
  EXPECT_GE(next["n_decoded"].get<int>(), 0);
  EXPECT_LT(next["n_decoded"].get<int>(), 2000);
  EXPECT_EQ(next["n_decoded"].get<int>() + next["n_remain"].get<int>(), 2000);
  EXPECT_EQ(one_busy[1]["is_processing"], false);
  EXPECT_EQ(fetch(server.port(), "GET", "/slots?fail_on_no_slot=1").status, 200);

  // llama-server's own route, without a limit: n_predict and n_remain are -1, as there.
  const json unlimited = {{"prompt", "once upon a time"}, {"stream", true}, {"ignore_eos", true}};
  second.stream("/completion", unlimited.dump(),
                [](const std::string& b) { return b.find("\"content\"") == std::string::npos; });
  const json both = fetch(server.port(), "GET", "/slots").json();
  EXPECT_EQ(both[0]["id_task"], slot["id_task"]) << "the first request kept its slot";
  EXPECT_EQ(both[1]["is_processing"], true) << both.dump();
  EXPECT_EQ(both[1]["params"]["n_predict"], -1);
  EXPECT_EQ(both[1]["next_token"][0]["n_remain"], -1);
  const HttpResult none = fetch(server.port(), "GET", "/slots?fail_on_no_slot=1");
  EXPECT_EQ(none.status, 503) << none.body;
  EXPECT_EQ(none.json()["error"]["message"], "no slot available");

  first.close();  // cancels the first: its slot is idle again
  json after;
  bool freed = false;
  for (int i = 0; i < 2000 && !freed; ++i) {  // bounded poll: the cancel is asynchronous
    after = fetch(server.port(), "GET", "/slots").json();
    freed = after[0]["is_processing"] == false;
  }
  EXPECT_TRUE(freed) << after.dump();
  EXPECT_EQ(after[1]["id_task"], both[1]["id_task"]);
  EXPECT_EQ(fetch(server.port(), "GET", "/slots?fail_on_no_slot=1").status, 200);
}

}  // namespace
}  // namespace tandem::testing::TANDEM_UNITY_ID
