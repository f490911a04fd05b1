// The one exception the interpreter throws inside itself. The public API (template.h,
// protocol/chat_prompt.h) turns it into a returned error; nothing else escapes.
#pragma once

#include <exception>
#include <string>

namespace tandem::jinja {

enum class ErrorKind {
  kSyntax,  // the template does not parse, or uses a construct this interpreter lacks
  kRender,  // rendering failed as Jinja2 would fail (undefined use, type error, ...)
  kRaised,  // the template called raise_exception(message)
};

class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string message, int line = 0, int column = 0)
      : kind_(kind), message_(std::move(message)), line_(line), column_(column) {
    format();
  }

  ErrorKind kind() const { return kind_; }
  // Without the position: for kRaised exactly the template's message.
  const std::string& message() const { return message_; }
  int line() const { return line_; }  // 1-based; 0: not known
  int column() const { return column_; }
  // "line L, column C: message" (the position parts only when known).
  const char* what() const noexcept override { return what_.c_str(); }

  // Fills in the position when the thrower did not know it.
  void locate(int line, int column) {
    if (line_ != 0 || kind_ == ErrorKind::kRaised) return;
    line_ = line;
    column_ = column;
    format();
  }

 private:
  void format() {
    what_.clear();
    if (line_ > 0) {
      what_ = "line " + std::to_string(line_);
      if (column_ > 0) what_ += ", column " + std::to_string(column_);
      what_ += ": ";
    }
    what_ += message_;
  }

  ErrorKind kind_;
  std::string message_;
  int line_;
  int column_;
  std::string what_;
};

// A render-time failure, as Jinja2 would raise it (TypeError, UndefinedError, ...).
[[noreturn]] inline void fail(std::string message) {
  throw Error(ErrorKind::kRender, std::move(message));
}

// A construct Jinja2 supports and this interpreter does not: never guess, say so.
[[noreturn]] inline void unsupported(const std::string& what) {
  throw Error(ErrorKind::kRender, "unsupported by tandem's Jinja interpreter: " + what);
}

}  // namespace tandem::jinja
