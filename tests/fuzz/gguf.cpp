// Fuzzes the GGUF reader (gguf::File::parse) with arbitrary bytes. A bad file must be a
// GgufError; a file that parses must keep gguf.h's promises: every value's tag matches its
// payload, lookups find what the listing holds, every tensor lies whole and aligned inside
// the input. Then the model config, the tokenizer and the model itself are built from it;
// they too may only throw GgufError, and what they accept must be self-consistent. Every
// tensor of a supported type is also dequantized, and a small 2-D one packed and
// multiplied, whatever its blocks hold (NaN or huge scales, any quant bits): the CPU's
// quantized kernels see the bytes a hostile file gives them.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "runner/gguf/gguf.h"
#include "runner/kernels/kernels.h"
#include "runner/model/config.h"
#include "runner/model/model.h"
#include "runner/tokenizer/tokenizer.h"
#include "runner/util/thread_pool.h"

namespace {

using tandem::gguf::GgufError;
using tandem::gguf::Value;
using tandem::gguf::ValueType;

void require(bool condition) {
  if (!condition) std::abort();
}

template <typename Read>
void try_read(Read read) {
  try {
    read();
  } catch (const GgufError&) {
  }
}

// Reads a value the way its type allows; only integer overflow may throw. (Each throw costs
// a stack unpoisoning under ASan, so mismatched reads are tried once per input, below.)
void visit(const Value& value, int depth) {
  require(depth < 64);
  switch (value.type) {
    case ValueType::kString:
      require(std::holds_alternative<std::string>(value.data));
      value.to_string("v");
      break;
    case ValueType::kArray:
      require(std::holds_alternative<tandem::gguf::Array>(value.data));
      for (const Value& item : value.to_array("v").items) {
        require(item.type == value.to_array("v").element_type);
        visit(item, depth + 1);
      }
      break;
    case ValueType::kBool:
      require(std::holds_alternative<bool>(value.data));
      value.to_bool("v");
      break;
    case ValueType::kFloat32:
    case ValueType::kFloat64:
      require(value.is_float() && !value.is_integer());
      value.to_float("v");
      break;
    default:
      require(value.is_integer() && !value.is_float());
      value.to_float("v");
      try_read([&] { value.to_int("v"); });
  }
}

// Every read of a value of the wrong type must be a GgufError.
void read_every_way(const Value& value) {
  try_read([&] { value.to_int("v"); });
  try_read([&] { value.to_float("v"); });
  try_read([&] { value.to_bool("v"); });
  try_read([&] { value.to_string("v"); });
  try_read([&] { value.to_array("v"); });
}

void check_file(const tandem::gguf::File& file, const uint8_t* data, size_t size) {
  require(file.version() == 2 || file.version() == 3);
  require(file.alignment() > 0);
  for (const auto& entry : file.metadata()) {
    const std::string& key = entry.first;  // a plain name: lambdas cannot capture bindings
    const Value& value = entry.second;
    require(file.find(key) != nullptr);
    visit(value, 0);
    if (&entry == &file.metadata().front()) {
      read_every_way(value);
      try_read([&] { file.get_string(key); });
      try_read([&] { file.get_int(key); });
      try_read([&] { file.get_float(key); });
      try_read([&] { file.get_bool_or(key, false); });
      try_read([&] { file.get_string_array(key); });
      try_read([&] { file.get_float_array(key); });
      try_read([&] { file.get_int_array(key); });
    } else if (value.type == ValueType::kString) {
      require(file.get_string(key) == value.to_string("v"));
    } else if (value.type == ValueType::kArray) {
      const ValueType element = value.to_array("v").element_type;
      if (element == ValueType::kString) file.get_string_array(key);
      if (element == ValueType::kFloat32) file.get_float_array(key);
      if (element == ValueType::kInt32) try_read([&] { file.get_int_array(key); });
    }
  }
  for (const auto& tensor : file.tensors()) {
    require(file.find_tensor(tensor.name) == &tensor);
    uint64_t n = 1;
    for (uint64_t d : tensor.dims) {
      require(d == 0 || n <= UINT64_MAX / d);
      n *= d;
    }
    require(n == tensor.n_elements);
    require(tensor.n_bytes == tandem::gguf::tensor_bytes(tensor.type, n));
    require(tensor.n_bytes == 0 || (tensor.data >= data && tensor.n_bytes <= size &&
                                    tensor.data <= data + size - tensor.n_bytes));
    require(tensor.n_bytes == 0 ||
            static_cast<uint64_t>(tensor.data - data) % file.alignment() == 0);
  }
}

// The first up to 4096 elements (whole blocks) of each tensor dequantized; a 2-D tensor of
// up to 64k elements packed and multiplied by one activation row. Sizes are capped so an
// input stays fast.
void exercise_tensor_data(const tandem::gguf::File& file) {
  static tandem::ThreadPool pool(1);
  for (const auto& tensor : file.tensors()) {
    const int64_t block = tandem::gguf::block_elements(tensor.type);
    const auto n = static_cast<int64_t>(std::min<uint64_t>(tensor.n_elements, 4096));
    if (n / block == 0) continue;
    std::vector<float> out(static_cast<size_t>(n / block * block));
    tandem::kernels::dequantize_row(tensor.type, tensor.data, out.data(),
                                    static_cast<int64_t>(out.size()));
    if (tensor.dims.size() != 2 || tensor.n_elements > 65536) continue;
    const auto n_in = static_cast<int64_t>(tensor.dims[0]);
    const auto n_out = static_cast<int64_t>(tensor.dims[1]);
    if (n_in == 0 || n_out == 0 || n_in % block != 0) continue;
    const auto packed = tandem::kernels::PackedWeights::pack(
        tandem::kernels::WeightSource{tensor.type, tensor.data, n_out, n_in});
    std::vector<float> x(static_cast<size_t>(n_in)), y(static_cast<size_t>(n_out));
    for (int64_t i = 0; i < n_in; ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
    tandem::kernels::matmul(pool, packed, x.data(), 1, y.data());
  }
}

void check_config(const tandem::gguf::File& file) {
  try {
    const auto c = tandem::ModelConfig::from_gguf(file);
    require(c.n_embd > 0 && c.n_layer > 0 && c.n_head > 0 && c.n_head_kv > 0 && c.n_ff > 0);
    require(c.head_dim > 0 && c.n_head % c.n_head_kv == 0);
    require(c.n_rot > 0 && c.n_rot <= c.head_dim && c.n_rot % 2 == 0);
    require(c.n_vocab > 0 && c.context_length > 0 && c.rms_eps > 0);
    require(c.rope.base > 0 && c.rope.scale > 0 && c.rope_local.base > 0 && c.rope_local.scale > 0);
    require(c.attn_scale > 0 && c.attn_softcap >= 0 && c.final_softcap >= 0);
    require(c.sliding_window >= 0 &&
            (c.local_layers.empty() || c.local_layers.size() == static_cast<size_t>(c.n_layer)));
  } catch (const GgufError&) {
  }
}

void check_tokenizer(const tandem::gguf::File& file) {
  std::unique_ptr<tandem::Tokenizer> tokenizer;
  try {
    tokenizer = tandem::Tokenizer::from_gguf(file);
  } catch (const GgufError&) {
    return;
  }
  const int32_t n = tokenizer->vocab_size();
  require(tokenizer->bos_id() < n && tokenizer->eos_id() < n);
  for (int32_t id : tokenizer->eog_ids()) require(id >= 0 && id < n);
  for (bool special : {false, true}) {
    const auto ids = tokenizer->encode("Hi <s> w\xC3\xB6rld \xF0\x9F\xA6\x99\n", special, special);
    for (int32_t id : ids) require(id >= 0 && id < n);
    tokenizer->decode(ids, special);
  }
  for (int32_t id = 0; id < n && id < 4096; ++id) {
    tokenizer->token_bytes(id, true);
    require(tokenizer->find_token(tokenizer->token_text(id)) >= 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<tandem::gguf::File> file;
  try {
    file.emplace(tandem::gguf::File::parse({data, size}, "fuzz.gguf"));
  } catch (const GgufError&) {
    return 0;
  }
  check_file(*file, data, size);
  exercise_tensor_data(*file);
  check_config(*file);
  check_tokenizer(*file);
  try {
    tandem::Model::load(std::move(*file));
  } catch (const GgufError&) {
  }
  return 0;
}
