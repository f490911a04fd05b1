// GGUF metadata values and type tables: names, sizes and checked conversions.
#include <iterator>
#include <limits>
#include <string>

#include "runner/gguf/gguf.h"

namespace tandem::gguf {

namespace {

struct TypeTraits {
  TensorType type;
  const char* name;
  int64_t block_elements;
  int64_t block_bytes;
};

constexpr TypeTraits kTypes[] = {
    {TensorType::kF32, "F32", 1, 4},         {TensorType::kF16, "F16", 1, 2},
    {TensorType::kQ4_0, "Q4_0", 32, 18},     {TensorType::kQ4_1, "Q4_1", 32, 20},
    {TensorType::kQ5_0, "Q5_0", 32, 22},     {TensorType::kQ5_1, "Q5_1", 32, 24},
    {TensorType::kQ8_0, "Q8_0", 32, 34},     {TensorType::kQ2_K, "Q2_K", 256, 84},
    {TensorType::kQ3_K, "Q3_K", 256, 110},   {TensorType::kQ4_K, "Q4_K", 256, 144},
    {TensorType::kQ5_K, "Q5_K", 256, 176},   {TensorType::kQ6_K, "Q6_K", 256, 210},
    {TensorType::kIQ4_NL, "IQ4_NL", 32, 18}, {TensorType::kIQ4_XS, "IQ4_XS", 256, 136},
    {TensorType::kBF16, "BF16", 1, 2},
};

const TypeTraits* find_traits(uint32_t id) {
  for (const TypeTraits& t : kTypes) {
    if (static_cast<uint32_t>(t.type) == id) return &t;
  }
  return nullptr;
}

const TypeTraits& traits(TensorType type) {
  const TypeTraits* t = find_traits(static_cast<uint32_t>(type));
  if (t == nullptr) throw GgufError("unknown tensor type " + std::to_string(int(type)));
  return *t;
}

}  // namespace

bool is_supported_type(uint32_t id) { return find_traits(id) != nullptr; }

const char* ggml_type_name(uint32_t id) {
  static constexpr const char* kNames[] = {
      "F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
      "Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
      "Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
      "IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
      "F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
      "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4"};
  return id < std::size(kNames) ? kNames[id] : nullptr;
}

const char* type_name(TensorType type) {
  const TypeTraits* t = find_traits(static_cast<uint32_t>(type));
  return t ? t->name : "unknown";
}

int64_t block_elements(TensorType type) { return traits(type).block_elements; }
int64_t block_bytes(TensorType type) { return traits(type).block_bytes; }

const char* type_name(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
      return "uint8";
    case ValueType::kInt8:
      return "int8";
    case ValueType::kUint16:
      return "uint16";
    case ValueType::kInt16:
      return "int16";
    case ValueType::kUint32:
      return "uint32";
    case ValueType::kInt32:
      return "int32";
    case ValueType::kFloat32:
      return "float32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kUint64:
      return "uint64";
    case ValueType::kInt64:
      return "int64";
    case ValueType::kFloat64:
      return "float64";
  }
  return "unknown";
}

uint64_t tensor_bytes(TensorType type, uint64_t n_elements) {
  const auto block = static_cast<uint64_t>(block_elements(type));
  const auto block_bytes = static_cast<uint64_t>(gguf::block_bytes(type));
  if (n_elements % block != 0) {
    throw GgufError(std::to_string(n_elements) + " elements of " + type_name(type) +
                    " are not a whole number of " + std::to_string(block) + "-element blocks");
  }
  const uint64_t blocks = n_elements / block;
  if (blocks > std::numeric_limits<uint64_t>::max() / block_bytes) {
    throw GgufError(std::to_string(n_elements) + " elements of " + type_name(type) +
                    " overflow a 64-bit byte count");
  }
  return blocks * block_bytes;
}

namespace {

[[noreturn]] void mismatch(std::string_view what, ValueType actual, const char* expected) {
  throw GgufError(std::string(what) + " is " + type_name(actual) + ", expected " + expected);
}

}  // namespace

bool Value::is_integer() const {
  switch (type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kUint16:
    case ValueType::kInt16:
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kUint64:
    case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

bool Value::is_float() const { return type == ValueType::kFloat32 || type == ValueType::kFloat64; }

int64_t Value::to_int(std::string_view what) const {
  if (!is_integer()) mismatch(what, type, "an integer");
  if (const auto* u = std::get_if<uint64_t>(&data)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw GgufError(std::string(what) + " = " + std::to_string(*u) + " overflows int64");
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&data)) return *i;
  mismatch(what, type, "an integer");
}

double Value::to_float(std::string_view what) const {
  if (is_float()) {
    if (const auto* d = std::get_if<double>(&data)) return *d;
  } else if (is_integer()) {
    if (const auto* u = std::get_if<uint64_t>(&data)) return static_cast<double>(*u);
    if (const auto* i = std::get_if<int64_t>(&data)) return static_cast<double>(*i);
  }
  mismatch(what, type, "a number");
}

bool Value::to_bool(std::string_view what) const {
  if (type == ValueType::kBool) {
    if (const auto* b = std::get_if<bool>(&data)) return *b;
  }
  mismatch(what, type, "a bool");
}

const std::string& Value::to_string(std::string_view what) const {
  if (type == ValueType::kString) {
    if (const auto* s = std::get_if<std::string>(&data)) return *s;
  }
  mismatch(what, type, "a string");
}

const Array& Value::to_array(std::string_view what) const {
  if (type == ValueType::kArray) {
    if (const auto* a = std::get_if<Array>(&data)) return *a;
  }
  mismatch(what, type, "an array");
}

}  // namespace tandem::gguf
