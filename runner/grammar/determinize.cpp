// NFA -> one DFA per kept rule (the subset construction), over byte classes: bytes that
// no edge tells apart share a class, so the transition table is states x classes rather
// than states x 256. Calls are symbols like bytes: from a set of NFA states, the calls of
// one rule lead to one set of return states.

#include <algorithm>
#include <map>
#include <unordered_map>

#include "runner/grammar/determinize.h"

namespace tandem::grammar {

namespace {

struct VectorHash {
  size_t operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
    for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001B3ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

void compute_byte_classes(const Nfa& nfa, Automaton& a) {
  std::array<bool, 257> cut{};
  for (const NfaState& s : nfa.states) {
    for (const NfaByteEdge& e : s.bytes) {
      cut[e.lo] = true;
      cut[static_cast<size_t>(e.hi) + 1] = true;
    }
  }
  int cls = 0;
  for (int b = 0; b < 256; ++b) {
    if (b > 0 && cut[static_cast<size_t>(b)]) ++cls;
    a.byte_class[static_cast<size_t>(b)] = static_cast<uint8_t>(cls);
  }
  a.num_classes = cls + 1;
}

class SubsetConstruction {
 public:
  SubsetConstruction(const Nfa& nfa, Automaton& a, const BuildLimits& limits)
      : nfa_(nfa), a_(a), limits_(limits), stamp_(nfa.states.size(), 0) {}

  void run() {
    buckets_.resize(static_cast<size_t>(a_.num_classes));
    for (size_t r = 0; r < nfa_.entry.size(); ++r) {
      rule_final_ = nfa_.final[r];
      a_.rule_start.push_back(state_for({nfa_.entry[r]}));
      a_.rule_names.push_back(nfa_.names[r]);
      while (!pending_.empty()) {
        const int32_t d = pending_.back();
        pending_.pop_back();
        expand(d);
      }
    }
  }

  // Per state: the NFA set it stands for is dropped once expanded; the calls are kept here
  // until every state exists, then flattened.
  std::vector<std::vector<CallEdge>> calls;

 private:
  // The DFA state for the epsilon-closure of `seeds`.
  int32_t state_for(std::vector<int32_t> seeds) {
    std::vector<int32_t> set = closure(std::move(seeds));
    if (const auto it = ids_.find(set); it != ids_.end()) return it->second;
    if (a_.flags.size() >= limits_.max_states)
      throw GrammarError("grammar too large: more than " + std::to_string(limits_.max_states) +
                         " automaton states");
    const auto id = static_cast<int32_t>(a_.flags.size());
    const bool accepting = std::binary_search(set.begin(), set.end(), rule_final_);
    a_.flags.push_back(accepting ? Automaton::kAccepting : 0);
    a_.next.resize(a_.next.size() + static_cast<size_t>(a_.num_classes), -1);
    calls.emplace_back();
    sets_.push_back(set);
    ids_.emplace(std::move(set), id);
    pending_.push_back(id);
    return id;
  }

  void charge(size_t steps) {
    work_ += steps;
    if (work_ > limits_.max_work)
      throw GrammarError("grammar too complex: determinizing it exceeds the work limit");
  }

  std::vector<int32_t> closure(std::vector<int32_t> work) {
    ++generation_;
    std::vector<int32_t> out;
    while (!work.empty()) {
      charge(1);
      const int32_t s = work.back();
      work.pop_back();
      if (stamp_[static_cast<size_t>(s)] == generation_) continue;
      stamp_[static_cast<size_t>(s)] = generation_;
      out.push_back(s);
      for (int32_t t : nfa_.states[static_cast<size_t>(s)].epsilon) work.push_back(t);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  void expand(int32_t d) {
    const std::vector<int32_t> set = std::move(sets_[static_cast<size_t>(d)]);
    std::vector<int32_t> touched;
    std::map<int32_t, std::vector<int32_t>> call_targets;
    for (int32_t s : set) {
      const NfaState& state = nfa_.states[static_cast<size_t>(s)];
      charge(1 + state.bytes.size() + state.calls.size());
      for (const NfaByteEdge& e : state.bytes) {
        for (int c = a_.byte_class[e.lo]; c <= a_.byte_class[e.hi]; ++c) {
          if (buckets_[static_cast<size_t>(c)].empty()) touched.push_back(c);
          buckets_[static_cast<size_t>(c)].push_back(e.target);
        }
      }
      for (const NfaCall& call : state.calls) call_targets[call.rule].push_back(call.target);
    }
    std::sort(touched.begin(), touched.end());
    int32_t previous_class = -2, previous_target = -1;
    for (int32_t c : touched) {
      auto& bucket = buckets_[static_cast<size_t>(c)];
      std::sort(bucket.begin(), bucket.end());
      bucket.erase(std::unique(bucket.begin(), bucket.end()), bucket.end());
      int32_t target = previous_target;
      if (previous_class != c - 1 || bucket != buckets_[static_cast<size_t>(c - 1)])
        target = state_for(bucket);
      a_.next[static_cast<size_t>(d) * static_cast<size_t>(a_.num_classes) +
              static_cast<size_t>(c)] = target;
      a_.flags[static_cast<size_t>(d)] |= Automaton::kReadsBytes;
      previous_class = c;
      previous_target = target;
    }
    for (int32_t c : touched) buckets_[static_cast<size_t>(c)].clear();
    for (auto& [rule, targets] : call_targets) {
      const int32_t target = state_for(std::move(targets));
      calls[static_cast<size_t>(d)].push_back({rule, target});
      a_.flags[static_cast<size_t>(d)] |= Automaton::kCalls;
    }
  }

  const Nfa& nfa_;
  Automaton& a_;
  const BuildLimits& limits_;
  std::vector<uint32_t> stamp_;
  uint32_t generation_ = 0;
  size_t work_ = 0;
  int32_t rule_final_ = -1;
  std::unordered_map<std::vector<int32_t>, int32_t, VectorHash> ids_;
  std::vector<std::vector<int32_t>> sets_;
  std::vector<int32_t> pending_;
  std::vector<std::vector<int32_t>> buckets_;
};

}  // namespace

Automaton determinize(const Nfa& nfa, const BuildLimits& limits) {
  Automaton a;
  compute_byte_classes(nfa, a);
  SubsetConstruction construction(nfa, a, limits);
  construction.run();
  a.call_begin.push_back(0);
  for (const auto& calls : construction.calls) {
    a.calls.insert(a.calls.end(), calls.begin(), calls.end());
    a.call_begin.push_back(static_cast<uint32_t>(a.calls.size()));
  }
  return a;
}

}  // namespace tandem::grammar
