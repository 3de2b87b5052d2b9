// Runs one parsed leasekeeper-ctl invocation against the server and returns
// its exit code (kExit* in arguments.h).
//
// Thread-safety: call from the main thread (run forks there).
#ifndef LEASEKEEPER_CLIENT_CTL_COMMANDS_H_
#define LEASEKEEPER_CLIENT_CTL_COMMANDS_H_

#include <ostream>

#include "client/ctl/arguments.h"
#include "client/ctl/supervisor.h"

namespace leasekeeper::ctl {

// acquire/renew/release/write/read/delete/keys/inspect/status/locks/
// force-release/version/health are one call each (RpcClient or
// operator_calls.h, no session: an `acquire`d lease lasts its ttl unless
// renewed); `watch` is one
// stream, printed line by line as it comes, with no deadline. `run` uses a
// Client (a session, background renewal) and runs the command under the
// lease (RunChild). Under mutual TLS its default client id is
// "<certificate identity>/<host>/<pid>" (certificate_identity.h), and the
// job gets the TLS flags as LEASEKEEPER_TLS/_CA/_CERT/_KEY/_TLS_SERVER_NAME
// (absolute paths).
// Results go to `out`, problems to `err` (text, or one JSON object with
// -o json, output.h's FormatError), with two explanations gRPC does not
// give: a TLS mismatch between the ctl and the port (transport_probe.h),
// and which lock a CLIENT_BUSY client holds or waits for (one Status call,
// made only after such a refusal). REQUIRES: `relay` is set for
// Command::kRun (ignored otherwise).
int Execute(const Invocation& invocation, std::ostream& out, std::ostream& err,
            SignalRelay* relay);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_COMMANDS_H_
