// The GGUF writer, checked by reading its files back with the reader.
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>

#include <gtest/gtest.h>

#include "runner/gguf/gguf.h"
#include "runner/util/float16.h"
#include "tests/common/test_support.h"

namespace tandem::gguf::TANDEM_UNITY_ID {
namespace {

using ::tandem::testing::ScratchDir;

Value scalar(ValueType type, std::variant<uint64_t, int64_t, double, bool, std::string, Array> v) {
  return Value{type, std::move(v)};
}

Value array(ValueType element_type, std::vector<Value> items) {
  return Value{ValueType::kArray, Array{element_type, std::move(items)}};
}

void expect_equal(const Value& a, const Value& b, const std::string& where) {
  ASSERT_EQ(a.type, b.type) << where;
  ASSERT_EQ(a.data.index(), b.data.index()) << where;
  if (const auto* u = std::get_if<uint64_t>(&a.data)) {
    EXPECT_EQ(*u, std::get<uint64_t>(b.data)) << where;
  } else if (const auto* i = std::get_if<int64_t>(&a.data)) {
    EXPECT_EQ(*i, std::get<int64_t>(b.data)) << where;
  } else if (const auto* d = std::get_if<double>(&a.data)) {
    EXPECT_EQ(*d, std::get<double>(b.data)) << where;
  } else if (const auto* f = std::get_if<bool>(&a.data)) {
    EXPECT_EQ(*f, std::get<bool>(b.data)) << where;
  } else if (const auto* s = std::get_if<std::string>(&a.data)) {
    EXPECT_EQ(*s, std::get<std::string>(b.data)) << where;
  }
  if (a.type != ValueType::kArray) return;
  const Array& x = std::get<Array>(a.data);
  const Array& y = std::get<Array>(b.data);
  ASSERT_EQ(x.element_type, y.element_type) << where;
  ASSERT_EQ(x.items.size(), y.items.size()) << where;
  for (size_t i = 0; i < x.items.size(); ++i)
    expect_equal(x.items[i], y.items[i], where + "[" + std::to_string(i) + "]");
}

TEST(GgufWriter, EveryValueTypeReadsBackEqualAndInOrder) {
  std::vector<std::pair<std::string, Value>> values = {
      {"u8", scalar(ValueType::kUint8, uint64_t{255})},
      {"i8", scalar(ValueType::kInt8, int64_t{-128})},
      {"u16", scalar(ValueType::kUint16, uint64_t{65535})},
      {"i16", scalar(ValueType::kInt16, int64_t{-32768})},
      {"u32", scalar(ValueType::kUint32, uint64_t{4294967295u})},
      {"i32", scalar(ValueType::kInt32, int64_t{std::numeric_limits<int32_t>::min()})},
      {"f32", scalar(ValueType::kFloat32, double{1.5f})},
      {"bool_true", scalar(ValueType::kBool, true)},
      {"bool_false", scalar(ValueType::kBool, false)},
      {"string", scalar(ValueType::kString, std::string("h\xc3\xa9llo\0x", 8))},
      {"empty_string", scalar(ValueType::kString, std::string())},
      {"u64", scalar(ValueType::kUint64, std::numeric_limits<uint64_t>::max())},
      {"i64", scalar(ValueType::kInt64, std::numeric_limits<int64_t>::min())},
      {"f64", scalar(ValueType::kFloat64, 0.1)},
      {"array_u8", array(ValueType::kUint8, {scalar(ValueType::kUint8, uint64_t{1}),
                                             scalar(ValueType::kUint8, uint64_t{2})})},
      {"array_empty", array(ValueType::kFloat64, {})},
      {"array_strings", array(ValueType::kString, {scalar(ValueType::kString, std::string("a")),
                                                   scalar(ValueType::kString, std::string())})},
      {"array_nested",
       array(ValueType::kArray,
             {array(ValueType::kInt16, {scalar(ValueType::kInt16, int64_t{-7})}),
              array(ValueType::kArray, {array(ValueType::kBool, {scalar(ValueType::kBool, true)})}),
              array(ValueType::kString, {})})},
  };
  Writer writer;
  for (const auto& [key, value] : values) writer.add(key, value);
  ScratchDir dir;
  writer.write(dir.file("values.gguf"));

  const File file = File::open(dir.file("values.gguf"));
  EXPECT_EQ(file.version(), 3u);
  ASSERT_EQ(file.metadata().size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(file.metadata()[i].first, values[i].first);
    expect_equal(file.metadata()[i].second, values[i].second, values[i].first);
  }
  EXPECT_TRUE(file.tensors().empty());
}

TEST(GgufWriter, TypedAddersReadBackThroughTypedGetters) {
  Writer writer;
  writer.add_string("s", "text");
  writer.add_uint32("u", 7);
  writer.add_int32("i", -7);
  writer.add_float32("f", 0.25f);
  writer.add_bool("b", true);
  writer.add_string_array("sa", {"x", "", "z"});
  writer.add_float32_array("fa", {1.0f, -2.5f});
  writer.add_int32_array("ia", {3, -4});
  ScratchDir dir;
  writer.write(dir.file("typed.gguf"));
  const File file = File::open(dir.file("typed.gguf"));
  EXPECT_EQ(file.get_string("s"), "text");
  EXPECT_EQ(file.find("u")->type, ValueType::kUint32);
  EXPECT_EQ(file.get_int("u"), 7);
  EXPECT_EQ(file.find("i")->type, ValueType::kInt32);
  EXPECT_EQ(file.get_int("i"), -7);
  EXPECT_EQ(file.find("f")->type, ValueType::kFloat32);
  EXPECT_EQ(file.get_float("f"), 0.25);
  EXPECT_TRUE(file.get_bool_or("b", false));
  EXPECT_EQ(file.get_string_array("sa"), (std::vector<std::string>{"x", "", "z"}));
  EXPECT_EQ(file.get_float_array("fa"), (std::vector<float>{1.0f, -2.5f}));
  EXPECT_EQ(file.get_int_array("ia"), (std::vector<int32_t>{3, -4}));
}

TEST(GgufWriter, EveryTensorTypeReadsBackWithItsBytesAndAlignedData) {
  std::vector<float> f32 = {1.0f, -2.0f, 0.5f};
  std::vector<uint16_t> f16 = {half_from_float(1.0f), half_from_float(-0.5f)};
  std::vector<uint16_t> bf16 = {bfloat_from_float(3.0f), bfloat_from_float(-1.0f),
                                bfloat_from_float(0.125f)};
  std::vector<BlockQ8_0> q8(2);
  for (int b = 0; b < 2; ++b) {
    q8[b].d = half_from_float(0.01f * (b + 1));
    for (int j = 0; j < kQ8_0BlockSize; ++j) q8[b].qs[j] = static_cast<int8_t>(j * (b ? -3 : 4));
  }
  auto bytes = [](const auto& v) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                    v.size() * sizeof(v[0]));
  };
  Writer writer;
  writer.add_string("general.architecture", "llama");
  writer.add_tensor("a.f32", TensorType::kF32, {3}, bytes(f32));
  writer.add_tensor("b.f16", TensorType::kF16, {1, 2}, bytes(f16));
  writer.add_tensor("c.bf16", TensorType::kBF16, {3, 1, 1}, bytes(bf16));
  writer.add_tensor("d.q8_0", TensorType::kQ8_0, {32, 1, 2, 1}, bytes(q8));
  ScratchDir dir;
  writer.write(dir.file("tensors.gguf"));

