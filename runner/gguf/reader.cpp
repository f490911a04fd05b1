// The GGUF reader: parses and validates a whole file (header, metadata, tensor infos,
// alignment, bounds) before handing it out, so later readers can trust every field.
// Every count and length is checked against the bytes left before anything is
// reserved, so hostile input costs at most a small multiple of its own size.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

#include "runner/gguf/gguf.h"

namespace tandem::gguf {

namespace {

constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;
constexpr int kMaxArrayDepth = 8;

// The fewest bytes one element of an array of this type can take in the file.
uint64_t min_encoded_size(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
    case ValueType::kString:
      return 8;
    case ValueType::kArray:
      return 12;
  }
  return 1;
}

}  // namespace

// Keeps a message on one line and readable when a name holds raw bytes.
std::string printable(std::string_view text, size_t max_chars) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max_chars; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

namespace {

std::string in_quotes(std::string_view text) {
  std::string out = printable(text);
  out.insert(out.begin(), '\'');
  out.push_back('\'');
  return out;
}

}  // namespace

struct File::Mapping {
  void* address = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (address != nullptr) ::munmap(address, size);
  }
};

class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, std::string name)
      : bytes_(bytes), name_(std::move(name)) {}

  void parse_into(File& file) {
    file.name_ = name_;
    parse_header(file);
    parse_metadata(file);
    parse_tensor_infos(file);
    place_tensors(file);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw GgufError(name_ + ": " + message);
  }

  uint64_t remaining() const { return bytes_.size() - pos_; }

  void need(uint64_t n) const {
    if (n > remaining()) {
      fail("truncated in " + context_ + " (needs " + std::to_string(n) + " bytes at offset " +
           std::to_string(pos_) + ", file is " + std::to_string(bytes_.size()) + " bytes)");
    }
  }

  template <typename T>
  T read() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  std::string read_string() {
    const auto length = read<uint64_t>();
    if (length > remaining()) {
      fail("truncated in " + context_ + ": string length " + std::to_string(length) +
           " runs past the end of the file (" + std::to_string(remaining()) + " bytes left)");
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
    pos_ += length;
    return s;
  }

  ValueType read_value_type() {
    const auto id = read<uint32_t>();
    if (id > uint32_t(ValueType::kFloat64))
      fail("unknown value type " + std::to_string(id) + " in " + context_);
    return static_cast<ValueType>(id);
  }

  Value read_value(ValueType type, int depth) {
    Value v;
    v.type = type;
    switch (type) {
      case ValueType::kUint8:
        v.data = uint64_t{read<uint8_t>()};
        break;
      case ValueType::kInt8:
        v.data = int64_t{read<int8_t>()};
        break;
      case ValueType::kUint16:
        v.data = uint64_t{read<uint16_t>()};
        break;
      case ValueType::kInt16:
        v.data = int64_t{read<int16_t>()};
        break;
      case ValueType::kUint32:
        v.data = uint64_t{read<uint32_t>()};
        break;
      case ValueType::kInt32:
        v.data = int64_t{read<int32_t>()};
        break;
      case ValueType::kUint64:
        v.data = read<uint64_t>();
        break;
      case ValueType::kInt64:
        v.data = read<int64_t>();
        break;
      case ValueType::kFloat32:
        v.data = double{read<float>()};
        break;
      case ValueType::kFloat64:
        v.data = read<double>();
        break;
      case ValueType::kBool: {
        const auto b = read<uint8_t>();
        if (b > 1) fail("bool value " + std::to_string(b) + " in " + context_ + " is not 0 or 1");
        v.data = b == 1;
        break;
      }
      case ValueType::kString:
        v.data = read_string();
        break;
      case ValueType::kArray:
        v.data = read_array(depth + 1);
        break;
    }
    return v;
  }

  Array read_array(int depth) {
    if (depth > kMaxArrayDepth)
      fail("arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " in " + context_);
    Array array;
    array.element_type = read_value_type();
    const auto count = read<uint64_t>();
    if (count > remaining() / min_encoded_size(array.element_type)) {
      fail("truncated in " + context_ + ": array length " + std::to_string(count) + " of " +
           type_name(array.element_type) + " runs past the end of the file (" +
           std::to_string(remaining()) + " bytes left)");
    }
    array.items.reserve(count);
    for (uint64_t i = 0; i < count; ++i)
      array.items.push_back(read_value(array.element_type, depth));
    return array;
  }

  void check_count(const char* what, uint64_t count, uint64_t min_bytes_each) const {
    if (count > remaining() / min_bytes_each) {
      fail("truncated in " + context_ + ": " + what + " " + std::to_string(count) +
           " is more than the file can hold (" + std::to_string(remaining()) + " bytes left)");
    }
  }

  void parse_header(File& file) {
    if (bytes_.empty()) fail("empty file (0 bytes): not a GGUF file");
    context_ = "header";
    const size_t magic_size = std::min<size_t>(4, bytes_.size());
    if (std::memcmp(bytes_.data(), "GGUF", magic_size) != 0) {
      std::string_view magic(reinterpret_cast<const char*>(bytes_.data()), magic_size);
      fail("bad magic \"" + printable(magic) + "\" (expected \"GGUF\"): not a GGUF file");
    }
    need(4);
    pos_ = 4;
    const auto version = read<uint32_t>();
    if (version != 2 && version != 3) {
      std::string hint = version != 0 && (version & 0xffffu) == 0 ? " (a big-endian file?)" : "";
      fail("unsupported GGUF version " + std::to_string(version) + hint +
           "; tandem reads versions 2 and 3");
    }
    file.version_ = version;
    tensor_count_ = read<uint64_t>();
    metadata_count_ = read<uint64_t>();
    // A tensor info takes at least 24 bytes (name length, n_dims, type, offset) and a
    // metadata entry at least 13 (key length, value type, one byte of value).
    check_count("tensor count", tensor_count_, 24);
    check_count("metadata count", metadata_count_, 13);
  }

  void parse_metadata(File& file) {
    file.metadata_.reserve(metadata_count_);
    for (uint64_t i = 0; i < metadata_count_; ++i) {
      context_ = "metadata entry #" + std::to_string(i) + " key";
      std::string key = read_string();
      context_ = "metadata key " + in_quotes(key);
      const ValueType type = read_value_type();
      Value value = read_value(type, 0);
      if (!file.metadata_index_.emplace(key, file.metadata_.size()).second)
        fail("duplicate metadata key " + in_quotes(key));
      file.metadata_.emplace_back(std::move(key), std::move(value));
    }
  }

  void parse_tensor_infos(File& file) {
    context_ = "tensor infos";
    check_count("tensor count", tensor_count_, 24);
    file.tensors_.reserve(tensor_count_);
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      context_ = "tensor info #" + std::to_string(i) + " name";
      TensorInfo info;
      info.name = read_string();
      const std::string what = "tensor " + in_quotes(info.name);
      context_ = what;
      const auto n_dims = read<uint32_t>();
      if (n_dims > kMaxDims) {
        fail(what + " has " + std::to_string(n_dims) + " dimensions (at most " +
             std::to_string(kMaxDims) + ")");
      }
      info.dims.resize(n_dims);
      uint64_t n_elements = 1;
      bool overflow = false;
      bool empty = false;
      for (auto& dim : info.dims) {
        dim = read<uint64_t>();
        if (dim == 0)
          empty = true;
        else if (n_elements > uint64_t(std::numeric_limits<int64_t>::max()) / dim)
          overflow = true;
        else
          n_elements *= dim;
      }
      // No model has an empty weight, and every consumer divides by a dimension (rows =
      // elements / row length): refused here, no command has to guard it.
      if (empty) fail(what + " dims " + dims_text(info.dims) + " have a zero dimension");
      if (overflow) fail(what + " dims " + dims_text(info.dims) + " overflow the element count");
      info.n_elements = n_elements;
      const auto type_id = read<uint32_t>();
      if (!is_supported_type(type_id)) {
        if (const char* ggml_name = ggml_type_name(type_id))
          fail(what + " has unsupported type " + ggml_name);
        fail(what + " has unknown type id " + std::to_string(type_id));
      }
      info.type = static_cast<TensorType>(type_id);
      // A quantized row is a whole number of blocks: ggml never splits a block across rows.
      const auto block = static_cast<uint64_t>(block_elements(info.type));
      if (n_elements % block != 0) {
        fail(what + " dims " + dims_text(info.dims) + " hold " + std::to_string(n_elements) +
             " elements, not a multiple of the " + type_name(info.type) + " block size " +
             std::to_string(block));
      }
      if (!info.dims.empty() && info.dims[0] % block != 0) {
        fail(what + " row length " + std::to_string(info.dims[0]) + " is not a multiple of the " +
             type_name(info.type) + " block size " + std::to_string(block));
      }
      try {
        info.n_bytes = tensor_bytes(info.type, n_elements);
      } catch (const GgufError& e) {
        fail(what + ": " + e.what());
      }
      info.offset = read<uint64_t>();
      if (!file.tensor_index_.emplace(info.name, file.tensors_.size()).second)
        fail("duplicate tensor name " + in_quotes(info.name));
      file.tensors_.push_back(std::move(info));
    }
  }

  void place_tensors(File& file) {
    uint64_t alignment = kDefaultAlignment;
    if (const Value* v = file.find("general.alignment")) {
      int64_t value = 0;
      try {
        value = v->to_int("general.alignment");
      } catch (const GgufError& e) {
        fail(e.what());
      }
      if (value <= 0 || (value & (value - 1)) != 0)
        fail("general.alignment " + std::to_string(value) + " is not a nonzero power of two");
      alignment = static_cast<uint64_t>(value);
    }
    file.alignment_ = alignment;
    // pos_ <= file size < 2^63 and alignment <= 2^62, so this cannot wrap.
    const uint64_t data_start = (pos_ + alignment - 1) / alignment * alignment;
    file.data_offset_ = std::min<uint64_t>(data_start, bytes_.size());
    const uint64_t data_size = data_start < bytes_.size() ? bytes_.size() - data_start : 0;
    for (auto& info : file.tensors_) {
      const std::string what = "tensor " + in_quotes(info.name);
      if (info.offset % alignment != 0) {
        fail(what + " offset " + std::to_string(info.offset) + " is misaligned (alignment " +
             std::to_string(alignment) + ")");
      }
      if (info.offset > data_size || info.n_bytes > data_size - info.offset) {
        fail(what + " data (" + std::to_string(info.n_bytes) + " bytes at offset " +
             std::to_string(info.offset) + ") is out of bounds: the data section holds " +
             std::to_string(data_size) + " bytes");
      }
      info.data = bytes_.data() + data_start + info.offset;
    }
    refuse_overlaps(file);
  }

  // Two tensors sharing bytes would alias each other's weights: no writer makes such a
  // file (ggml's requires each tensor to start where the one before it ends, padded), so it
  // is damaged or crafted, and refused as llama.cpp refuses it.
  void refuse_overlaps(const File& file) {
    std::vector<const TensorInfo*> by_offset;
    by_offset.reserve(file.tensors_.size());
    for (const auto& info : file.tensors_) by_offset.push_back(&info);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const TensorInfo& before = *by_offset[i - 1];
      const TensorInfo& at = *by_offset[i];
      if (at.offset < before.offset + before.n_bytes) {
        fail("tensor " + in_quotes(at.name) + " data (offset " + std::to_string(at.offset) +
             ") overlaps tensor " + in_quotes(before.name) + "'s (" +
             std::to_string(before.n_bytes) + " bytes at offset " + std::to_string(before.offset) +
             ")");
      }
    }
  }

  static std::string dims_text(const std::vector<uint64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
  }

  std::span<const uint8_t> bytes_;
  std::string name_;
  uint64_t pos_ = 0;
  std::string context_ = "header";
  uint64_t tensor_count_ = 0;
  uint64_t metadata_count_ = 0;
};

