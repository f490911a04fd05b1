// The GGUF reader: real files, typed getters, and a catalogue of bad files, each of
// which must be refused with a one-line message that names the problem.
#include <fstream>
#include <limits>
#include <map>

#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"
#include "tests/common/test_support.h"

namespace tandem::gguf::TANDEM_UNITY_ID {
namespace {

using ::tandem::testing::ScratchDir;

// Builds GGUF bytes field by field, so a test can write exactly the bad file it means.
class Bytes {
 public:
  Bytes& u8(uint8_t v) { return raw(&v, 1); }
  Bytes& u32(uint32_t v) { return raw(&v, 4); }
  Bytes& u64(uint64_t v) { return raw(&v, 8); }
  Bytes& str(std::string_view s) {
    u64(s.size());
    return raw(s.data(), s.size());
  }
  Bytes& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    raw("GGUF", 4);
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  Bytes& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
  Bytes& kv_str(std::string_view key, std::string_view v) { return str(key).u32(8).str(v); }
  Bytes& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (auto d : dims) u64(d);
    return u32(type).u64(offset);
  }
  Bytes& pad(size_t alignment = 32) {
    while (data.size() % alignment) data.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    data.resize(data.size() + n);
    return *this;
  }
  Bytes& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    data.insert(data.end(), b, b + n);
    return *this;
  }
  std::vector<uint8_t> data;
};

// A good file: two metadata keys and one 4-element F32 tensor.
Bytes good_file() {
  Bytes b;
  b.header(3, 1, 2).kv_str("general.architecture", "llama").kv_u32("general.alignment", 32);
  b.tensor("weight", {4}, 0, 0).pad().zeros(16);
  return b;
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    File::parse(bytes, "bad.gguf");
  } catch (const GgufError& e) {
    return e.what();
  }
  return "(no error)";
}

// The message starts with the file name, is one line, and mentions `needle`.
#define EXPECT_REFUSED(bytes, needle)                            \
  do {                                                           \
    const std::string message = parse_error(bytes);              \
    EXPECT_EQ(message.rfind("bad.gguf: ", 0), 0u) << message;    \
    EXPECT_EQ(message.find('\n'), std::string::npos) << message; \
    EXPECT_NE(message.find(needle), std::string::npos)           \
        << "expected '" << needle << "' in: " << message;        \
  } while (0)

TEST(GgufReader, ParsesAHandBuiltFile) {
  const Bytes b = good_file();
  const File file = File::parse(b.data, "good.gguf");
  EXPECT_EQ(file.name(), "good.gguf");
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.get_string("general.architecture"), "llama");
  ASSERT_EQ(file.tensors().size(), 1u);
  EXPECT_EQ(file.tensors()[0].n_elements, 4u);
  EXPECT_EQ(file.tensors()[0].n_bytes, 16u);
  EXPECT_EQ(file.tensors()[0].data, b.data.data() + b.data.size() - 16);
}

TEST(GgufReader, AcceptsVersionTwo) {
  Bytes b;
  b.header(2, 0, 1).kv_u32("k", 1);
  EXPECT_EQ(File::parse(b.data).version(), 2u);
}

TEST(GgufReader, RefusesBadMagic) {
  Bytes b = good_file();
  b.data[0] = 'X';
  EXPECT_REFUSED(b.data, "bad magic \"XGUF\"");
  EXPECT_REFUSED((std::vector<uint8_t>{'h', 'i', '\n'}), "bad magic \"hi\\x0a\"");
  EXPECT_REFUSED((std::vector<uint8_t>{'G', 'G'}), "truncated in header");
}

TEST(GgufReader, RefusesVersionOneAndNinetyNine) {
  for (uint32_t version : {1u, 99u}) {
    Bytes b;
    b.header(version, 0, 0);
    EXPECT_REFUSED(b.data, "unsupported GGUF version " + std::to_string(version));
  }
}

TEST(GgufReader, RefusesAnEmptyFile) {
  EXPECT_REFUSED(std::vector<uint8_t>{}, "empty file");
  ScratchDir dir;
  std::ofstream(dir.file("empty.gguf")).close();
  try {
    File::open(dir.file("empty.gguf"));
    FAIL() << "expected an error";
  } catch (const GgufError& e) {
    EXPECT_EQ(std::string(e.what()), "empty.gguf: empty file (0 bytes): not a GGUF file");
  }
}

