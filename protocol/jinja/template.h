// A compiled Jinja template: the entry point of protocol/jinja/. Compile once, render from
// any number of threads at once (the compiled form is immutable; each render has its own
// state). Jinja2 semantics as transformers configures them for chat templates:
// trim_blocks, lstrip_blocks, loopcontrols, {% generation %}, an immutable sandbox, the
// default Undefined, and tojson as json.dumps(ensure_ascii=False).
//
// Output is a list of segments, each from the template or from input data (text.h).
// Rule: a byte is from_input exactly when it was copied, or derived by escaping or case
// mapping, from a string the caller passed with from_input = true (see from_json), through
// any chain of filters, methods, slicing, concatenation, printing and macro calls. Template
// literals, numbers, booleans, none and the JSON/repr syntax around strings are never
// from_input. A caller that tokenizes from_input segments with special-token parsing off
// cannot have input text turn into control tokens.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "protocol/jinja/error.h"
#include "protocol/jinja/interpreter.h"
#include "protocol/jinja/text.h"
#include "protocol/jinja/value.h"

namespace tandem::jinja {

// The top-level variables of one render; a name given twice takes the later value.
using Variables = std::vector<std::pair<std::string, Value>>;

class Template {
 public:
  // A kSyntax Error names the line and column of the first problem.
  static std::variant<Template, Error> compile(std::string_view source);

  // now: strftime_now's clock; empty: the local time.
  std::variant<std::vector<Segment>, Error> render(Variables variables,
                                                   std::function<DateTime()> now = {}) const;

 private:
  explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}
  std::shared_ptr<const Body> body_;
};

// The local wall-clock time.
DateTime local_now();

}  // namespace tandem::jinja
