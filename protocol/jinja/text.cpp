#include "protocol/jinja/text.h"

#include <algorithm>

#include "protocol/jinja/error.h"

namespace tandem::jinja {

Text::Text(std::string bytes, bool from_input) : bytes_(std::move(bytes)) {
  check_room(0);
  if (from_input) mark_input(0, bytes_.size());
}

void Text::check_room(size_t more) const {
  if (bytes_.size() + more > kMaxTextBytes) unsupported("strings over 16 MiB");
}

bool Text::from_input_at(size_t pos) const {
  auto it = std::upper_bound(input_.begin(), input_.end(), pos,
                             [](size_t p, const auto& range) { return p < range.second; });
  return it != input_.end() && it->first <= pos;
}

void Text::mark_input(size_t begin, size_t end) {
  if (begin >= end) return;
  if (!input_.empty() && input_.back().second >= begin) {
    input_.back().second = std::max(input_.back().second, end);
  } else {
    input_.emplace_back(begin, end);
  }
}

void Text::append(const Text& other) { append(other, 0, other.size()); }

void Text::append(const Text& other, size_t pos, size_t len) {
  pos = std::min(pos, other.size());
  len = std::min(len, other.size() - pos);
  check_room(len);
  const size_t base = bytes_.size();
  bytes_.append(other.bytes_, pos, len);
  const size_t end = pos + len;
  auto it = std::upper_bound(other.input_.begin(), other.input_.end(), pos,
                             [](size_t p, const auto& range) { return p < range.second; });
  for (; it != other.input_.end() && it->first < end; ++it) {
    const size_t from = std::max(it->first, pos);
    const size_t to = std::min(it->second, end);
    mark_input(base + from - pos, base + to - pos);
  }
}

void Text::append(std::string_view bytes, bool from_input) {
  check_room(bytes.size());
  const size_t base = bytes_.size();
  bytes_.append(bytes);
  if (from_input) mark_input(base, bytes_.size());
}

Text Text::substr(size_t pos, size_t len) const {
  Text out;
  out.append(*this, pos, len);
  return out;
}

std::vector<Segment> Text::segments() const {
  std::vector<Segment> out;
  size_t pos = 0;
  for (const auto& [begin, end] : input_) {
    if (begin > pos) out.push_back({bytes_.substr(pos, begin - pos), false});
    out.push_back({bytes_.substr(begin, end - begin), true});
    pos = end;
  }
  if (pos < bytes_.size()) out.push_back({bytes_.substr(pos), false});
  return out;
}

}  // namespace tandem::jinja