  const File file = File::open(dir.file("tensors.gguf"));
  EXPECT_EQ(file.alignment(), 32u);
  ASSERT_EQ(file.tensors().size(), 4u);
  struct Expected {
    const char* name;
    TensorType type;
    std::vector<uint64_t> dims;
    std::span<const uint8_t> data;
  };
  const Expected expected[] = {{"a.f32", TensorType::kF32, {3}, bytes(f32)},
                               {"b.f16", TensorType::kF16, {1, 2}, bytes(f16)},
                               {"c.bf16", TensorType::kBF16, {3, 1, 1}, bytes(bf16)},
                               {"d.q8_0", TensorType::kQ8_0, {32, 1, 2, 1}, bytes(q8)}};
  const uint8_t* data_start = file.tensors()[0].data;
  for (size_t i = 0; i < 4; ++i) {
    const TensorInfo& t = file.tensors()[i];
    EXPECT_EQ(t.name, expected[i].name);
    EXPECT_EQ(t.type, expected[i].type) << t.name;
    EXPECT_EQ(t.dims, expected[i].dims) << t.name;
    ASSERT_EQ(t.n_bytes, expected[i].data.size()) << t.name;
    EXPECT_EQ(std::memcmp(t.data, expected[i].data.data(), t.n_bytes), 0) << t.name;
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
    EXPECT_EQ(t.data, data_start + t.offset) << t.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 32, 0u) << t.name;  // the map is page-aligned
    EXPECT_EQ(file.find_tensor(expected[i].name), &t);
  }
  EXPECT_EQ(file.tensors()[3].n_elements, 64u);
  EXPECT_EQ(file.find_tensor("missing"), nullptr);
}

