#pragma once
// Shared by the reader tests: temporary files from bytes, the golden data directory, and the
// message of the strider::Error a call throws.
#include <gtest/gtest.h>
#include <strider/strider.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

namespace strider::testing {

inline std::string data_path(const std::string& rel) { return std::string(STRIDER_IO_DATA_DIR) + "/" + rel; }

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strider_reader_" + std::to_string(::getpid()) + "_" + name)).string();
}

inline std::string write_file(const std::string& name, const std::string& bytes) {
  const std::string p = temp_path(name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The message of the strider::Error `fn` throws; a failure when it throws nothing.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a strider::Error";
  return "";
}

inline std::vector<int64_t> int_values(const Tensor& t) {
  Tensor l = t.to(kLong).contiguous();
  return std::vector<int64_t>(l.data_ptr<int64_t>(), l.data_ptr<int64_t>() + l.numel());
}

}  // namespace strider::testing
