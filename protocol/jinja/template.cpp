#include "protocol/jinja/template.h"

#include <ctime>

#include "protocol/jinja/lexer.h"
#include "protocol/jinja/parser.h"

namespace tandem::jinja {

std::variant<Template, Error> Template::compile(std::string_view source) {
  try {
    return Template(std::make_shared<const Body>(parse(tokenize(source))));
  } catch (const Error& error) {
    return error;
  }
}

std::variant<std::vector<Segment>, Error> Template::render(Variables variables,
                                                           std::function<DateTime()> now) const {
  try {
    Interpreter interpreter(std::move(variables), now ? std::move(now) : local_now);
    return interpreter.render(*body_).segments();
  } catch (const Error& error) {
    return error;
  } catch (const std::exception& error) {  // e.g. a number too large for std::stoll
    return Error(ErrorKind::kRender, error.what());
  }
}

DateTime local_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return DateTime{tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec};
}

}  // namespace tandem::jinja
