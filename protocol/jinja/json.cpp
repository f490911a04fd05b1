#include "protocol/jinja/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "protocol/jinja/error.h"
#include "protocol/jinja/operators.h"
#include "protocol/jinja/unicode.h"

namespace tandem::jinja {
namespace {

template <class Json>
Value convert(const Json& json, bool from_input) {
  switch (json.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return json.template get<bool>();
    case nlohmann::json::value_t::number_integer:
      return json.template get<int64_t>();
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = json.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) unsupported("integers beyond 64 bits");
      return static_cast<int64_t>(u);
    }
    case nlohmann::json::value_t::number_float:
      return json.template get<double>();
    case nlohmann::json::value_t::string:
      return Value::string(json.template get_ref<const std::string&>(), from_input);
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(convert(item, from_input));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      DictData dict;
      dict.entries.reserve(json.size());
      for (auto it = json.begin(); it != json.end(); ++it) {
        dict.entries.emplace_back(Value::string(it.key(), from_input),
                                  convert(it.value(), from_input));
      }
      return Value::dict(std::move(dict));
    }
    default:
      unsupported("binary JSON values");
  }
}

void append_json_string(Text& out, const Text& text, bool ensure_ascii) {
  out.append("\"", false);
  const std::string& s = text.str();
  std::string piece;
  char buf[16];
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    const char32_t cp = decode_utf8(s, pos);
    piece.clear();
    switch (cp) {
      case '"':
        piece = "\\\"";
        break;
      case '\\':
        piece = "\\\\";
        break;
      case '\n':
        piece = "\\n";
        break;
      case '\r':
        piece = "\\r";
        break;
      case '\t':
        piece = "\\t";
        break;
      case '\b':
        piece = "\\b";
        break;
      case '\f':
        piece = "\\f";
        break;
      default:
        if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
          if (cp >= 0x10000) {
            const char32_t v = cp - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x",
                          static_cast<unsigned>(0xD800 + (v >> 10)),
                          static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
          }
          piece = buf;
        } else {
          piece.assign(s, start, pos - start);
        }
    }
    out.append(piece, text.from_input_at(start));
  }
  out.append("\"", false);
}

class JsonWriter {
 public:
  JsonWriter(const JsonFormat& format, Text& out) : format_(format), out_(out) {
    item_separator_ = format.item_separator.value_or(format.indent ? "," : ", ");
  }

  void write(const Value& value, int level) {
    if (auto scalar = scalar_text(value, ScalarStyle::kJson)) {
      out_.append(*scalar, false);
    } else if (value.is_string()) {
      append_json_string(out_, value.text(), format_.ensure_ascii);
    } else if (value.is_dict()) {
      write_dict(value.dict(), level);
    } else if (value.is_list() &&
               (value.list().kind == ListKind::kList || value.list().kind == ListKind::kTuple)) {
      write_list(value.list().items, level);
    } else {
      fail("Object of type " + type_name(value) + " is not JSON serializable");
    }
  }

 private:
  void newline(int level) {
    if (!format_.indent) return;
    out_.append("\n", false);
    for (int i = 0; i < level; ++i) out_.append(*format_.indent, false);
  }

  void write_list(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out_.append("[]", false);
      return;
    }
    out_.append("[", false);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_.append(item_separator_, false);
      newline(level + 1);
      write(items[i], level + 1);
    }
    newline(level);
    out_.append("]", false);
  }

  // A dict key as json.dumps converts it.
  static Text key_text(const Value& key) {
    if (key.is_string()) return key.text();
    if (auto scalar = scalar_text(key, ScalarStyle::kJson)) return Text(std::move(*scalar));
    fail("keys must be str, int, float, bool or None, not " + type_name(key));
  }

  void write_dict(const DictData& dict, int level) {
    if (dict.entries.empty()) {
      out_.append("{}", false);
      return;
    }
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& entry : dict.entries) entries.push_back(&entry);
    if (format_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return less(a->first, b->first); });
    }
    out_.append("{", false);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out_.append(item_separator_, false);
      newline(level + 1);
      append_json_string(out_, key_text(entries[i]->first), format_.ensure_ascii);
      out_.append(format_.key_separator, false);
      write(entries[i]->second, level + 1);
    }
    newline(level);
    out_.append("}", false);
  }

  const JsonFormat& format_;
  Text& out_;
  std::string item_separator_;
};

}  // namespace

Value from_json(const nlohmann::ordered_json& json, bool from_input) {
  return convert(json, from_input);
}

Value from_json(const nlohmann::json& json, bool from_input) { return convert(json, from_input); }

Text to_json(const Value& value, const JsonFormat& format) {
  Text out;
  JsonWriter(format, out).write(value, 0);
  return out;
}

}  // namespace tandem::jinja
