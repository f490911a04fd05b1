// /infill's inputs as the request gives them (protocol/native_request.h reads them), which
// the server tokenizes into llama-server's FIM prompt (server/infill_prompt.h). A plain value
// type.
#pragma once

#include <string>
#include <vector>

namespace tandem {

// One item of the request's input_extra: another file's text, for repository context.
struct InfillChunk {
  std::string filename = "tmp";  // llama-server's default where the item names none
  std::string text;
};

struct InfillInputs {
  std::string prefix;  // input_prefix: the text before the cursor
  std::string suffix;  // input_suffix: the text after it
  std::string prompt;  // prompt: text that continues the prefix (control tokens parsed)
  std::vector<InfillChunk> extra;
};

}  // namespace tandem
