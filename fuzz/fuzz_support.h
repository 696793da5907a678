#pragma once
// Shared by the fuzz targets: a private temporary folder per process (removed at exit) and a
// way to cut the input into the pieces a target needs.

#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::fuzz {

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "attnscope-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) abort();
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// One folder for the process's life; libFuzzer runs every input in the same process.
inline const ScratchDir& scratch() {
  static ScratchDir dir;
  return dir;
}

inline void writeFile(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) abort();  // the scratch folder must be writable; anything else is not the input's fault
}

// "a\0b\0c" -> {"a", "b", "c"}: the command line a fuzzer input stands for.
inline std::vector<std::string> splitNul(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find('\0', start);
    const size_t stop = end == std::string_view::npos ? text.size() : end;
    out.emplace_back(text.substr(start, stop - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace attnscope::fuzz
