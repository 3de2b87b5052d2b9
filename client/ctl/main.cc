// leasekeeper-ctl: the command line for leasekeeperd. Usage and exit codes:
// `leasekeeper-ctl --help` (client/ctl/arguments.cc).
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "client/ctl/arguments.h"
#include "client/ctl/commands.h"
#include "client/ctl/supervisor.h"

int main(int argc, char** argv) {
  using namespace leasekeeper::ctl;
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::optional<std::string> server_from_environment;
  if (const char* server = std::getenv("LEASEKEEPER_SERVER")) {
    server_from_environment = server;
  }
  absl::StatusOr<Invocation> invocation =
      ParseArguments(args, server_from_environment);
  if (!invocation.ok()) {
    std::cerr << "leasekeeper-ctl: " << invocation.status().message() << "\n\n"
              << Usage();
    return kExitUsage;
  }
  if (invocation->command == Command::kHelp) {
    std::cout << Usage();
    return kExitOk;
  }
  // The relay must exist before any other thread (gRPC's included) so that
  // they all inherit the blocked signals.
  std::optional<SignalRelay> relay;
  if (invocation->command == Command::kRun) relay.emplace();
  const int code = Execute(*invocation, std::cout, std::cerr,
                           relay.has_value() ? &*relay : nullptr);
  std::cout.flush();
  return code;
}
