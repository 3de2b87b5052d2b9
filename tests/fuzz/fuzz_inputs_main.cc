// A main for a fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput
// once on every file of each directory given (a directory that does not
// exist counts as empty), in name order, so that ctest replays the kept
// corpus and regression inputs with any compiler. A broken invariant
// aborts, as under libFuzzer; the exit status is otherwise 0.
//
// Usage: <target>_inputs DIR...
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::filesystem::is_directory(argv[i])) continue;
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(argv[i])) {
      if (entry.is_regular_file()) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      std::fprintf(stderr, "replaying %s\n", file.c_str());
      const std::string bytes = leasekeeper::fuzz::ReadWholeFile(file);
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                             bytes.size());
      ++replayed;
    }
  }
  std::printf("%zu inputs replayed without a failure\n", replayed);
  return 0;
}
