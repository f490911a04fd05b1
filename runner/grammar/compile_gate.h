// Keeps grammar compiles off the threads that must stay quick. The server prepares every
// POST on a small pool; a new schema, regex or grammar may take seconds to compile, and a
// few of them would hold every thread while requests with nothing to compile waited. So the
// quick pool's threads hold a DeferCompiles: on them, a compile that a cache miss would
// start throws CompileDeferred instead, and the caller moves the request to the pool where
// compiles run. A grammar already cached is used on the spot.
#pragma once

namespace tandem::grammar {

// Not a std::exception: a handler that answers unexpected failures with a 500 must let
// it pass to the code that defers the request.
struct CompileDeferred {};

// While one is alive on this thread, compiles are deferred (nestable).
class DeferCompiles {
 public:
  DeferCompiles();
  ~DeferCompiles();
  DeferCompiles(const DeferCompiles&) = delete;
  DeferCompiles& operator=(const DeferCompiles&) = delete;
};

// Throws CompileDeferred where this thread defers compiles; called before a compile.
void throw_if_compiles_deferred();

}  // namespace tandem::grammar
