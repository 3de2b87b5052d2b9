// What leasekeeper-ctl prints: aligned tables for people, one JSON object
// per command (on one line) for scripts. Every function returns the text,
// ending with a newline, so the tests compare strings. Each function's
// comment gives its JSON shape; durations are in milliseconds, as the API
// has them. Strings that are not UTF-8 (values are bytes) have the bad
// bytes replaced by U+FFFD in JSON; the table form prints them as they are.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_CLIENT_CTL_OUTPUT_H_
#define LEASEKEEPER_CLIENT_CTL_OUTPUT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/ctl/arguments.h"
#include "client/ctl/operator_calls.h"
#include "client/rpc_client.h"

namespace leasekeeper::ctl {

// Rows of cells as columns aligned by two spaces; the first row is the
// header. Trailing spaces are trimmed.
std::string RenderTable(const std::vector<std::vector<std::string>>& rows);

// JSON: {"lock","client","acquired":true,"token","ttl_ms","waited_ms",
// "mode","aborted_clients"}.
std::string FormatAcquired(const std::string& lock, const std::string& client,
                           client::LockMode mode,
                           const client::AcquireResult& result,
                           OutputFormat format);
// `position` 0: unknown (the wait timed out).
// JSON: {"lock","client","acquired":false,"busy":true,"position"}.
std::string FormatBusy(const std::string& lock, const std::string& client,
                       int64_t position, OutputFormat format);
// JSON: {"lock","client","token","ttl_ms"}.
std::string FormatRenewed(const std::string& lock, const std::string& client,
                          const client::RenewResult& result,
                          OutputFormat format);
// JSON: {"lock","client","result":"released"|"withdrawn"}.
std::string FormatReleased(const std::string& lock, const std::string& client,
                           client::ReleaseOutcome outcome, OutputFormat format);
// JSON: {"lock","key","token","accepted":true}.
std::string FormatWritten(const std::string& lock, const std::string& key,
                          client::FencingToken token, OutputFormat format);
// Table form: the value and a newline; nothing when not found.
// JSON: {"lock","key","found","value"}, value null when not found.
std::string FormatRead(const std::string& lock, const std::string& key,
                       const std::optional<std::string>& value,
                       OutputFormat format);
// Table form: "deleted LOCK KEY with token N", or "nothing to delete under
// LOCK KEY (token N)" when the key had no value.
// JSON: {"lock","key","token","existed"}.
std::string FormatDeleted(const std::string& lock, const std::string& key,
                          client::FencingToken token, bool existed,
                          OutputFormat format);
// Table form: the keys, one a line (nothing for none).
// JSON: {"lock","keys":[...],"next_after"}, next_after null on the last
// page.
std::string FormatKeys(const std::string& lock, const client::KeysPage& page,
                       OutputFormat format);
// JSON: {"lock","capacity","holders":[holder],"queue":[waiter]}; capacity
// a semaphore's, else null. A holder is {"client","lock","mode","token",
// "expires_in_ms","expires_at","label"} (expires_at: the server's
// wall-clock rendering, RFC 3339, or null; for people only, never compute
// with it); a waiter is {"client","mode","ttl_ms","position","label"}.
std::string FormatInspect(const std::string& lock, const client::LockInfo& info,
                          OutputFormat format);
// JSON: {"client","registered","age","session","waiting_for","holds"}.
std::string FormatStatus(const std::string& client_id,
                         const client::ClientStatus& status,
                         OutputFormat format);
// JSON: {"locks":[{"lock","capacity","holders":[holder],"queue_length"}]},
// capacity and holder as in FormatInspect.
std::string FormatLocks(const std::vector<client::LockSummary>& locks,
                        OutputFormat format);
// JSON: {"lock","released":[{"client","token","mode"}]}.
std::string FormatForceReleased(const std::string& lock,
                                const std::vector<ForcedRelease>& released,
                                OutputFormat format);

// One message of a Watch stream. Table form, one line each:
//   current LOCK holder CLIENT MODE token=T expires_in=D
//   current LOCK waiter CLIENT MODE position=P ttl=D
//   synced sequence=S locks=N
//   TIME #SEQ KIND LOCK CLIENT MODE [token=T] [ttl=D]
// JSON, one object per line: {"current":{"lock","holders":[holder],
// "queue":[waiter]}} per lock of the snapshot (as in FormatInspect), then
// {"synced":{"sequence","locks"}}, then per change {"event":{"kind","lock",
// "client","mode","token","ttl_ms","time","sequence"}}; kind "granted",
// "queued", "released", "lapsed", "withdrawn", "forced-release" or
// "deadlock-abort"; time the server's wall-clock rendering or null.
std::string FormatWatchUpdate(const client::WatchUpdate& update,
                              OutputFormat format);

// `server` is the address asked; `info` its answer, or the failure to get
// it (then the JSON has "server": null and the table only the client's
// line: the failure is for FormatError).
// JSON: {"client":{"version","commit","grpc_version"},"server":{"address",
// "version","commit","grpc_version","uptime_ms"}}, server null when not
// reached.
std::string FormatVersion(const std::string& server,
                          const absl::StatusOr<ServerInfo>& info,
                          OutputFormat format);

// One node's answer to `health`, or the failure to get it.
struct NodeHealth {
  std::string server;  // the address asked
  absl::StatusOr<HealthStatus> status;
};

// The status of a service that `nodes` serve together: SERVING if any
// node serves, else NOT_SERVING or UNKNOWN if any node answered so (in
// that order); nullopt if no node answered.
std::optional<HealthStatus> OverallHealth(const std::vector<NodeHealth>& nodes);

// `health` of the nodes of `server` (the --server list), each asked about
// `service`; "status" is OverallHealth. Table form: one node, its status name; several,
// one line per node, "ADDRESS  STATUS" or "ADDRESS  error: CODE: MESSAGE".
// JSON: {"server","service","status","nodes":[{"server","status",
// "error"}]}, status "SERVING", "NOT_SERVING", "UNKNOWN" or null, error the
// failure's "CODE: MESSAGE" or null. REQUIRES: !nodes.empty().
std::string FormatHealth(const std::string& server, const std::string& service,
                         const std::vector<NodeHealth>& nodes,
                         OutputFormat format);

// `cluster status` as the node asked answered it (`info`).
// JSON: {"cluster","node","role","leader":{"id","address"} or null,"epoch",
// "last_position","members":[{"node","address","role","applied_position",
// "lag"}]}.
// partition-of: the partition alone (a line), or under -o json
// {"key", "count", "scheme": "modulo"|"consistent", "partition"}.
std::string FormatPartition(const std::string& key, uint32_t count,
                            bool consistent, uint32_t partition,
                            OutputFormat format);

std::string FormatClusterStatus(const client::ClusterInfo& info,
                                OutputFormat format);

// A failed operation (`what`, e.g. "acquire L"): the table form is
// "leasekeeper-ctl: WHAT: CODE: MESSAGE"; the JSON form is
// {"error":{"code","reason","message"}} (without `what`: the caller knows
// what it ran), code the gRPC code's name ("FAILED_PRECONDITION"), reason
// the server's ErrorReason name ("CLIENT_BUSY") or null. Either goes on
// stderr; stdout stays empty. REQUIRES: !status.ok().
std::string FormatError(const std::string& what, const absl::Status& status,
                        OutputFormat format);

// A usage error (exit 2) in `command` ("acquire"; "" when no command was
// recognised): the table form is two lines, "leasekeeper-ctl COMMAND:
// PROBLEM" and "run 'leasekeeper-ctl COMMAND --help' for its usage"; the
// JSON form is FormatError's object for INVALID_ARGUMENT with the problem
// as message and "usage": "leasekeeper-ctl COMMAND --help".
std::string FormatUsageError(const std::string& command,
                             const std::string& problem, OutputFormat format);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_OUTPUT_H_
