#include "runner/grammar/grammar_cache.h"

#include <algorithm>
#include <future>

#include "runner/grammar/compile_gate.h"

namespace tandem::grammar {

namespace {

// (Appending rather than `"s" + std::string(text)`, which trips GCC 12's -Wrestrict.)
std::string key_of(char kind, std::string_view text) {
  std::string key(1, kind);
  key.append(text);
  return key;
}

}  // namespace

GrammarCache::GrammarCache(std::shared_ptr<const Vocabulary> vocabulary, size_t capacity,
                           size_t budget_bytes, size_t mask_budget_bytes)
    : vocabulary_(std::move(vocabulary)),
      capacity_(capacity == 0 ? 1 : capacity),
      budget_bytes_(budget_bytes),
      masks_(std::make_shared<MaskBudget>(
          mask_budget_bytes > 0 ? mask_budget_bytes : std::max(budget_bytes, kMinMaskBytes))) {}

size_t GrammarCache::bytes_of(const Entry& entry) {
  return sizeof(Entry) + entry.key.capacity() + entry.error.capacity() +
         (entry.compiled ? entry.compiled->memory_bytes() : 0);
}

// Drops least recently used entries past either bound, never the newest (front) one. The
// sizes are measured now, as an entry's masks grow after it was cached.
void GrammarCache::evict_locked() {
  while (entries_.size() > capacity_) {
    index_.erase(entries_.back().key);
    entries_.pop_back();
  }
  size_t total = held_bytes_locked();
  while (total > budget_bytes_ && entries_.size() > 1) {
    total -= std::min(total, bytes_of(entries_.back()));
    index_.erase(entries_.back().key);
    entries_.pop_back();
  }
  evict_idle_masks_locked();
}

// Masks kept past three quarters of their budget leave the grammars in use little room to
// keep theirs: the masks of idle grammars (no request holds them, only the cache: a copy is
// only made under the lock) are freed, least recently used first, until half of it is free.
// Their automata stay cached (a compile costs far more than warming masks again). Masks of
// grammars in use stay whatever the budget: freeing those would pull them from under their
// matchers. The newest entry is skipped: its lookup is handing it out.
void GrammarCache::evict_idle_masks_locked() {
  if (masks_->used() <= masks_->limit() / 4 * 3 || entries_.size() < 2) return;
  for (auto it = std::prev(entries_.end()); it != entries_.begin(); --it) {
    if (masks_->used() <= masks_->limit() / 2) break;
    if (it->compiled && it->compiled.use_count() == 1) it->compiled->drop_masks();
  }
}

template <typename Compile>
std::shared_ptr<const CompiledGrammar> GrammarCache::get(std::string key, Compile compile) {
  auto found = [](const Entry& entry) {
    if (!entry.compiled) throw GrammarError(entry.error);
    return entry.compiled;
  };
  // One compile per text at a time: a request whose text is being compiled waits for that
  // compile rather than repeating it (four requests with one new schema cost one compile).
  std::promise<void> compiled_here;
  for (;;) {
    std::shared_future<void> other;
    {
      std::lock_guard lock(mutex_);
      if (const auto it = index_.find(key); it != index_.end()) {
        entries_.splice(entries_.begin(), entries_, it->second);
        evict_idle_masks_locked();
        return found(entries_.front());
      }
      throw_if_compiles_deferred();  // neither compiles nor waits on a quick thread
      const auto pending = compiling_.find(key);
      if (pending == compiling_.end()) {
        compiling_.emplace(key, compiled_here.get_future().share());
        ++compiles_;
        break;
      }
      other = pending->second;
    }
    other.wait();  // then look again: usually a hit (unless evicted meanwhile)
  }
  // Compiled outside the lock; whatever happens, the waiters wake.
  struct Wake {
    GrammarCache& cache;
    const std::string& key;
    std::promise<void>& done;
    ~Wake() {
      {
        std::lock_guard lock(cache.mutex_);
        cache.compiling_.erase(key);
      }
      done.set_value();
    }
  } wake{*this, key, compiled_here};
  Entry made{key, nullptr, ""};
  try {
    made.compiled = std::make_shared<const CompiledGrammar>(compile(), vocabulary_, masks_);
  } catch (const GrammarError& error) {
    made.error = error.what();
  }
  std::lock_guard lock(mutex_);
  entries_.push_front(std::move(made));
  index_.emplace(key, entries_.begin());
  const Entry& newest = entries_.front();
  std::shared_ptr<const CompiledGrammar> compiled = newest.compiled;
  std::string error = newest.error;
  evict_locked();
  if (!compiled) throw GrammarError(error);
  return compiled;
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

size_t GrammarCache::compiles() const {
  std::lock_guard lock(mutex_);
  return compiles_;
}

size_t GrammarCache::memory_bytes() const {
  std::lock_guard lock(mutex_);
  return held_bytes_locked();
}

size_t GrammarCache::held_bytes_locked() const {
  size_t total = 0;
  for (const Entry& entry : entries_) total += bytes_of(entry);
  return total;
}

}  // namespace tandem::grammar
