// Scratch files for the storage fuzzers and their seed generator: a
// private directory on tmpfs when there is one (fsync there costs nothing,
// so a fuzzer that writes and syncs files stays fast), and whole-file reads
// and writes that abort on failure (a fuzzer has no caller to report to).
// Scratch directories go when the process exits normally.
//
// Thread-safety: none needed; each fuzzer process runs one input at a time.
#ifndef LEASEKEEPER_TESTS_FUZZ_FUZZ_FILES_H_
#define LEASEKEEPER_TESTS_FUZZ_FUZZ_FILES_H_

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/string_view.h"

namespace leasekeeper::fuzz {

[[noreturn]] inline void Die(absl::string_view what) {
  std::fprintf(stderr, "fuzzer: %.*s\n", static_cast<int>(what.size()),
               what.data());
  std::abort();
}

// The scratch directories made so far; removed when the process exits
// normally (one that aborts leaves them for inspection).
inline std::vector<std::string>& ScratchDirs() {
  static auto* dirs = new std::vector<std::string>;
  return *dirs;
}

inline void RemoveScratchDirs() {
  for (const std::string& dir : ScratchDirs()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
}

// A fresh directory, /dev/shm/<tag>-XXXXXX if /dev/shm exists, else under
// $TMPDIR or /tmp. Each fuzzer makes one and reuses it for every input.
inline std::string MakeScratchDir(const char* tag) {
  std::string base = "/dev/shm";
  if (!std::filesystem::is_directory(base)) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp != nullptr ? tmp : "/tmp";
  }
  std::string pattern = base + "/" + tag + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) Die("mkdtemp failed");
  if (ScratchDirs().empty()) std::atexit(RemoveScratchDirs);
  ScratchDirs().push_back(pattern);
  return pattern;
}

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("cannot read a scratch file");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void WriteWholeFile(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) Die("cannot write a scratch file");
}

// Empties `dir` (which stays).
inline void ClearDir(const std::string& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::filesystem::remove_all(entry.path());
  }
}

}  // namespace leasekeeper::fuzz

#endif  // LEASEKEEPER_TESTS_FUZZ_FUZZ_FILES_H_