TEST(GgufReader, RefusesAMissingFileNamingIt) {
  try {
    File::open("/nonexistent/model.gguf");
    FAIL() << "expected an error";
  } catch (const GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf: cannot open"), std::string::npos)
        << e.what();
  }
}

TEST(GgufReader, TruncationNamesWhereItHappened) {
  Bytes header_only;
  header_only.raw("GGUF", 4).u32(3).u32(0);
  EXPECT_REFUSED(header_only.data, "truncated in header");

  Bytes in_value;
  in_value.header(3, 0, 1).str("general.alignment").u32(4).u8(32);
  EXPECT_REFUSED(in_value.data, "truncated in metadata key 'general.alignment'");

  Bytes in_key;
  in_key.header(3, 0, 2).kv_u32("a", 1).u64(10).raw("abc", 3);
  EXPECT_REFUSED(in_key.data, "truncated in metadata entry #1 key");

  Bytes in_tensor;
  in_tensor.header(3, 1, 0).str("blk.0.attn_q.weight").u32(2).u64(4);
  EXPECT_REFUSED(in_tensor.data, "truncated in tensor 'blk.0.attn_q.weight'");

  Bytes in_data = good_file();
  in_data.data.resize(in_data.data.size() - 1);
  EXPECT_REFUSED(in_data.data, "out of bounds");
}

TEST(GgufReader, EveryPrefixOfAGoodFileIsRefusedCleanly) {
  const Bytes b = good_file();
  for (size_t n = 0; n < b.data.size(); ++n) {
    const std::vector<uint8_t> prefix(b.data.begin(), b.data.begin() + n);
    const std::string message = parse_error(prefix);
    EXPECT_TRUE(message.find("truncated") != std::string::npos ||
                message.find("empty file") != std::string::npos ||
                message.find("out of bounds") != std::string::npos)
        << n << ": " << message;
  }
}

TEST(GgufReader, EveryByteFlipOfAGoodFileParsesOrIsRefused) {
  const Bytes b = good_file();
  for (size_t i = 0; i < b.data.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> bytes = b.data;
      bytes[i] ^= static_cast<uint8_t>(1 << bit);
      try {
        File::parse(bytes);
      } catch (const GgufError&) {
      }
    }
  }
}

TEST(GgufReader, RefusesHugeStringLength) {
  Bytes b;
  b.header(3, 0, 1).str("general.name").u32(8).u64(uint64_t{1} << 62);
  EXPECT_REFUSED(b.data, "string length 4611686018427387904");
  EXPECT_REFUSED(b.data, "general.name");
}

TEST(GgufReader, RefusesHugeArrayCount) {
  Bytes b;
  b.header(3, 0, 1).str("tokenizer.ggml.tokens").u32(9).u32(8).u64(uint64_t{1} << 61);
  EXPECT_REFUSED(b.data, "array length 2305843009213693952 of string");
  EXPECT_REFUSED(b.data, "tokenizer.ggml.tokens");
}

TEST(GgufReader, RefusesHugeCounts) {
  Bytes tensors;
  tensors.header(3, uint64_t{1} << 60, 0);
  EXPECT_REFUSED(tensors.data, "tensor count");
  Bytes metadata;
  metadata.header(3, 0, std::numeric_limits<uint64_t>::max());
  EXPECT_REFUSED(metadata.data, "metadata count");
}

TEST(GgufReader, RefusesDeeplyNestedArrays) {
  Bytes b;
  b.header(3, 0, 1).str("deep").u32(9);
  for (int i = 0; i < 100; ++i) b.u32(9).u64(1);
  EXPECT_REFUSED(b.data, "nested deeper");
}

TEST(GgufReader, RefusesUnknownValueTypeAndBadBool) {
  Bytes type;
  type.header(3, 0, 1).str("k").u32(13).u32(0);
  EXPECT_REFUSED(type.data, "unknown value type 13 in metadata key 'k'");
  Bytes boolean;
  boolean.header(3, 0, 1).str("flag").u32(7).u8(2);
  EXPECT_REFUSED(boolean.data, "bool value 2");
}

TEST(GgufReader, RefusesFiveDimensions) {
  Bytes b;
  b.header(3, 1, 0).tensor("t", {1, 1, 1, 1, 1}, 0, 0).pad().zeros(32);
  EXPECT_REFUSED(b.data, "tensor 't' has 5 dimensions (at most 4)");
}

