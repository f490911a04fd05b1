#include "runner/grammar/grammar_cache.h"

namespace tandem::grammar {

namespace {

// (Appending rather than `"s" + std::string(text)`, which trips GCC 12's -Wrestrict.)
std::string key_of(char kind, std::string_view text) {
  std::string key(1, kind);
  key.append(text);
  return key;
}

}  // namespace

GrammarCache::GrammarCache(std::shared_ptr<const Vocabulary> vocabulary, size_t capacity)
    : vocabulary_(std::move(vocabulary)), capacity_(capacity == 0 ? 1 : capacity) {}

template <typename Compile>
std::shared_ptr<const CompiledGrammar> GrammarCache::get(std::string key, Compile compile) {
  auto found = [](const Entry& entry) {
    if (!entry.compiled) throw GrammarError(entry.error);
    return entry.compiled;
  };
  {
    std::lock_guard lock(mutex_);
    if (const auto it = index_.find(key); it != index_.end()) {
      entries_.splice(entries_.begin(), entries_, it->second);
      return found(*it->second);
    }
  }
  // Compiled outside the lock: two threads may compile the same text; one result is kept.
  Entry made{key, nullptr, ""};
  try {
    made.compiled = std::make_shared<const CompiledGrammar>(compile(), vocabulary_);
  } catch (const GrammarError& error) {
    made.error = error.what();
  }
  std::lock_guard lock(mutex_);
  if (const auto it = index_.find(key); it != index_.end()) return found(*it->second);
  entries_.push_front(std::move(made));
  index_.emplace(std::move(key), entries_.begin());
  if (entries_.size() > capacity_) {
    index_.erase(entries_.back().key);
    entries_.pop_back();
  }
  return found(entries_.front());
}

std::shared_ptr<const CompiledGrammar> GrammarCache::json_schema(std::string_view schema_text) {
  return get(key_of('s', schema_text), [&] { return compile_json_schema(schema_text); });
}

std::shared_ptr<const CompiledGrammar> GrammarCache::gbnf(std::string_view text) {
  return get(key_of('g', text), [&] { return parse_gbnf(text); });
}

std::shared_ptr<const CompiledGrammar> GrammarCache::regex(std::string_view text) {
  return get(key_of('r', text), [&] { return compile_regex(text); });
}

std::shared_ptr<const CompiledGrammar> GrammarCache::json_object() {
  return get(key_of('o', ""), [] { return json_object_grammar(); });
}

std::shared_ptr<const CompiledGrammar> GrammarCache::framed_json(const FramedJson& framed) {
  return get(key_of('f', framed_json_key(framed)), [&] { return compile_framed_json(framed); });
}

size_t GrammarCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace tandem::grammar
