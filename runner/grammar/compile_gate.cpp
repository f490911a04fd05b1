#include "runner/grammar/compile_gate.h"

namespace tandem::grammar {
namespace {

thread_local int deferring = 0;

}  // namespace

DeferCompiles::DeferCompiles() { ++deferring; }
DeferCompiles::~DeferCompiles() { --deferring; }

void throw_if_compiles_deferred() {
  if (deferring > 0) throw CompileDeferred{};
}

}  // namespace tandem::grammar