TEST(GgufReader, RefusesZeroDimension) {
  // An empty tensor would make every row count zero and quantize divide by it.
  Bytes b;
  b.header(3, 1, 0).tensor("blk.0.attn_q.weight", {32, 0}, 0, 0).pad().zeros(32);
  EXPECT_REFUSED(b.data, "tensor 'blk.0.attn_q.weight' dims [32, 0] have a zero dimension");
  Bytes first;
  first.header(3, 1, 0).tensor("t", {0}, 0, 0).pad();
  EXPECT_REFUSED(first.data, "tensor 't' dims [0] have a zero dimension");
}

TEST(GgufReader, RefusesTensorDataOutOfBounds) {
  Bytes b;
  b.header(3, 1, 0).tensor("t", {8}, 0, 32).pad().zeros(32);
  EXPECT_REFUSED(b.data, "tensor 't' data (32 bytes at offset 32) is out of bounds");
  Bytes huge;
  huge.header(3, 1, 0).tensor("t", {8}, 0, std::numeric_limits<uint64_t>::max() - 31).pad();
  EXPECT_REFUSED(huge.data, "out of bounds");
}

TEST(GgufReader, RefusesMisalignedTensorOffset) {
  Bytes b;
  b.header(3, 1, 0).tensor("t", {1}, 0, 4).pad().zeros(32);
  EXPECT_REFUSED(b.data, "tensor 't' offset 4 is misaligned (alignment 32)");
}

