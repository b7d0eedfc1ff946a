// .npy and .npz: NumPy-written golden files of every numeric dtype and byte order, Fortran order,
// format versions 2.0 and 3.0, save_npy round trips, and crafted bad files.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <cmath>
#include <cstring>

#include "io/reader_test_util.h"
#include "support/compare.h"

namespace strider {
namespace {

using testing::data_path;
using testing::error_of;
using testing::int_values;
using testing::write_file;

struct GoldenDtype {
  const char* file;
  char kind;
  int size;
  ScalarType expect;
};

// make_golden.py's values(): six per kind.
std::vector<double> float_values() { return {0.0, 1.5, -2.25, 1024.0, -0.0, 3.0}; }
std::vector<int64_t> int_expected(char kind, int size) {
  if (kind == 'b') return {1, 0, 1, 1, 0, 0};
  const int bits = 8 * size;
  if (kind == 'i') {
    const int64_t lo = bits == 64 ? INT64_MIN : -(int64_t{1} << (bits - 1));
    const int64_t hi = bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
    return {0, 1, -1, lo, hi, 42};
  }
  const int64_t hi = bits == 64 ? INT64_MAX : static_cast<int64_t>((uint64_t{1} << bits) - 1);
  return {0, 1, 2, hi - 1, hi, 42};
}

TEST(Npy, ReadsEveryNumericDtypeInBothByteOrders) {
  const std::vector<GoldenDtype> cases = {
      {"b1", 'b', 1, kBool},     {"i1", 'i', 1, kInt},     {"u1", 'u', 1, kByte},     {"le_i2", 'i', 2, kInt},
      {"be_i2", 'i', 2, kInt},   {"le_u2", 'u', 2, kInt},  {"be_u2", 'u', 2, kInt},   {"le_i4", 'i', 4, kInt},
      {"be_i4", 'i', 4, kInt},   {"le_u4", 'u', 4, kLong}, {"be_u4", 'u', 4, kLong},  {"le_i8", 'i', 8, kLong},
      {"be_i8", 'i', 8, kLong},  {"le_u8", 'u', 8, kLong}, {"be_u8", 'u', 8, kLong},  {"le_f2", 'f', 2, kHalf},
      {"be_f2", 'f', 2, kHalf},  {"le_f4", 'f', 4, kFloat}, {"be_f4", 'f', 4, kFloat}, {"le_f8", 'f', 8, kDouble},
      {"be_f8", 'f', 8, kDouble}};
  for (const GoldenDtype& c : cases) {
    SCOPED_TRACE(c.file);
    Tensor t = io::load_npy(data_path(std::string("npy/") + c.file + ".npy"));
    EXPECT_EQ(t.dtype(), c.expect);
    EXPECT_EQ(t.sizes(), IntArrayRef({2, 3}));
    if (c.kind == 'f') {
      EXPECT_EQ(testing::values(t), float_values());
      EXPECT_TRUE(std::signbit(testing::values(t)[4]));
    } else {
      EXPECT_EQ(int_values(t), int_expected(c.kind, c.size));
    }
  }
}

TEST(Npy, FortranOrderKeepsValuesWithColumnMajorStrides) {
  Tensor want = arange(0, 24, 1, kFloat).reshape({2, 3, 4});
  Tensor f = io::load_npy(data_path("npy/fortran_f4.npy"));
  EXPECT_EQ(f.strides(), IntArrayRef({1, 2, 6}));
  EXPECT_TRUE(testing::all_close(f, want, 0, 0));
  Tensor g = io::load_npy(data_path("npy/fortran_be_i2.npy"));  // byte-swapped, widened, still column-major
  EXPECT_EQ(g.dtype(), kInt);
  EXPECT_EQ(g.strides(), IntArrayRef({1, 2, 6}));
  EXPECT_TRUE(testing::all_close(g, want, 0, 0));
}

TEST(Npy, ReadsVersions2And3ScalarsAndEmptyArrays) {
  Tensor want = arange(0, 24, 1, kFloat).reshape({2, 3, 4});
  EXPECT_TRUE(testing::all_close(io::load_npy(data_path("npy/version2.npy")), want, 0, 0));
  EXPECT_TRUE(testing::all_close(io::load_npy(data_path("npy/version3.npy")), want, 0, 0));
  Tensor s = io::load_npy(data_path("npy/scalar_f8.npy"));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 3.5);
  Tensor e = io::load_npy(data_path("npy/empty_f4.npy"));
  EXPECT_EQ(e.sizes(), IntArrayRef({0, 3}));
}

// np.load copies: the tensor is this process's memory, so writing it leaves the file alone, and
// rewriting the file in place (np.save truncates and writes) or truncating it later changes
// nothing in the tensor (a mapping showed the new bytes, and a truncated one was a SIGBUS).
TEST(Npy, LoadedTensorIsIndependentOfTheFile) {
  const std::string p = testing::temp_path("cow.npy");
  io::save_npy(p, arange(0, 4096, 1, kFloat));
  const std::string before = testing::read_file(p);
  {
    Tensor t = io::load_npy(p);
    t.mul_(2);
    EXPECT_EQ(t[5].item<double>(), 10.0);
  }
  EXPECT_EQ(testing::read_file(p), before);
  Tensor kept = io::load_npy(p);
  std::string rewritten = before;
  for (size_t i = before.size() - 4096 * 4; i < rewritten.size(); ++i) rewritten[i] = '\xff';
  write_file("cow.npy", rewritten);  // truncated and rewritten in place: the same inode
  EXPECT_EQ(kept[100].item<double>(), 100.0);
  write_file("cow.npy", before.substr(0, 200));
  EXPECT_EQ(kept[2000].item<double>(), 2000.0);
  std::remove(p.c_str());
  EXPECT_EQ(kept[4095].item<double>(), 4095.0);
}

TEST(Npy, SaveRoundTripsEveryNumPyDtypeAndLayout) {
  const std::string p = testing::temp_path("round.npy");
  for (ScalarType dt : {kFloat, kDouble, kHalf, kLong, kInt, kByte, kBool}) {
    SCOPED_TRACE(to_string(dt));
    Tensor t = dt == kBool ? tensor(std::vector<double>{0, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1, 0}, kDouble).reshape({3, 4}).to(dt)
                           : arange(0, 12, 1, kDouble).reshape({3, 4}).to(dt);
    Tensor view = t.t();  // written row-major whatever the layout
    io::save_npy(p, view);
    Tensor back = io::load_npy(p);
    EXPECT_EQ(back.dtype(), dt);
    EXPECT_TRUE(testing::all_close(back, view, 0, 0));
  }
  io::save_npy(p, arange(0, 24, 1, kFloat).reshape({2, 3, 4}));
  EXPECT_EQ(testing::read_file(p), testing::read_file(data_path("npy/arange_f4.npy")));  // numpy.save's bytes
  EXPECT_NE(error_of([&] { io::save_npy(p, zeros({2}, kBFloat16)); }).find("NumPy has no bfloat16"), std::string::npos);
  std::remove(p.c_str());
}

TEST(Npz, ReadsStoredDeflatedAndZip64Archives) {
  Tensor want = arange(0, 24, 1, kFloat).reshape({2, 3, 4});
  for (const char* name : {"npy/stored.npz", "npy/compressed.npz", "npy/zip64.npz"}) {
    SCOPED_TRACE(name);
    auto m = io::load_npz(data_path(name));
    ASSERT_EQ(m.size(), 3u);
    EXPECT_TRUE(testing::all_close(m.at("a"), want, 0, 0));
    EXPECT_EQ(int_values(m.at("b")), (std::vector<int64_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(m.at("c").dtype(), kDouble);
    EXPECT_TRUE(testing::all_close(m.at("c"), want, 0, 0));
  }
}

// ---- crafted bad files: each an Error naming the file

std::string npy_bytes(const std::string& dict, const std::string& data, int version = 1, int64_t len_delta = 0) {
  std::string head = std::string("\x93NUMPY") + char(version) + char(0);
  const uint64_t len = static_cast<uint64_t>(static_cast<int64_t>(dict.size()) + len_delta);
  for (int i = 0; i < (version == 1 ? 2 : 4); ++i) head += static_cast<char>((len >> (8 * i)) & 0xff);
  return head + dict + data;
}

TEST(Npy, CraftedBadFilesAreNamedErrors) {
  struct Case {
    const char* what;
    std::string bytes;
    const char* expect;
  };
  const std::string f8(8, '\0');
  auto dict = [](const std::string& body) { return "{" + body + "}\n"; };
  const std::vector<Case> cases = {
      {"empty file", "", "not a .npy file"},
      {"wrong magic", "\x93NUMPZ\x01\x00\x10\x00", "not a .npy file"},
      {"version 4", npy_bytes(dict("'descr': '<f4', 'fortran_order': False, 'shape': (2,), "), f8, 4), "version 4.0"},
      {"header longer than the file", npy_bytes(dict("'descr': '<f4', 'fortran_order': False, 'shape': (2,), "), "", 1, 500),
       "the .npy header claims"},
      {"header shorter than it claims", npy_bytes(dict("'descr': '<f4', 'fortran_order': False, 'shape': (2,), "), f8, 1, -3),
       "does not end with a newline"},
      {"truncated data", npy_bytes(dict("'descr': '<f4', 'fortran_order': False, 'shape': (3,), "), f8), "(truncated)"},
      {"trailing data", npy_bytes(dict("'descr': '<f4', 'fortran_order': False, 'shape': (1,), "), f8), "trailing bytes"},
      {"shape overflowing int64", npy_bytes(dict("'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), "), f8),
       "too large"},
      {"byte count overflowing", npy_bytes(dict("'descr': '<f8', 'fortran_order': False, 'shape': (3074457345618258603,), "), f8),
       "too large"},
      {"shape exceeding the file", npy_bytes(dict("'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000), "), f8),
       "(truncated)"},
      {"a shape entry past int64", npy_bytes(dict("'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), "), f8),
       "does not fit in int64"},
      {"negative shape", npy_bytes(dict("'descr': '<f4', 'fortran_order': False, 'shape': (-2,), "), f8), "non-negative"},
      {"missing key", npy_bytes(dict("'descr': '<f4', 'shape': (2,), "), f8), "needs 'descr', 'fortran_order' and 'shape'"},
      {"unknown key", npy_bytes(dict("'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1"), f8), "unknown key 'x'"},
      {"repeated key", npy_bytes(dict("'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)"), f8), "repeats"},
      {"complex dtype", npy_bytes(dict("'descr': '<c8', 'fortran_order': False, 'shape': (1,), "), f8), "unsupported dtype '<c8'"},
      {"string dtype", npy_bytes(dict("'descr': '<U2', 'fortran_order': False, 'shape': (1,), "), f8), "unsupported dtype"},
      {"structured dtype", npy_bytes(dict("'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), "), f8), "structured"},
      {"fortran_order not bool", npy_bytes(dict("'descr': '<f4', 'fortran_order': 0, 'shape': (2,), "), f8), "True or False"},
      {"no newline", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f8), "newline"},
      {"bool byte 2", npy_bytes(dict("'descr': '|b1', 'fortran_order': False, 'shape': (2,), "), std::string("\x01\x02", 2)),
       "byte value 2"},
      {"uint64 above int64", npy_bytes(dict("'descr': '<u8', 'fortran_order': False, 'shape': (1,), "), std::string(8, '\xff')),
       "above int64"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string p = write_file("bad.npy", c.bytes);
    const std::string msg = error_of([&] { io::load_npy(p); });
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    std::remove(p.c_str());
  }
  EXPECT_NE(error_of([] { io::load_npy("/nonexistent/x.npy"); }).find("/nonexistent/x.npy"), std::string::npos);
  EXPECT_NE(error_of([] { io::load_npy("/tmp"); }).find("not a regular file"), std::string::npos);
}

// zipfile writes the real counts in the classic end record when they fit; a >4 GiB archive has
// 0xffff... there, and only the Zip64 record holds them. This makes the small archive such a one.
std::string zip64_end_record_only(std::string zip) {
  const size_t end = zip.rfind(std::string("PK\x05\x06", 4));
  for (size_t i = 8; i < 20; ++i) zip[end + i] = '\xff';
  return zip;
}

TEST(Npz, ReadsCountsFromTheZip64EndRecord) {
  const std::string p = write_file("z64.npz", zip64_end_record_only(testing::read_file(data_path("npy/zip64.npz"))));
  auto m = io::load_npz(p);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_TRUE(testing::all_close(m.at("c"), arange(0, 24, 1, kFloat).reshape({2, 3, 4}), 0, 0));
  std::remove(p.c_str());
}

TEST(Npz, CraftedBadArchivesAreNamedErrors) {
  const std::string good = testing::read_file(data_path("npy/compressed.npz"));
  const std::string stored = testing::read_file(data_path("npy/stored.npz"));
  struct Case {
    const char* what;
    std::string bytes;
    const char* expect;
  };
  std::string flipped = good;
  flipped[95] ^= 0x5a;  // inside the first entry's deflated data (it starts at byte 55)
  std::string lying = stored;        // the central directory's offset pointing past the end
  const size_t eocd = lying.rfind(std::string("PK\x05\x06", 4));
  for (int i = 0; i < 4; ++i) lying[eocd + 16 + i] = '\x7f';
  const std::string zip64 = zip64_end_record_only(testing::read_file(data_path("npy/zip64.npz")));
  std::string no_locator = zip64, far_record = zip64;
  no_locator[zip64.rfind(std::string("PK\x06\x07", 4)) + 3] = 'x';
  far_record[zip64.rfind(std::string("PK\x06\x07", 4)) + 14] = '\x7f';  // the record's offset, high byte
  const std::vector<Case> cases = {
      {"empty", "", "too short"},
      {"Zip64 without its locator", no_locator, "no Zip64 locator"},
      {"Zip64 record beyond the end", far_record, "Zip64 end-of-directory record"},
      {"not a zip", std::string(100, 'x'), "no end-of-central-directory"},
      {"truncated", good.substr(0, good.size() / 2), "no end-of-central-directory"},
      {"directory beyond the end", lying, "outside the archive"},
      {"corrupt deflate data", flipped, "entry 'a.npy'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string p = write_file("bad.npz", c.bytes);
    const std::string msg = error_of([&] { io::load_npz(p); });
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    std::remove(p.c_str());
  }
}

}  // namespace
}  // namespace strider
