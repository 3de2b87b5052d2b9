// leasekeeper-replay: reads one JSON array of operations on stdin, prints the
// JSON array of results on stdout and exits 0. Input that is not JSON, or not
// a top-level array, gets a message on stderr and exit code 2.
#include <iostream>
#include <iterator>
#include <string>

#include "replay/replay.h"

int main() {
  std::ios::sync_with_stdio(false);
  const std::string input((std::istreambuf_iterator<char>(std::cin)),
                          std::istreambuf_iterator<char>());
  absl::StatusOr<std::string> output = leasekeeper::RunReplayText(input);
  if (!output.ok()) {
    std::cerr << "leasekeeper-replay: " << output.status().message() << "\n";
    return 2;
  }
  std::cout << *output << "\n";
  return 0;
}