File File::open(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever,
  // before fstat could refuse it. It changes nothing for a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw GgufError(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw GgufError(path.string() + ": not a regular file" +
                    (S_ISDIR(st.st_mode)    ? " (a directory)"
                     : S_ISFIFO(st.st_mode) ? " (a FIFO)"
                                            : ""));
  }
  auto mapping = std::make_unique<Mapping>();
  mapping->size = static_cast<size_t>(st.st_size);
  if (mapping->size > 0) {
    void* address = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw GgufError(path.string() + ": cannot map: " + std::strerror(err));
    }
    mapping->address = address;
  }
  ::close(fd);
  File file;
  Parser parser({static_cast<const uint8_t*>(mapping->address), mapping->size}, name);
  parser.parse_into(file);
  file.mapping_ = std::move(mapping);
  return file;
}

File File::parse(std::span<const uint8_t> bytes, std::string_view name) {
  File file;
  Parser(bytes, std::string(name)).parse_into(file);
  return file;
}

File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

const Value* File::find(std::string_view key) const {
  auto it = metadata_index_.find(std::string(key));
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

std::string key_what(const std::string& file, std::string_view key) {
  return file + ": metadata key '" + std::string(key) + "'";
}

const Value& require(const File& file, std::string_view key) {
  const Value* v = file.find(key);
  if (v == nullptr) throw GgufError(key_what(file.name(), key) + " is missing");
  return *v;
}

bool is_string_type(ValueType t) { return t == ValueType::kString; }
bool is_integer_type(ValueType t) { return Value{t, {}}.is_integer(); }
bool is_number_type(ValueType t) { return Value{t, {}}.is_integer() || Value{t, {}}.is_float(); }

const Array& typed_array(const File& file, std::string_view key, bool (*accepts)(ValueType),
                         const char* expected) {
  const std::string what = key_what(file.name(), key);
  const Array& array = require(file, key).to_array(what);
  if (!accepts(array.element_type)) {
    throw GgufError(what + " is an array of " + type_name(array.element_type) +
                    ", expected an array of " + expected);
  }
  return array;
}

}  // namespace

