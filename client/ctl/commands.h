// Runs one parsed leasekeeper-ctl invocation against the server and returns
// its exit code (see arguments.h for the codes).
//
// acquire/renew/release/write/read/inspect/status/locks are one call each
// (RpcClient, no session: an `acquire`d lease lasts its ttl unless renewed).
// `run` uses a Client: a session, background renewal, and a child process
// supervised under the lease (supervisor.h).
//
// Thread-safety: call from the main thread (run forks there).
#ifndef LEASEKEEPER_CLIENT_CTL_COMMANDS_H_
#define LEASEKEEPER_CLIENT_CTL_COMMANDS_H_

#include <ostream>

#include "client/ctl/arguments.h"
#include "client/ctl/supervisor.h"

namespace leasekeeper::ctl {

// Results go to `out`, problems to `err` ("leasekeeper-ctl: ..."). `relay`
// is required for Command::kRun and ignored otherwise.
int Execute(const Invocation& invocation, std::ostream& out, std::ostream& err,
            SignalRelay* relay);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_COMMANDS_H_
