#include "runner/grammar/pda.h"

namespace tandem::grammar {

namespace {

uint64_t key_of(Head h) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(h.state)) << 32) |
         static_cast<uint32_t>(h.below);
}

uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 29);
}

}  // namespace

int32_t FrameArena::intern(int32_t state, int32_t below) {
  if (table_.empty() || frames_.size() * 2 >= table_.size()) grow();
  const size_t mask = table_.size() - 1;
  for (size_t i = mix(key_of({state, below})) & mask;; i = (i + 1) & mask) {
    const int32_t id = table_[i];
    if (id < 0) {
      frames_.push_back({state, below});
      table_[i] = static_cast<int32_t>(frames_.size() - 1);
      return table_[i];
    }
    if (frames_[static_cast<size_t>(id)] == Head{state, below}) return id;
  }
}

void FrameArena::grow() {
  table_.assign(table_.empty() ? 64 : table_.size() * 2, -1);
  const size_t mask = table_.size() - 1;
  for (size_t id = 0; id < frames_.size(); ++id) {
    size_t i = mix(key_of(frames_[id])) & mask;
    while (table_[i] >= 0) i = (i + 1) & mask;
    table_[i] = static_cast<int32_t>(id);
  }
}

void FrameArena::clear() {
  frames_.clear();
  table_.clear();
}

bool HeadSet::insert(Head head) {
  if (used_.size() * 2 >= slots_.size()) {
    std::vector<uint64_t> old;
    old.swap(slots_);
    slots_.assign(old.size() * 2, 0);
    used_.clear();
    for (uint64_t key : old)
      if (key != 0) insert({static_cast<int32_t>((key - 1) >> 32), static_cast<int32_t>(key - 1)});
  }
  const uint64_t key = key_of(head) + 1;
  const size_t mask = slots_.size() - 1;
  for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
    if (slots_[i] == key) return false;
    if (slots_[i] == 0) {
      slots_[i] = key;
      used_.push_back(static_cast<uint32_t>(i));
      return true;
    }
  }
}

void HeadSet::clear() {
  for (uint32_t i : used_) slots_[i] = 0;
  used_.clear();
}

bool Pda::drain(FrameArena& arena, std::vector<Head>& out) {
  bool returned = false;
  while (!work_.empty()) {
    const Head h = work_.back();
    work_.pop_back();
    if (!visited_.insert(h)) continue;
    const uint8_t flags = a_->flags[static_cast<size_t>(h.state)];
    if (flags & Automaton::kReadsBytes) out.push_back(h);
    if (flags & Automaton::kCalls) {
      for (const CallEdge& call : a_->calls_of(h.state)) {
        const int32_t below =
            a_->only_returns(call.target) ? h.below : arena.intern(call.target, h.below);
        work_.push_back({a_->rule_start[static_cast<size_t>(call.rule)], below});
      }
    }
    if (flags & Automaton::kAccepting) {
      if (h.below == kBase)
        returned = true;
      else
        work_.push_back(arena.frame(h.below));
    }
  }
  return returned;
}

bool Pda::close(Head head, FrameArena& arena, std::vector<Head>& out) {
  visited_.clear();
  work_.push_back(head);
  return drain(arena, out);
}

bool Pda::step(std::span<const Head> heads, uint8_t byte, FrameArena& arena,
               std::vector<Head>& out) {
  // The common case, one head moving to a state that only reads bytes, needs no set.
  if (heads.size() == 1) {
    const int32_t next = a_->step(heads[0].state, byte);
    if (next < 0) return false;
    if (a_->flags[static_cast<size_t>(next)] == Automaton::kReadsBytes) {
      out.push_back({next, heads[0].below});
      return false;
    }
  }
  visited_.clear();
  for (const Head& h : heads) {
    const int32_t next = a_->step(h.state, byte);
    if (next >= 0) work_.push_back({next, h.below});
  }
  return drain(arena, out);
}

}  // namespace tandem::grammar
