// llama-server's `samplers`: the filters a request's chain applies, in its order, as names
// ("top_k", "top_p", "infill", ...) or llama.cpp's letters ("kpi"). Read for the native
// endpoints (native_request.h). Internal to protocol/: throws request_fields::RequestRejected
// like the other readers.
#pragma once

#include "protocol/request_fields.h"

namespace tandem::request_fields {

// Reads native's `samplers` (absent: nothing changes) against the sampling fields already
// set in completion, the /v1/completions body being built: a filter the chain leaves out is
// turned off there (temperature left out is 1, penalties left out are neutral), and the
// fields of filters this server lacks (dry, typ_p, xtc, top_n_sigma) are dropped when the
// chain leaves those out, since llama-server then ignores them too. The filters that act
// must come in an order this server applies them in (penalties, temperature, min_p and
// top_k, top_p, infill; top_k commutes with temperature and min_p), else a 400 names
// `samplers`. Returns whether the chain holds llama.cpp's infill filter.
bool apply_sampler_chain(const Json& native, Json& completion);

}  // namespace tandem::request_fields
