// Numeric CSV: columns by name, quoting, line endings, float64, and errors naming file, line and column.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "io/reader_test_util.h"
#include "support/compare.h"

namespace strider {
namespace {

using testing::error_of;
using testing::write_file;

TEST(Csv, ReadsChosenColumnsInTheirOrder) {
  const std::string p = write_file("a.csv", "id,\"x, cm\",name,y\r\n1,2.5,alice,-3e2\r\n\r\n2, 4 ,\"bob, jr\",+7\r\n3,\"6\",c,nan");
  Tensor all = io::read_csv(p, {.columns = {"y", "x, cm"}});
  EXPECT_EQ(all.dtype(), kFloat);
  EXPECT_EQ(all.sizes(), IntArrayRef({3, 2}));
  const std::vector<double> v = testing::values(all);
  EXPECT_EQ(v[0], -300.0);
  EXPECT_EQ(v[1], 2.5);
  EXPECT_EQ(v[2], 7.0);
  EXPECT_EQ(v[3], 4.0);
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_EQ(v[5], 6.0);
  EXPECT_EQ(io::read_csv_header(p), (std::vector<std::string>{"id", "x, cm", "name", "y"}));
  std::remove(p.c_str());
}

TEST(Csv, AllColumnsFloat64TrailingNewlineAndBom) {
  const std::string p = write_file("b.csv", "\xEF\xBB\xBF" "a;b\n0.1;1e-300\n\n  \n0.2;3\n");
  Tensor t = io::read_csv(p, {.dtype = kDouble, .delimiter = ';'});
  EXPECT_EQ(t.dtype(), kDouble);
  EXPECT_EQ(testing::values(t), (std::vector<double>{0.1, 1e-300, 0.2, 3}));
  Tensor f = io::read_csv(p, {.delimiter = ';'});
  EXPECT_EQ(f.dtype(), kFloat);
  EXPECT_EQ(testing::values(f)[0], static_cast<double>(0.1f));  // correctly rounded to float
  std::remove(p.c_str());
}

TEST(Csv, HeaderOnlyGivesNoRows) {
  const std::string p = write_file("c.csv", "a,b\n");
  EXPECT_EQ(io::read_csv(p).sizes(), IntArrayRef({0, 2}));
  std::remove(p.c_str());
}

TEST(Csv, BadInputIsAnErrorNamingFileLineAndColumn) {
  struct Case {
    const char* what;
    std::string text;
    std::vector<std::string> columns;
    std::vector<const char*> expect;
  };
  const std::vector<Case> cases = {
      {"bad cell", "a,b\n1,2\n3,x4\n", {}, {":3:", "column 'b' (column 2)", "cannot read 'x4' as a number"}},
      {"empty cell", "a,b\n1,\n", {}, {":2:", "column 'b' (column 2)", "empty"}},
      {"trailing junk", "a,b\r\n1,2.5.1\r\n", {}, {":2:", "'2.5.1'"}},
      {"overflow", "a\n1e999\n", {}, {":2:", "column 'a' (column 1)", "outside float32's range"}},
      {"short row", "a,b,c\n1,2\n", {}, {":2:", "2 fields", "3 columns"}},
      {"missing column", "a,b\n1,2\n", {"c"}, {"column 'c' is not in the header", "'a', 'b'"}},
      {"duplicate column", "a,a\n1,2\n", {"a"}, {"appears twice"}},
      {"unterminated quote", "a,\"b\n1,2\n", {}, {":1:", "unterminated quote"}},
      {"empty file", "\n\n", {}, {"is empty"}},
      {"NUL in a cell", std::string("a\n1\0x\n", 7), {}, {":2:", "cannot read '1\\x00x' as a number"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string p = write_file("bad.csv", c.text);
    const std::string msg = error_of([&] { io::read_csv(p, {.columns = c.columns}); });
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\0'), std::string::npos) << c.what;
    for (const char* e : c.expect) EXPECT_NE(msg.find(e), std::string::npos) << msg << " lacks " << e;
    std::remove(p.c_str());
  }
  // A column that is not chosen may hold text.
  const std::string p = write_file("text.csv", "name,v\nabc,1\n");
  EXPECT_EQ(io::read_csv(p, {.columns = {"v"}}).sizes(), IntArrayRef({1, 1}));
  std::remove(p.c_str());
}

}  // namespace
}  // namespace strider
