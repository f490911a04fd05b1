// BoundArgs: Python's binding of positional and keyword arguments to parameters.
#include <string>

#include "protocol/jinja/builtins.h"
#include "protocol/jinja/error.h"

namespace tandem::jinja {

BoundArgs::BoundArgs(std::string_view function, const CallArgs& args,
                     std::initializer_list<std::string_view> params, size_t required)
    : values_(params.size()), given_(params.size(), false) {
  const std::vector<std::string_view> names(params);
  const std::string fn(function);
  if (args.positional.size() > names.size()) {
    fail(fn + "() takes at most " + std::to_string(names.size()) + " argument(s) (" +
         std::to_string(args.positional.size()) + " given)");
  }
  for (size_t i = 0; i < args.positional.size(); ++i) {
    values_[i] = args.positional[i];
    given_[i] = true;
  }
  for (const auto& [name, value] : args.named) {
    size_t i = 0;
    while (i < names.size() && names[i] != name) ++i;
    if (i == names.size()) fail(fn + "() got an unexpected keyword argument '" + name + "'");
    if (given_[i]) fail(fn + "() got multiple values for argument '" + name + "'");
    values_[i] = value;
    given_[i] = true;
  }
  for (size_t i = 0; i < required; ++i) {
    if (!given_[i]) fail(fn + "() missing required argument '" + std::string(names[i]) + "'");
  }
}

CallArgs rest_of(const CallArgs& args, size_t skip) {
  CallArgs rest;
  for (size_t i = skip; i < args.positional.size(); ++i)
    rest.positional.push_back(args.positional[i]);
  rest.named = args.named;
  return rest;
}

}  // namespace tandem::jinja
