// Attribute and item access as Jinja2's sandboxed environment does it: `obj.name` tries
// the attribute (a method) before the item, `obj[key]` the item before the attribute; what
// neither finds is undefined with Jinja2's hint; anything on undefined is an error.
#pragma once

#include <string>

#include "protocol/jinja/value.h"

namespace tandem::jinja {

Value get_attr(const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& key);
// object[start:stop:step]; none for a part that was left out.
Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step);

}  // namespace tandem::jinja
