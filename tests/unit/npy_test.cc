// The trained models as NumPy files (report/npy.h, README.md
// "Outputs"): the header is a valid format 1.0 header whose dict, parsed back
// here, says '<f8', C order and shape (runs, d); the data are the values'
// little-endian bits in row order; WriteOutputs names the files after the
// algorithms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "fedrt/report/npy.h"
#include "fedrt/report/outputs.h"

namespace fedrt::report {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The header of an .npy file, parsed: its dict's three keys and where the data start.
struct Parsed {
  bool ok = false;
  std::string descr, fortran_order;
  size_t rows = 0, cols = 0, data_offset = 0;
};

// The value of `key` in the dict text (up to the next ", '" or the closing brace).
std::string Field(const std::string& dict, const std::string& key) {
  const std::string k = "'" + key + "': ";
  const size_t b = dict.find(k);
  if (b == std::string::npos) return "";
  const size_t v = b + k.size();
  const size_t e = dict[v] == '(' ? dict.find(')', v) + 1 : dict.find(',', v);
  return dict.substr(v, e - v);
}

Parsed ParseNpy(const std::string& file) {
  Parsed p;
  if (file.size() < 10 || file.compare(0, 6, "\x93NUMPY") != 0) return p;
  if (file[6] != 1 || file[7] != 0) return p;  // version 1.0
  const size_t len = static_cast<unsigned char>(file[8]) | static_cast<size_t>(static_cast<unsigned char>(file[9])) << 8;
  if (file.size() < 10 + len) return p;
  const std::string dict = file.substr(10, len);
  if (dict.front() != '{' || dict.back() != '\n') return p;
  p.descr = Field(dict, "descr");
  p.fortran_order = Field(dict, "fortran_order");
  const std::string shape = Field(dict, "shape");  // "(R, D)"
  if (std::sscanf(shape.c_str(), "(%zu, %zu)", &p.rows, &p.cols) != 2) return p;
  p.data_offset = 10 + len;
  p.ok = true;
  return p;
}

double LittleEndianDouble(const std::string& file, size_t at) {
  uint64_t bits = 0;
  for (int b = 0; b < 8; ++b) bits |= static_cast<uint64_t>(static_cast<unsigned char>(file[at + b])) << (8 * b);
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fedrt_npy_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(NpyTest, HeaderIsVersion1WithTheDictPaddedTo64Bytes) {
  for (auto [rows, cols] : {std::pair<size_t, size_t>{1, 1}, {3, 5}, {2, 10000000}, {100, 65536}}) {
    const std::string h = NpyHeader(rows, cols);
    EXPECT_EQ(h.size() % 64, 0u) << rows << "x" << cols;
    EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    const Parsed p = ParseNpy(h);
    ASSERT_TRUE(p.ok) << h;
    EXPECT_EQ(p.descr, "'<f8'");
    EXPECT_EQ(p.fortran_order, "False");
    EXPECT_EQ(p.rows, rows);
    EXPECT_EQ(p.cols, cols);
    EXPECT_EQ(p.data_offset, h.size());
  }
  EXPECT_EQ(NpyHeader(3, 5).substr(10, 59), "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 5), }");
}

TEST_F(NpyTest, DataAreTheLittleEndianBitsOfEveryValueInRowOrder) {
  const double tiny = std::numeric_limits<double>::denorm_min();
  Eigen::VectorXd a(4), b(4);
  a << 1.0, -0.0, 0.1, 1e300;
  b << -2.5, tiny, std::nan(""), -std::numeric_limits<double>::infinity();
  const fs::path path = dir_ / "m.npy";
  ASSERT_TRUE(WriteNpy(path.string(), {a, b}, 4).ok());
  const std::string file = Slurp(path);
  const Parsed p = ParseNpy(file);
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.rows, 2u);
  EXPECT_EQ(p.cols, 4u);
  ASSERT_EQ(file.size(), p.data_offset + 2 * 4 * 8);
  EXPECT_EQ(file.substr(p.data_offset, 8), std::string("\x00\x00\x00\x00\x00\x00\xf0\x3f", 8));  // 1.0
  for (int j = 0; j < 4; ++j) {
    const double x = LittleEndianDouble(file, p.data_offset + 8 * j);
    const double y = LittleEndianDouble(file, p.data_offset + 32 + 8 * j);
    EXPECT_EQ(std::memcmp(&x, &a[j], 8), 0) << j;  // bit for bit (-0.0 and NaN too)
    EXPECT_EQ(std::memcmp(&y, &b[j], 8), 0) << j;
  }
}

TEST_F(NpyTest, ARowOfAnotherLengthIsRefusedByIndex) {
  Eigen::VectorXd a = Eigen::VectorXd::Zero(3), b = Eigen::VectorXd::Zero(2);
  const Status st = WriteNpy((dir_ / "m.npy").string(), {a, b}, 3);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("row 1 has 2 values, the array has 3 columns"), std::string::npos) << st.message();
  EXPECT_FALSE(WriteNpy((dir_ / "missing" / "m.npy").string(), {a}, 3).ok());
}

TEST_F(NpyTest, OutputsHoldOneModelFilePerAlgorithmWithARowPerRun) {
  SimResult r;
  r.config.plot = false;
  r.problem.dim = 3;
  for (const char* name : {"fedavg", "scaffold-rr"}) {
    AlgorithmResult a;
    a.name = name;
    for (int run = 0; run < 2; ++run) {
      a.error.push_back({1.0, 0.5});
      a.agents.push_back({0, 4});
      a.bits_up.push_back({0, 8});
      a.bits_down.push_back({0, 8});
      a.final_theta.push_back(Eigen::Vector3d(static_cast<double>(run), static_cast<double>(name[0]), -1.0 / 3));
    }
    r.algorithms.push_back(a);
  }
  ASSERT_TRUE(WriteOutputs(r, dir_.string(), nullptr).ok());
  for (const AlgorithmResult& a : r.algorithms) {
    const std::string file = Slurp(dir_ / ("model_" + a.name + ".npy"));
    const Parsed p = ParseNpy(file);
    ASSERT_TRUE(p.ok) << a.name;
    EXPECT_EQ(p.rows, 2u);
    EXPECT_EQ(p.cols, 3u);
    ASSERT_EQ(file.size(), p.data_offset + 2 * 3 * 8);
    for (size_t run = 0; run < 2; ++run)
      for (size_t j = 0; j < 3; ++j)
        EXPECT_EQ(LittleEndianDouble(file, p.data_offset + 8 * (3 * run + j)), a.final_theta[run][j]);
  }
}

}  // namespace
}  // namespace fedrt::report
