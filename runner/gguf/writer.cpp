// The GGUF writer: serializes metadata in the order added, then tensor infos, then
// tensor data, each tensor aligned to the file's alignment (general.alignment or 32).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>

#include <unistd.h>

#include "runner/gguf/gguf.h"

namespace tandem::gguf {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint32_t kVersion = 3;
constexpr uint64_t kDefaultAlignment = 32;

// Appends little-endian encodings to a byte buffer (tandem only runs on little-endian hosts).
class Encoder {
 public:
  template <typename T>
  void put(T value) {
    put_raw(&value, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    put_raw(s.data(), s.size());
  }
  // resize + memcpy rather than insert: GCC 12 warns falsely (stringop-overflow) on the latter.
  void put_raw(const void* data, size_t n) {
    if (n == 0) return;
    const size_t at = bytes.size();
    bytes.resize(at + n);
    std::memcpy(bytes.data() + at, data, n);
  }
  void put_value(const Value& v) {
    switch (v.type) {
      case ValueType::kUint8:
        put<uint8_t>(static_cast<uint8_t>(as_uint(v)));
        break;
      case ValueType::kInt8:
        put<int8_t>(static_cast<int8_t>(as_int(v)));
        break;
      case ValueType::kUint16:
        put<uint16_t>(static_cast<uint16_t>(as_uint(v)));
        break;
      case ValueType::kInt16:
        put<int16_t>(static_cast<int16_t>(as_int(v)));
        break;
      case ValueType::kUint32:
        put<uint32_t>(static_cast<uint32_t>(as_uint(v)));
        break;
      case ValueType::kInt32:
        put<int32_t>(static_cast<int32_t>(as_int(v)));
        break;
      case ValueType::kUint64:
        put<uint64_t>(as_uint(v));
        break;
      case ValueType::kInt64:
        put<int64_t>(as_int(v));
        break;
      case ValueType::kFloat32:
        put<float>(static_cast<float>(v.to_float("value")));
        break;
      case ValueType::kFloat64:
        put<double>(v.to_float("value"));
        break;
      case ValueType::kBool:
        put<uint8_t>(v.to_bool("value") ? 1 : 0);
        break;
      case ValueType::kString:
        put_string(v.to_string("value"));
        break;
      case ValueType::kArray: {
        const Array& array = v.to_array("value");
        put<uint32_t>(static_cast<uint32_t>(array.element_type));
        put<uint64_t>(array.items.size());
        for (const auto& item : array.items) {
          if (item.type != array.element_type) {
            throw GgufError(std::string("array of ") + type_name(array.element_type) + " holds a " +
                            type_name(item.type));
          }
          put_value(item);
        }
        break;
      }
    }
  }
  void pad_to(uint64_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
  }

  std::vector<uint8_t> bytes;

 private:
  // Integers of either signedness are accepted and written as two's complement, so a
  // value read from one file writes back bit-identically.
  static uint64_t as_uint(const Value& v) {
    if (const auto* u = std::get_if<uint64_t>(&v.data)) return *u;
    if (const auto* i = std::get_if<int64_t>(&v.data)) return static_cast<uint64_t>(*i);
    throw GgufError(std::string("a ") + type_name(v.type) + " value holds no integer");
  }
  static int64_t as_int(const Value& v) { return static_cast<int64_t>(as_uint(v)); }
};

uint64_t element_count(const std::vector<uint64_t>& dims) {
  uint64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

Value array_of(ValueType element_type, std::vector<Value> items) {
  return Value{ValueType::kArray, Array{element_type, std::move(items)}};
}

}  // namespace

void Writer::add(std::string key, Value value) {
  for (const auto& [existing, _] : metadata_) {
    if (existing == key) throw GgufError("duplicate metadata key '" + key + "'");
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

void Writer::add_string(std::string key, std::string value) {
  add(std::move(key), Value{ValueType::kString, std::move(value)});
}

void Writer::add_uint32(std::string key, uint32_t value) {
  add(std::move(key), Value{ValueType::kUint32, uint64_t{value}});
}

void Writer::add_int32(std::string key, int32_t value) {
  add(std::move(key), Value{ValueType::kInt32, int64_t{value}});
}

void Writer::add_float32(std::string key, float value) {
  add(std::move(key), Value{ValueType::kFloat32, double{value}});
}

void Writer::add_bool(std::string key, bool value) {
  add(std::move(key), Value{ValueType::kBool, value});
}

void Writer::add_string_array(std::string key, const std::vector<std::string>& values) {
  std::vector<Value> items;
  items.reserve(values.size());
  for (const auto& s : values) items.push_back(Value{ValueType::kString, s});
  add(std::move(key), array_of(ValueType::kString, std::move(items)));
}

void Writer::add_float32_array(std::string key, const std::vector<float>& values) {
  std::vector<Value> items;
  items.reserve(values.size());
  for (float f : values) items.push_back(Value{ValueType::kFloat32, double{f}});
  add(std::move(key), array_of(ValueType::kFloat32, std::move(items)));
}

void Writer::add_int32_array(std::string key, const std::vector<int32_t>& values) {
  std::vector<Value> items;
  items.reserve(values.size());
  for (int32_t i : values) items.push_back(Value{ValueType::kInt32, int64_t{i}});
  add(std::move(key), array_of(ValueType::kInt32, std::move(items)));
}

void Writer::add_tensor(std::string name, TensorType type, std::vector<uint64_t> dims,
                        std::span<const uint8_t> data) {
  const uint64_t expected = tensor_bytes(type, element_count(dims));
  if (data.size() != expected) {
    throw GgufError("tensor '" + name + "': " + std::to_string(data.size()) +
                    " bytes given, its dims and type need " + std::to_string(expected));
  }
  for (const auto& t : tensors_) {
    if (t.name == name) throw GgufError("duplicate tensor name '" + name + "'");
  }
  tensors_.push_back(
      {std::move(name), type, std::move(dims), {data.begin(), data.end()}, data.size(), {}});
}

void Writer::add_tensor(std::string name, TensorType type, std::vector<uint64_t> dims,
                        std::function<std::vector<uint8_t>()> produce) {
  if (!is_supported_type(static_cast<uint32_t>(type)))
    throw GgufError("tensor '" + name + "' has unsupported type " +
                    std::to_string(static_cast<uint32_t>(type)));
  const uint64_t n_bytes = tensor_bytes(type, element_count(dims));
  for (const auto& t : tensors_) {
    if (t.name == name) throw GgufError("duplicate tensor name '" + name + "'");
  }
  tensors_.push_back({std::move(name), type, std::move(dims), {}, n_bytes, std::move(produce)});
}

void Writer::write(const std::filesystem::path& path) const {
  uint64_t alignment = kDefaultAlignment;
  for (const auto& [key, value] : metadata_) {
    if (key == "general.alignment") alignment = static_cast<uint64_t>(value.to_int(key));
  }
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw GgufError("general.alignment " + std::to_string(alignment) + " is not a power of two");

  Encoder header;
  header.put<uint32_t>(kMagic);
  header.put<uint32_t>(kVersion);
  header.put<uint64_t>(tensors_.size());
  header.put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    header.put_string(key);
    header.put<uint32_t>(static_cast<uint32_t>(value.type));
    header.put_value(value);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    header.put_string(t.name);
    header.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (auto d : t.dims) header.put<uint64_t>(d);
    header.put<uint32_t>(static_cast<uint32_t>(t.type));
    header.put<uint64_t>(offset);
    offset += (t.n_bytes + alignment - 1) / alignment * alignment;
  }
  header.pad_to(alignment);

  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  // Written beside the target and renamed over it, so no reader ever sees half a file.
  const std::filesystem::path temp = path.string() + ".tmp-" + std::to_string(::getpid());
  std::unique_ptr<std::FILE, Closer> out(std::fopen(temp.c_str(), "wb"));
  auto io_error = [&](const char* doing) {
    const int err = errno;
    out.reset();
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    return std::runtime_error("cannot " + std::string(doing) + " " + path.string() + ": " +
                              std::strerror(err));
  };
  if (!out) throw io_error("create");
  auto write_bytes = [&](const void* data, size_t n) {
    if (n != 0 && std::fwrite(data, 1, n, out.get()) != n) throw io_error("write");
  };
  write_bytes(header.bytes.data(), header.bytes.size());
  static const uint8_t kZeros[256] = {};
  for (const auto& t : tensors_) {
    if (t.produce) {
      std::vector<uint8_t> made;
      try {
        made = t.produce();
        if (made.size() != t.n_bytes) {
          throw GgufError("tensor '" + t.name + "': " + std::to_string(made.size()) +
                          " bytes produced, its dims and type need " + std::to_string(t.n_bytes));
        }
      } catch (...) {  // no half-written file stays behind
        out.reset();
        std::error_code ignored;
        std::filesystem::remove(temp, ignored);
        throw;
      }
      write_bytes(made.data(), made.size());
    } else {
      write_bytes(t.data.data(), t.data.size());
    }
    uint64_t pad = (alignment - t.n_bytes % alignment) % alignment;
    while (pad > 0) {
      const size_t n = pad < sizeof(kZeros) ? pad : sizeof(kZeros);
      write_bytes(kZeros, n);
      pad -= n;
    }
  }
  if (std::fflush(out.get()) != 0) throw io_error("write");
  if (std::fclose(out.release()) != 0) throw io_error("close");
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    const std::string reason = ec.message();
    std::filesystem::remove(temp, ec);
    throw std::runtime_error("cannot write " + path.string() + ": " + reason);
  }
}

}  // namespace tandem::gguf