TEST(GgufReader, RefusesTensorsSharingBytes) {
  // "b" (listed first) starts inside "a" (64 bytes at 0): listing order does not matter.
  Bytes b;
  b.header(3, 2, 0).tensor("b", {8}, 0, 32).tensor("a", {16}, 0, 0).pad().zeros(64);
  EXPECT_REFUSED(b.data, "tensor 'b' data (offset 32) overlaps tensor 'a''s");
  Bytes inside;
  inside.header(3, 2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(64);
  EXPECT_REFUSED(inside.data,
                 "tensor 'b' data (offset 32) overlaps tensor 'a''s (64 bytes at offset 0)");
  Bytes same;
  same.header(3, 2, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 0).pad().zeros(32);
  EXPECT_REFUSED(same.data, "overlaps");
  Bytes adjacent;  // end to end is how every writer lays them out
  adjacent.header(3, 2, 0).tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(64);
  EXPECT_NO_THROW(File::parse(adjacent.data, "adjacent.gguf"));
}

TEST(GgufReader, RefusesUnsupportedTensorTypesByName) {
  // IQ2_XXS (16), TQ1_0 (34) and MXFP4 (39): types published files use that tandem lacks.
  Bytes iq2;
  iq2.header(3, 1, 0).tensor("blk.0.ffn_up.weight", {256}, 16, 0).pad().zeros(256);
  EXPECT_REFUSED(iq2.data, "tensor 'blk.0.ffn_up.weight' has unsupported type IQ2_XXS");
  for (auto [id, name] : {std::pair{34u, "TQ1_0"}, std::pair{39u, "MXFP4"}}) {
    Bytes b;
    b.header(3, 1, 0).tensor("t", {256}, id, 0).pad().zeros(256);
    EXPECT_REFUSED(b.data, std::string("has unsupported type ") + name);
  }
  Bytes unknown;
  unknown.header(3, 1, 0).tensor("t", {32}, 1000, 0).pad().zeros(32);
  EXPECT_REFUSED(unknown.data, "has unknown type id 1000");
}

TEST(GgufReader, RefusesBadAlignment) {
  for (uint32_t alignment : {0u, 48u}) {
    Bytes b;
    b.header(3, 0, 1).kv_u32("general.alignment", alignment);
    EXPECT_REFUSED(b.data,
                   "general.alignment " + std::to_string(alignment) + " is not a nonzero power");
  }
  Bytes wrong_type;
  wrong_type.header(3, 0, 1).kv_str("general.alignment", "32");
  EXPECT_REFUSED(wrong_type.data, "general.alignment is string, expected an integer");
}

TEST(GgufReader, RefusesDuplicateKeysAndTensorNames) {
  Bytes keys;
  keys.header(3, 0, 2).kv_u32("llama.block_count", 1).kv_u32("llama.block_count", 2);
  EXPECT_REFUSED(keys.data, "duplicate metadata key 'llama.block_count'");
  Bytes tensors;
  tensors.header(3, 2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad().zeros(64);
  EXPECT_REFUSED(tensors.data, "duplicate tensor name 'w'");
}

TEST(GgufReader, RefusesOverflowingDimsAndPartialBlocks) {
  Bytes overflow;
  overflow.header(3, 1, 0).tensor("t", {uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0).pad();
  EXPECT_REFUSED(overflow.data, "tensor 't' dims [4294967296, 4294967296] overflow");
  Bytes bytes_overflow;  // fits in int64 elements, but not as F32 bytes
  bytes_overflow.header(3, 1, 0).tensor("t", {uint64_t{1} << 62}, 0, 0).pad();
  EXPECT_REFUSED(bytes_overflow.data, "overflow");
  Bytes partial;
  partial.header(3, 1, 0).tensor("q", {33}, 8, 0).pad().zeros(64);
  EXPECT_REFUSED(partial.data, "not a multiple of the Q8_0 block size 32");
  // A K-quant row must hold whole 256-element super-blocks, even when the tensor does.
  Bytes k_row;
  k_row.header(3, 1, 0).tensor("blk.0.attn_q.weight", {128, 2}, 12, 0).pad().zeros(160);
  EXPECT_REFUSED(k_row.data,
                 "tensor 'blk.0.attn_q.weight' row length 128 is not a multiple of the Q4_K block "
                 "size 256");
}

TEST(GgufReader, NamesKeysInStrangeBytesOnOneLine) {
  Bytes b;
  b.header(3, 0, 2).kv_u32("a\nb", 1).kv_u32("a\nb", 1);
  EXPECT_REFUSED(b.data, "duplicate metadata key 'a\\x0ab'");
}

TEST(GgufReader, TypedGettersNameTheKeyOnMismatch) {
  Bytes b;
  b.header(3, 0, 3)
      .kv_str("name", "x")
      .kv_u32("count", 3)
      .str("big")
      .u32(10)
      .u64(std::numeric_limits<uint64_t>::max());
  const File file = File::parse(b.data, "m.gguf");
  EXPECT_EQ(file.get_int_or("missing", 5), 5);
  EXPECT_EQ(file.get_string_or("missing", "d"), "d");
  EXPECT_EQ(file.get_float_or("count", 0.0), 3.0);
  auto message = [&](auto&& f) {
    try {
      f();
    } catch (const GgufError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message([&] { file.get_int("name"); }),
            "m.gguf: metadata key 'name' is string, expected an integer");
  EXPECT_EQ(message([&] { file.get_string("nope"); }), "m.gguf: metadata key 'nope' is missing");
  EXPECT_NE(message([&] { file.get_int("big"); }).find("overflows int64"), std::string::npos);
  EXPECT_NE(message([&] { file.get_string_array("count"); }).find("expected an array"),
            std::string::npos);
  EXPECT_NE(message([&] { file.get_bool_or("count", true); }).find("expected a bool"),
            std::string::npos);
}

TEST(GgufReader, OpensTheSharedModelsAndListsTheirTensors) {
  TANDEM_REQUIRE_SHARED();
  const auto models = *::tandem::testing::shared_dir() / "models";
  int opened = 0;
  for (const auto& entry : std::filesystem::directory_iterator(models)) {
    if (entry.path().extension() != ".gguf") continue;
    const File file = File::open(entry.path());
    ++opened;
    EXPECT_EQ(file.get_string("general.architecture"), "llama") << entry.path();
    const int64_t layers = file.get_int("llama.block_count");
    ASSERT_NE(file.find_tensor("token_embd.weight"), nullptr);
    ASSERT_NE(file.find_tensor("blk." + std::to_string(layers - 1) + ".ffn_down.weight"), nullptr);
    const bool f32 = entry.path().filename().string().find("f32") != std::string::npos;
    std::map<std::string, int> types;
    for (const TensorInfo& t : file.tensors()) {
      ++types[type_name(t.type)];
      EXPECT_EQ(t.n_bytes, tensor_bytes(t.type, t.n_elements)) << t.name;
      if (f32) {
        EXPECT_EQ(t.type, TensorType::kF32) << t.name;
      }
      if (t.name.find("norm") != std::string::npos) {
        EXPECT_EQ(t.dims.size(), 1u) << t.name;
      }
    }
    std::cout << entry.path().filename().string() << ": " << file.tensors().size() << " tensors:";
    for (const auto& [type, count] : types) std::cout << " " << count << " " << type;
    std::cout << "\n";
    EXPECT_GT(file.get_string_array("tokenizer.ggml.tokens").size(), 1000u);
  }
  EXPECT_EQ(opened, 2);
}

}  // namespace
}  // namespace tandem::gguf::TANDEM_UNITY_ID
