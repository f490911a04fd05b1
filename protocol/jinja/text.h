// Text: a string that knows which of its bytes came from the request's data.
//
// The law it serves: text from a message's content never becomes a control token. The
// server tokenizes a rendered prompt with special-token parsing on, so "<|im_end|>" typed by
// a user would become a real control token. Every string the interpreter handles is a Text:
// the caller's data (messages, tools, any value converted with from_input = true) enters
// marked "from input", template literals enter unmarked, and every operation keeps the mark
// on the bytes it copies (concatenation, slicing, strip, split, replace, join, case mapping,
// tojson and printing of containers keep it per byte or per code point). A byte derived from
// input bytes by a rule the interpreter cannot follow byte by byte (e.g. a format string
// filled with input) is marked from input too: the mark errs on the side of the input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::jinja {

// A run of rendered output whose bytes all came from the request's data (from_input) or
// all from the template (and the caller's template-side values such as bos_token).
struct Segment {
  std::string text;
  bool from_input = false;
  bool operator==(const Segment&) const = default;
};

// The largest Text: no prompt comes near it, and it bounds what a template can allocate.
inline constexpr size_t kMaxTextBytes = size_t{16} << 20;

class Text {
 public:
  Text() = default;
  explicit Text(std::string bytes, bool from_input = false);

  const std::string& str() const { return bytes_; }
  size_t size() const { return bytes_.size(); }
  bool empty() const { return bytes_.empty(); }
  // Whether any byte came from input.
  bool has_input() const { return !input_.empty(); }
  bool from_input_at(size_t pos) const;

  // Appending past kMaxTextBytes throws Error (a render error naming the limit).
  void append(const Text& other);
  void append(const Text& other, size_t pos, size_t len);
  void append(std::string_view bytes, bool from_input);
  Text substr(size_t pos, size_t len = std::string::npos) const;

  // The text cut where the origin changes; adjacent runs of one origin are merged.
  std::vector<Segment> segments() const;

  bool operator==(const Text& other) const { return bytes_ == other.bytes_; }

 private:
  void mark_input(size_t begin, size_t end);
  void check_room(size_t more) const;

  std::string bytes_;
  // Byte ranges [first, second) that came from input: sorted, disjoint, not touching.
  std::vector<std::pair<size_t, size_t>> input_;
};

}  // namespace tandem::jinja
