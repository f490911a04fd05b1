// GGUF v3 files: a reader over mmap and a writer.
// The reader validates everything it touches (header, metadata, tensor infos,
// alignment, bounds) and reports a bad file as a one-line GgufError naming what is
// wrong; it never crashes on hostile input (it is fuzzed). A File is immutable after
// open and safe to read from many threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace tandem::gguf {

struct GgufError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// The tensor types tandem supports (ggml's numbering; layouts in runner/gguf/quant.h).
// Others are rejected by name.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
};

// Whether ggml type id `id` is one of the TensorType values above.
bool is_supported_type(uint32_t id);
// ggml's name for a type id ("Q4_K", "IQ2_XXS", ...), supported or not; null when unknown.
const char* ggml_type_name(uint32_t id);
// Text as a message can show it: on one line, bytes outside printable ASCII (an embedded
// NUL would end the message when printed as a C string) as \xNN, cut at max_chars.
std::string printable(std::string_view text, size_t max_chars = 64);

const char* type_name(TensorType type);
const char* type_name(ValueType type);
// Elements per block (1 for F32/F16/BF16, 32 or 256 for quantized types) and its bytes.
int64_t block_elements(TensorType type);
int64_t block_bytes(TensorType type);
// Bytes taken by n elements of `type`; throws GgufError if n is not a whole number of blocks.
uint64_t tensor_bytes(TensorType type, uint64_t n_elements);

// Q8_0: blocks of 32 weights, each an F16 scale then 32 int8 values (34 bytes).
inline constexpr int kQ8_0BlockSize = 32;
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQ8_0BlockSize];
};
static_assert(sizeof(BlockQ8_0) == 34);

// A metadata value. Arrays hold elements of one type (possibly nested arrays).
struct Value;
struct Array {
  ValueType element_type = ValueType::kUint8;
  std::vector<Value> items;
};
struct Value {
  ValueType type = ValueType::kUint8;
  // Integers of every width are held as int64 or uint64 (per signedness),
  // float32/float64 as double.
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> data;

  bool is_integer() const;
  bool is_float() const;
  // Checked conversions; throw GgufError naming `what` on a type mismatch or overflow.
  int64_t to_int(std::string_view what) const;
  double to_float(std::string_view what) const;  // also accepts integers
  bool to_bool(std::string_view what) const;
  const std::string& to_string(std::string_view what) const;
  const Array& to_array(std::string_view what) const;
};

struct TensorInfo {
  std::string name;
  TensorType type = TensorType::kF32;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the innermost (contiguous) one
  uint64_t n_elements = 0;
  uint64_t offset = 0;            // from the start of the data section
  const uint8_t* data = nullptr;  // into the mapping
  uint64_t n_bytes = 0;
};

class File {
 public:
  // Maps and parses the file; throws GgufError ("model.gguf: bad magic ...").
  static File open(const std::filesystem::path& path);
  // Parses bytes the caller keeps alive (the fuzzers use this).
  static File parse(std::span<const uint8_t> bytes, std::string_view name = "<memory>");

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  // Where the data section begins: the header, the metadata and the tensor infos lie before.
  uint64_t data_offset() const { return data_offset_; }
  const std::string& name() const { return name_; }

  // Metadata, in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // Typed getters: throw GgufError naming the key when it is missing or mistyped.
  std::string get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;
  std::string get_string_or(std::string_view key, std::string fallback) const;
  int64_t get_int_or(std::string_view key, int64_t fallback) const;
  double get_float_or(std::string_view key, double fallback) const;
  bool get_bool_or(std::string_view key, bool fallback) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<float> get_float_array(std::string_view key) const;
  std::vector<int32_t> get_int_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

 private:
  File() = default;
  struct Mapping;
  std::unique_ptr<Mapping> mapping_;  // null for parse()
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::unordered_map<std::string, size_t> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
  friend class Parser;
};

// Writes a GGUF v3 file: metadata in the order added, then tensor infos and
// data aligned to `general.alignment` (32).
class Writer {
 public:
  void add(std::string key, Value value);
  void add_string(std::string key, std::string value);
  void add_uint32(std::string key, uint32_t value);
  void add_int32(std::string key, int32_t value);
  void add_float32(std::string key, float value);
  void add_bool(std::string key, bool value);
  void add_string_array(std::string key, const std::vector<std::string>& values);
  void add_float32_array(std::string key, const std::vector<float>& values);
  void add_int32_array(std::string key, const std::vector<int32_t>& values);
  // `data` holds tensor_bytes(type, product(dims)) bytes; it is copied.
  void add_tensor(std::string name, TensorType type, std::vector<uint64_t> dims,
                  std::span<const uint8_t> data);
  // A tensor whose bytes `produce` returns when write() reaches it, so a file is written
  // one tensor in memory at a time. It must return exactly tensor_bytes(type, product(dims))
  // bytes (else write() throws GgufError); each producer is called once per write().
  void add_tensor(std::string name, TensorType type, std::vector<uint64_t> dims,
                  std::function<std::vector<uint8_t>()> produce);
  // Throws std::runtime_error on an I/O failure.
  void write(const std::filesystem::path& path) const;

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> data;
    uint64_t n_bytes = 0;
    std::function<std::vector<uint8_t>()> produce;  // set: data is made at write time
  };
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace tandem::gguf
