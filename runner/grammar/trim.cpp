// Trimming and the left-recursion check: what makes the matcher exact and its closures
// finite (the invariants listed in automaton.h).

#include <string>

#include "runner/grammar/determinize.h"

namespace tandem::grammar {

namespace {

size_t at(int32_t i) { return static_cast<size_t>(i); }

// States from which an accepting end of their rule can be reached, calls to rules that can
// end included: a backward fixpoint from the accepting states.
std::vector<char> live_states(const Automaton& a) {
  const int32_t n = a.num_states();
  std::vector<std::vector<int32_t>> byte_preds(at(n));
  std::vector<std::vector<std::pair<int32_t, int32_t>>> return_preds(at(n));  // (caller, rule)
  std::vector<std::vector<std::pair<int32_t, int32_t>>> callers(a.rule_start.size());
  std::vector<std::vector<int32_t>> starts_rules(at(n));
  for (int32_t s = 0; s < n; ++s) {
    for (int32_t c = 0; c < a.num_classes; ++c) {
      const int32_t t = a.next[at(s) * at(a.num_classes) + at(c)];
      if (t >= 0) byte_preds[at(t)].push_back(s);
    }
    for (const CallEdge& call : a.calls_of(s)) {
      return_preds[at(call.target)].emplace_back(s, call.rule);
      callers[at(call.rule)].emplace_back(s, call.target);
    }
  }
  for (size_t r = 0; r < a.rule_start.size(); ++r)
    starts_rules[at(a.rule_start[r])].push_back(static_cast<int32_t>(r));

  std::vector<char> live(at(n), 0);
  std::vector<int32_t> work;
  const auto mark = [&](int32_t s) {
    if (!live[at(s)]) {
      live[at(s)] = 1;
      work.push_back(s);
    }
  };
  for (int32_t s = 0; s < n; ++s)
    if (a.accepting(s)) mark(s);
  while (!work.empty()) {
    const int32_t x = work.back();
    work.pop_back();
    for (int32_t p : byte_preds[at(x)]) mark(p);
    for (auto [p, rule] : return_preds[at(x)])
      if (live[at(a.rule_start[at(rule)])]) mark(p);
    for (int32_t rule : starts_rules[at(x)])
      for (auto [p, target] : callers[at(rule)])
        if (live[at(target)]) mark(p);
  }
  return live;
}

bool call_is_live(const Automaton& a, const std::vector<char>& live, const CallEdge& call) {
  return live[at(a.rule_start[at(call.rule)])] && live[at(call.target)];
}

// Live states the root reaches, in order of discovery (so the root's start is state 0).
std::vector<int32_t> reachable_states(const Automaton& a, const std::vector<char>& live) {
  std::vector<char> seen(at(a.num_states()), 0);
  std::vector<int32_t> order;
  const auto visit = [&](int32_t s) {
    if (!seen[at(s)]) {
      seen[at(s)] = 1;
      order.push_back(s);
    }
  };
  visit(a.rule_start[at(a.root)]);
  for (size_t i = 0; i < order.size(); ++i) {
    const int32_t s = order[i];
    for (int32_t c = 0; c < a.num_classes; ++c) {
      const int32_t t = a.next[at(s) * at(a.num_classes) + at(c)];
      if (t >= 0 && live[at(t)]) visit(t);
    }
    for (const CallEdge& call : a.calls_of(s)) {
      if (!call_is_live(a, live, call)) continue;
      visit(a.rule_start[at(call.rule)]);
      visit(call.target);
    }
  }
  return order;
}

// Each state belongs to one rule: the one whose start reaches it through bytes and returns.
void label_rules(Automaton& a) {
  a.state_rule.assign(at(a.num_states()), -1);
  for (size_t r = 0; r < a.rule_start.size(); ++r) {
    std::vector<int32_t> work{a.rule_start[r]};
    while (!work.empty()) {
      const int32_t s = work.back();
      work.pop_back();
      if (a.state_rule[at(s)] >= 0) continue;
      a.state_rule[at(s)] = static_cast<int32_t>(r);
      for (int32_t c = 0; c < a.num_classes; ++c)
        if (const int32_t t = a.next[at(s) * at(a.num_classes) + at(c)]; t >= 0) work.push_back(t);
      for (const CallEdge& call : a.calls_of(s)) {
        work.push_back(call.target);
        a.root_is_called = a.root_is_called || call.rule == a.root;
      }
    }
  }
}

}  // namespace

Automaton trim(const Automaton& a) {
  const std::vector<char> live = live_states(a);
  if (!live[at(a.rule_start[at(a.root)])]) throw GrammarError("the grammar matches no string");
  const std::vector<int32_t> order = reachable_states(a, live);
  std::vector<int32_t> new_id(at(a.num_states()), -1);
  for (size_t i = 0; i < order.size(); ++i) new_id[at(order[i])] = static_cast<int32_t>(i);
  std::vector<int32_t> new_rule(a.rule_start.size(), -1);

  Automaton out;
  out.num_classes = a.num_classes;
  out.byte_class = a.byte_class;
  for (size_t r = 0; r < a.rule_start.size(); ++r) {
    if (new_id[at(a.rule_start[r])] < 0) continue;
    new_rule[r] = static_cast<int32_t>(out.rule_start.size());
    out.rule_start.push_back(new_id[at(a.rule_start[r])]);
    out.rule_names.push_back(a.rule_names[r]);
  }
  out.root = new_rule[at(a.root)];
  out.next.assign(order.size() * at(a.num_classes), -1);
  out.call_begin.push_back(0);
  for (size_t i = 0; i < order.size(); ++i) {
    const int32_t s = order[i];
    uint8_t flags = a.accepting(s) ? Automaton::kAccepting : 0;
    for (int32_t c = 0; c < a.num_classes; ++c) {
      const int32_t t = a.next[at(s) * at(a.num_classes) + at(c)];
      if (t < 0 || !live[at(t)]) continue;
      out.next[i * at(a.num_classes) + at(c)] = new_id[at(t)];
      flags |= Automaton::kReadsBytes;
    }
    for (const CallEdge& call : a.calls_of(s)) {
      if (!call_is_live(a, live, call)) continue;
      out.calls.push_back({new_rule[at(call.rule)], new_id[at(call.target)]});
      flags |= Automaton::kCalls;
    }
    out.call_begin.push_back(static_cast<uint32_t>(out.calls.size()));
    out.flags.push_back(flags);
  }
  label_rules(out);
  return out;
}

namespace {

// Rules that can end without reading a byte.
std::vector<char> nullable_rules(const Automaton& a) {
  std::vector<char> nullable_state(at(a.num_states()), 0);
  for (int32_t s = 0; s < a.num_states(); ++s) nullable_state[at(s)] = a.accepting(s);
  std::vector<char> nullable(a.rule_start.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < nullable.size(); ++r) nullable[r] = nullable_state[at(a.rule_start[r])];
    for (int32_t s = 0; s < a.num_states(); ++s) {
      if (nullable_state[at(s)]) continue;
      for (const CallEdge& call : a.calls_of(s)) {
        if (nullable[at(call.rule)] && nullable_state[at(call.target)]) {
          nullable_state[at(s)] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

// For each rule, the rules it can call before reading a byte.
std::vector<std::vector<int32_t>> left_calls(const Automaton& a) {
  const std::vector<char> nullable = nullable_rules(a);
  std::vector<std::vector<int32_t>> graph(a.rule_start.size());
  std::vector<uint32_t> stamp(at(a.num_states()), 0);
  for (size_t r = 0; r < graph.size(); ++r) {
    std::vector<int32_t> work{a.rule_start[r]};
    const auto generation = static_cast<uint32_t>(r + 1);
    while (!work.empty()) {
      const int32_t s = work.back();
      work.pop_back();
      if (stamp[at(s)] == generation) continue;
      stamp[at(s)] = generation;
      for (const CallEdge& call : a.calls_of(s)) {
        graph[r].push_back(call.rule);
        if (nullable[at(call.rule)]) work.push_back(call.target);
      }
    }
  }
  return graph;
}

}  // namespace

void check_left_recursion(const Automaton& a) {
  const auto graph = left_calls(a);
  enum : char { kNew, kOnStack, kDone };
  std::vector<char> color(graph.size(), kNew);
  for (size_t start = 0; start < graph.size(); ++start) {
    if (color[start] != kNew) continue;
    std::vector<std::pair<int32_t, size_t>> stack{{static_cast<int32_t>(start), 0}};
    color[start] = kOnStack;
    while (!stack.empty()) {
      auto& [rule, next] = stack.back();
      if (next == graph[at(rule)].size()) {
        color[at(rule)] = kDone;
        stack.pop_back();
        continue;
      }
      const int32_t callee = graph[at(rule)][next++];
      if (color[at(callee)] == kOnStack) {
        std::string cycle;
        bool in_cycle = false;
        for (const auto& frame : stack) {
          in_cycle = in_cycle || frame.first == callee;
          if (in_cycle) cycle += a.rule_names[at(frame.first)] + " -> ";
        }
        throw GrammarError("left recursion: " + cycle + a.rule_names[at(callee)] +
                           " (a rule reaches itself before reading a character)");
      }
      if (color[at(callee)] == kNew) {
        color[at(callee)] = kOnStack;
        stack.emplace_back(callee, 0);
      }
    }
  }
}

}  // namespace tandem::grammar