TEST(GgufWriter, AnExplicitAlignmentIsUsedForTheData) {
  Writer writer;
  writer.add_uint32("general.alignment", 64);
  const std::vector<float> data(5, 1.0f);
  const std::span<const uint8_t> raw(reinterpret_cast<const uint8_t*>(data.data()), 20);
  writer.add_tensor("x", TensorType::kF32, {5}, raw);
  writer.add_tensor("y", TensorType::kF32, {5}, raw);
  ScratchDir dir;
  writer.write(dir.file("aligned.gguf"));
  const File file = File::open(dir.file("aligned.gguf"));
  EXPECT_EQ(file.alignment(), 64u);
  EXPECT_EQ(file.find_tensor("y")->offset, 64u);
}

TEST(GgufWriter, RejectsTensorDataOfTheWrongSize) {
  Writer writer;
  const std::vector<uint8_t> data(10);
  EXPECT_THROW(writer.add_tensor("x", TensorType::kF32, {3}, data), GgufError);
  EXPECT_THROW(writer.add_tensor("q", TensorType::kQ8_0, {16}, data), GgufError);
}

// A tensor produced at write time is written exactly as the same bytes given up front.
TEST(GgufWriter, ProducedTensorsWriteLikeGivenOnes) {
  ScratchDir dir;
  std::vector<uint8_t> bytes(34 * 3);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  const std::vector<uint8_t> small = {1, 2, 3, 4};
  Writer given, produced;
  given.add_tensor("a", TensorType::kF32, {1}, small);
  given.add_tensor("q", TensorType::kQ8_0, {32, 3}, bytes);
  produced.add_tensor("a", TensorType::kF32, {1}, [&] { return small; });
  int calls = 0;
  produced.add_tensor("q", TensorType::kQ8_0, {32, 3}, [&] {
    ++calls;
    return bytes;
  });
  given.write(dir.file("given.gguf"));
  produced.write(dir.file("produced.gguf"));
  EXPECT_EQ(calls, 1);
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(slurp(dir.file("given.gguf")), slurp(dir.file("produced.gguf")));
}

// A producer that returns the wrong size, or throws, fails the write and leaves no file.
TEST(GgufWriter, AFailingProducerLeavesNoFile) {
  ScratchDir dir;
  Writer wrong_size, throwing;
  wrong_size.add_tensor("t", TensorType::kF32, {2}, [] { return std::vector<uint8_t>(4); });
  throwing.add_tensor("t", TensorType::kF32, {2},
                      []() -> std::vector<uint8_t> { throw std::invalid_argument("no"); });
  EXPECT_THROW(wrong_size.write(dir.file("a.gguf")), GgufError);
  EXPECT_THROW(throwing.write(dir.file("b.gguf")), std::invalid_argument);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(GgufWriter, RefusesDuplicateKeysAndTensorNames) {
  Writer writer;
  writer.add_uint32("k", 1);
  EXPECT_THROW(writer.add_string("k", "again"), GgufError);
  const std::vector<uint8_t> data(4);
  writer.add_tensor("t", TensorType::kF32, {1}, data);
  EXPECT_THROW(writer.add_tensor("t", TensorType::kF32, {1}, data), GgufError);
}

TEST(GgufWriter, ReplacesAnExistingFileWholeAndLeavesNoTemporary) {
  ScratchDir dir;
  Writer first;
  first.add_string("which", "first");
  first.write(dir.file("m.gguf"));
  Writer second;
  second.add_string("which", "second");
  second.write(dir.file("m.gguf"));
  EXPECT_EQ(File::open(dir.file("m.gguf")).get_string("which"), "second");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(GgufWriter, ReportsAnUnwritablePath) {
  Writer writer;
  writer.add_bool("b", true);
  try {
    writer.write("/nonexistent-dir/x.gguf");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.gguf"), std::string::npos);
  }
}

}  // namespace
}  // namespace tandem::gguf::TANDEM_UNITY_ID