std::string File::get_string(std::string_view key) const {
  return require(*this, key).to_string(key_what(name_, key));
}

int64_t File::get_int(std::string_view key) const {
  return require(*this, key).to_int(key_what(name_, key));
}

double File::get_float(std::string_view key) const {
  return require(*this, key).to_float(key_what(name_, key));
}

std::string File::get_string_or(std::string_view key, std::string fallback) const {
  const Value* v = find(key);
  return v ? v->to_string(key_what(name_, key)) : std::move(fallback);
}

int64_t File::get_int_or(std::string_view key, int64_t fallback) const {
  const Value* v = find(key);
  return v ? v->to_int(key_what(name_, key)) : fallback;
}

double File::get_float_or(std::string_view key, double fallback) const {
  const Value* v = find(key);
  return v ? v->to_float(key_what(name_, key)) : fallback;
}

bool File::get_bool_or(std::string_view key, bool fallback) const {
  const Value* v = find(key);
  return v ? v->to_bool(key_what(name_, key)) : fallback;
}

std::vector<std::string> File::get_string_array(std::string_view key) const {
  const Array& array = typed_array(*this, key, is_string_type, "string");
  std::vector<std::string> out;
  out.reserve(array.items.size());
  for (const auto& item : array.items) out.push_back(std::get<std::string>(item.data));
  return out;
}

std::vector<float> File::get_float_array(std::string_view key) const {
  const Array& array = typed_array(*this, key, is_number_type, "numbers");
  const std::string what = key_what(name_, key);
  std::vector<float> out;
  out.reserve(array.items.size());
  for (const auto& item : array.items) out.push_back(static_cast<float>(item.to_float(what)));
  return out;
}

std::vector<int32_t> File::get_int_array(std::string_view key) const {
  const Array& array = typed_array(*this, key, is_integer_type, "integers");
  std::vector<int32_t> out;
  out.reserve(array.items.size());
  const std::string what = key_what(name_, key);
  for (size_t i = 0; i < array.items.size(); ++i) {
    const int64_t v = array.items[i].to_int(what);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      throw GgufError(what + "[" + std::to_string(i) + "] = " + std::to_string(v) +
                      " does not fit in int32");
    out.push_back(static_cast<int32_t>(v));
  }
  return out;
}

}  // namespace tandem::gguf
