// GGUF metadata values and type tables: names, sizes and checked conversions.
#include <limits>
#include <string>

#include "runner/gguf/gguf.h"

namespace tandem::gguf {

const char* type_name(TensorType type) {
  switch (type) {
    case TensorType::kF32:
      return "F32";
    case TensorType::kF16:
      return "F16";
    case TensorType::kQ8_0:
      return "Q8_0";
    case TensorType::kBF16:
      return "BF16";
  }
  return "unknown";
}

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
  uint64_t block = 1;
  uint64_t block_bytes = 0;
  switch (type) {
    case TensorType::kF32:
      block_bytes = 4;
      break;
    case TensorType::kF16:
    case TensorType::kBF16:
      block_bytes = 2;
      break;
    case TensorType::kQ8_0:
      block = kQ8_0BlockSize;
      block_bytes = sizeof(BlockQ8_0);
      break;
  }
  if (block_bytes == 0) throw GgufError("unknown tensor type " + std::to_string(int(type)));
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
