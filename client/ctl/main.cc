// leasekeeper-ctl: the command line for leasekeeperd. Usage and exit codes:
// `leasekeeper-ctl --help`, `leasekeeper-ctl COMMAND --help`
// (client/ctl/arguments.h).
#include <grpc/support/log.h>

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
  // gRPC prints transport failures (a failed TLS handshake) on stderr by
  // itself; leasekeeper-ctl reports every failure in its own words and
  // format, so gRPC's lines are dropped unless GRPC_VERBOSITY asks for them.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {
    gpr_set_log_function([](gpr_log_func_args*) {});
  }
  const ParsedArguments parsed =
      ParseArguments(std::vector<std::string>(argv + 1, argv + argc));
  switch (parsed.action) {
    case ParsedArguments::Action::kPrintText:
      std::cout << parsed.text;
      return kExitOk;
    case ParsedArguments::Action::kUsageError:
      std::cerr << parsed.text;
      return kExitUsage;
    case ParsedArguments::Action::kExecute:
      break;
  }
  // The relay must exist before any other thread (gRPC's included) so that
  // they all inherit the blocked signals.
  std::optional<SignalRelay> relay;
  if (parsed.invocation.command == Command::kRun) relay.emplace();
  const int code = Execute(parsed.invocation, std::cout, std::cerr,
                           relay.has_value() ? &*relay : nullptr);
  std::cout.flush();
  return code;
}
