// Runs one parsed leasekeeper-ctl invocation against the server and returns
// its exit code (see arguments.h for the codes).
//
// acquire/renew/release/write/read/inspect/status/locks/force-release/
// version/health are one call each (RpcClient or operator_calls.h, no
// session: an `acquire`d lease lasts its ttl unless renewed); `watch` is one
// stream, printed line by line as it comes, with no deadline. Failures are printed in
// the output format (output.h's FormatError), with two explanations gRPC
// does not give: a TLS mismatch between the ctl and the port
// (transport_probe.h), and which lock a CLIENT_BUSY client holds or waits
// for (one Status call, made only after such a refusal).
// `run` uses a Client: a session, background renewal, and a child process
// supervised under the lease (supervisor.h). Under mutual TLS its default
// client id is "<certificate identity>/<host>/<pid>"
// (certificate_identity.h), and the job gets the TLS flags as
// LEASEKEEPER_TLS/_CA/_CERT/_KEY/_TLS_SERVER_NAME (absolute paths).
//
// Thread-safety: call from the main thread (run forks there).
#ifndef LEASEKEEPER_CLIENT_CTL_COMMANDS_H_
#define LEASEKEEPER_CLIENT_CTL_COMMANDS_H_

#include <ostream>

#include "client/ctl/arguments.h"
#include "client/ctl/supervisor.h"

namespace leasekeeper::ctl {

// Results go to `out`, problems to `err` (text, or one JSON object with
// -o json). `relay`
// is required for Command::kRun and ignored otherwise.
int Execute(const Invocation& invocation, std::ostream& out, std::ostream& err,
            SignalRelay* relay);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_COMMANDS_H_
