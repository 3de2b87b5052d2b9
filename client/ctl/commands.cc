#include "client/ctl/commands.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/channel.h"
#include "client/client.h"
#include "client/ctl/certificate_identity.h"
#include "client/ctl/operator_calls.h"
#include "client/ctl/output.h"
#include "client/ctl/transport_probe.h"
#include "client/partition.h"
#include "client/errors.h"
#include "client/rpc_client.h"

namespace leasekeeper::ctl {
namespace {

using client::AcquireOutcome;
using client::CallOptions;
using client::ErrorReason;
using client::HasErrorReason;

CallOptions Within(absl::Duration timeout) {
  CallOptions options;
  options.timeout = timeout;
  return options;
}

std::string Describe(const absl::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ",
                      status.message());
}

// `status` with `message` instead of its own: same code, same reason
// payload (so ErrorReasonOf still answers).
absl::Status Reworded(const absl::Status& status, absl::string_view message) {
  absl::Status reworded(status.code(), message);
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    reworded.SetPayload(url, payload);
  });
  return reworded;
}

// UNAVAILABLE or CANCELLED without a server reason: what a call that lost
// its transport, or a stream the server ended, shows. The cause may be
// found by asking again.
bool IsUnexplainedTransportFailure(const absl::Status& status) {
  return (status.code() == absl::StatusCode::kUnavailable ||
          status.code() == absl::StatusCode::kCancelled) &&
         !client::ErrorReasonOf(status).has_value();
}

// Tells failures in the invocation's output format (output.h: text or a
// JSON object, both on stderr), in words where gRPC's are not enough.
class Reporter {
 public:
  Reporter(const Invocation& in, std::ostream& err) : in_(in), err_(err) {}

  // Prints the failure of `what`; returns kExitError.
  int Fail(const std::string& what, const absl::Status& status) const {
    err_ << FormatError(what, Explained(status), in_.output);
    return kExitError;
  }

  // A remark that is not a failure (why run did not start the job, a
  // warning), as a text line in either format.
  void Note(absl::string_view text) const {
    err_ << "leasekeeper-ctl: " << text << "\n";
  }

 private:
  // A transport failure (no server reason) may be a TLS mismatch: the
  // port (of a list, the first: a cluster's nodes are set up alike) is
  // asked what it speaks, and if it is the other protocol the message
  // says so.
  absl::Status Explained(const absl::Status& status) const {
    if (!IsUnexplainedTransportFailure(status)) return status;
    absl::StatusOr<std::vector<std::string>> endpoints =
        client::ParseEndpoints(in_.server);
    if (!endpoints.ok()) return status;
    std::optional<std::string> mismatch = ExplainTlsMismatch(
        endpoints->front(), in_.tls, std::min(in_.timeout, absl::Seconds(3)));
    if (!mismatch.has_value()) return status;
    return absl::UnavailableError(*mismatch);
  }

  const Invocation& in_;
  std::ostream& err_;
};

// A failure without a server reason (a stream the server ended) may hide
// a refusal of the client id itself (mutual TLS: the id does not belong to
// the certificate): a unary Status of that client, which the server
// authorizes the same way, answers PERMISSION_DENIED or UNAUTHENTICATED in
// words then. Otherwise `status` stays.
absl::Status ExplainRefusedClient(const client::RpcClient& rpc,
                                  const std::string& client_id,
                                  const absl::Status& status,
                                  absl::Duration timeout) {
  if (!IsUnexplainedTransportFailure(status)) return status;
  absl::StatusOr<client::ClientStatus> probe =
      rpc.Status(client_id, Within(timeout));
  if (probe.status().code() == absl::StatusCode::kPermissionDenied ||
      probe.status().code() == absl::StatusCode::kUnauthenticated) {
    return probe.status();
  }
  return status;
}

// CLIENT_BUSY says only that the client waits for some lock or already
// holds this one: the client's Status tells which, and the message names
// it ("already holds L (token N)"). Other failures, and a Status call that
// fails, leave `status` as it is.
absl::Status ExplainClientBusy(const client::RpcClient& rpc,
                               const std::string& client_id,
                               const std::string& lock,
                               const absl::Status& status,
                               absl::Duration timeout) {
  if (!HasErrorReason(status, ErrorReason::kClientBusy)) return status;
  absl::StatusOr<client::ClientStatus> current =
      rpc.Status(client_id, Within(timeout));
  if (!current.ok()) return status;
  for (const client::HolderInfo& holder : current->holds) {
    if (holder.lock == lock) {
      return Reworded(status, absl::StrCat(client_id, " already holds ", lock,
                                           " (token ", holder.token, ")"));
    }
  }
  if (current->waiting_for == lock) {
    return Reworded(status,
                    absl::StrCat(client_id, " already waits for ", lock));
  }
  if (!current->waiting_for.empty()) {
    return Reworded(status,
                    absl::StrCat(client_id, " waits for ", current->waiting_for,
                                 " (a client waits for one lock at a time)"));
  }
  return status;
}

std::string RandomRequestId() {
  absl::BitGen random;
  return absl::StrFormat("ctl-%016x", absl::Uniform<uint64_t>(random));
}

absl::StatusOr<client::ChannelOptions> ChannelOptionsOf(
    const Invocation& invocation) {
  client::ChannelOptions options;
  if (!invocation.tls) return options;
  absl::StatusOr<client::TlsOptions> tls =
      client::LoadTlsFiles(invocation.tls_ca_file, invocation.tls_cert_file,
                           invocation.tls_key_file);
  if (!tls.ok()) return tls.status();
  tls->server_name_override = invocation.tls_server_name;
  options.tls = *std::move(tls);
  return options;
}

client::LockMode ModeOf(const Invocation& invocation) {
  if (invocation.semaphore != 0) return client::LockMode::kSemaphore;
  return invocation.shared ? client::LockMode::kShared
                           : client::LockMode::kExclusive;
}

int Acquire(const Invocation& in, const client::RpcClient& rpc,
            std::ostream& out, const Reporter& report) {
  const std::string what = absl::StrCat("acquire ", in.lock);
  client::AcquireCall call;
  call.client_id = in.client_id;
  call.lock = in.lock;
  call.ttl = *in.ttl;
  call.mode = ModeOf(in);
  call.capacity = in.semaphore;
  call.wait = in.wait.value_or(absl::ZeroDuration());
  call.request_id = RandomRequestId();
  call.holder_label = in.label;
  absl::StatusOr<client::AcquireResult> result =
      rpc.Acquire(call, Within(call.wait + in.timeout));
  if (!result.ok()) {
    if (HasErrorReason(result.status(), ErrorReason::kWaitTimeout)) {
      out << FormatBusy(in.lock, in.client_id, 0, in.output);
      return kExitBusy;
    }
    return report.Fail(what, ExplainClientBusy(rpc, in.client_id, in.lock,
                                               result.status(), in.timeout));
  }
  switch (result->outcome) {
    case AcquireOutcome::kGranted:
      out << FormatAcquired(in.lock, in.client_id, call.mode, *result,
                            in.output);
      return kExitOk;
    case AcquireOutcome::kQueued: {
      // Not waiting means not staying in line: withdraw the request.
      absl::StatusOr<client::ReleaseOutcome> withdrawn = rpc.Release(
          client::ReleaseCall{in.client_id, in.lock, RandomRequestId(), ""},
          Within(in.timeout));
      if (!withdrawn.ok() &&
          !HasErrorReason(withdrawn.status(), ErrorReason::kNotHolder)) {
        return report.Fail(
            absl::StrCat("withdraw the queued request for ", in.lock),
            withdrawn.status());
      }
      out << FormatBusy(in.lock, in.client_id, result->position, in.output);
      return kExitBusy;
    }
    case AcquireOutcome::kWithdrawn:
      return report.Fail(
          what, absl::AbortedError(absl::StrCat(
                    "the wait was withdrawn by a release of ", in.client_id)));
  }
  return kExitError;
}

// A path the child can use from any working directory.
std::string AbsolutePath(const std::string& path) {
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.string();
}

// The job's environment: the lease, and how to reach the server the way
// this ctl did, so a leasekeeper-ctl inside the job (a fenced write) works
// without flags.
std::vector<std::pair<std::string, std::string>> JobEnvironment(
    const Invocation& in, const client::Lease& lease,
    const std::string& client_id) {
  std::vector<std::pair<std::string, std::string>> environment = {
      {"LEASEKEEPER_LOCK", in.lock},
      {"LEASEKEEPER_FENCING_TOKEN", absl::StrCat(lease.token())},
      {"LEASEKEEPER_SERVER", in.server},
      {"LEASEKEEPER_CLIENT_ID", client_id},
  };
  if (in.tls) environment.emplace_back("LEASEKEEPER_TLS", "1");
  for (const auto& [name, path] :
       {std::pair{"LEASEKEEPER_CA", &in.tls_ca_file},
        std::pair{"LEASEKEEPER_CERT", &in.tls_cert_file},
        std::pair{"LEASEKEEPER_KEY", &in.tls_key_file}}) {
    if (!path->empty()) environment.emplace_back(name, AbsolutePath(*path));
  }
  if (!in.tls_server_name.empty()) {
    environment.emplace_back("LEASEKEEPER_TLS_SERVER_NAME", in.tls_server_name);
  }
  return environment;
}

// The client id `run` uses: --client; under mutual TLS the certificate's
// identity, host and pid (an id the server allows for that certificate);
// otherwise empty (the library's default, host/pid/random).
absl::StatusOr<std::string> RunClientId(
    const Invocation& in, const client::ChannelOptions& channel_options) {
  if (!in.client_id.empty()) return in.client_id;
  if (!channel_options.tls.has_value() ||
      channel_options.tls->cert_chain.empty()) {
    return std::string();
  }
  absl::StatusOr<std::string> identity =
      CertificateIdentity(channel_options.tls->cert_chain);
  if (!identity.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(in.tls_cert_file, ": ",
                                                   identity.status().message(),
                                                   "; give --client"));
  }
  return ClientIdFor(*identity);
}

// The client `run` connects with: its id, and a holder label that names
// the host, the pid and the command unless --label gives one.
client::ClientOptions RunClientOptions(const Invocation& in,
                                       const std::string& client_id) {
  client::ClientOptions options;
  options.client_id = client_id;
  options.call_timeout = in.timeout;
  options.holder_label = in.label;
  if (options.holder_label.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    options.holder_label = absl::StrCat(host, " pid ", getpid(), ": ",
                                        absl::StrJoin(in.command_line, " "));
    if (options.holder_label.size() > client::kMaxHolderLabelBytes) {
      options.holder_label.resize(client::kMaxHolderLabelBytes);
    }
  }
  return options;
}

// The lease `run` runs its command under, or the exit code to end with
// (busy, interrupted, refused).
std::variant<client::Lease, int> AcquireForRun(const Invocation& in,
                                               const std::string& what,
                                               client::Client& locks,
                                               const Reporter& report,
                                               SignalRelay* relay) {
  // Explained by asking the server: a CLIENT_BUSY refusal (see
  // ExplainClientBusy), and a session the server refused, which the
  // library sees only as a broken stream.
  auto refused = [&](const absl::Status& status) {
    const client::RpcClient& rpc = locks.rpc();
    return report.Fail(
        what, ExplainClientBusy(rpc, locks.client_id(), in.lock,
                                ExplainRefusedClient(rpc, locks.client_id(),
                                                     status, in.timeout),
                                in.timeout));
  };
  client::AcquireOptions acquire_options;
  acquire_options.mode = ModeOf(in);
  acquire_options.capacity = in.semaphore;
  acquire_options.stop = relay->interrupted();
  if (in.try_only) {
    absl::StatusOr<std::optional<client::Lease>> tried =
        locks.TryAcquire(in.lock, *in.ttl, acquire_options);
    if (!tried.ok()) return refused(tried.status());
    if (!tried->has_value()) {
      report.Note(
          absl::StrCat(in.lock, " is busy; not running ", in.command_line[0]));
      return kExitBusy;
    }
    return **std::move(tried);
  }
  absl::StatusOr<client::Lease> acquired = locks.Acquire(
      in.lock, *in.ttl, in.wait.value_or(absl::InfiniteDuration()),
      acquire_options);
  if (acquired.ok()) return *std::move(acquired);
  if (relay->interrupted().stop_requested()) {
    return 128 + relay->last_signal();
  }
  if (acquired.status().code() == absl::StatusCode::kDeadlineExceeded) {
    report.Note(absl::StrCat(in.lock, " was not granted within ",
                             absl::FormatDuration(*in.wait), "; not running ",
                             in.command_line[0]));
    return kExitBusy;
  }
  return refused(acquired.status());
}

// `run`'s exit code once its command has ended: the command's, unless the
// lease was lost meanwhile or its release shows it was.
int EndRun(const Invocation& in, const std::string& what,
           const Reporter& report, client::Lease& lease,
           const ChildExit& exit) {
  if (std::optional<client::LeaseEndReason> lost = lease.EndReason()) {
    return report.Fail(
        what, absl::AbortedError(absl::StrCat(
                  "lost the lease on ", in.lock, " (token ", lease.token(),
                  "): ", client::LeaseEndReasonName(*lost),
                  exit.stopped ? "; stopped " : "; ", in.command_line[0],
                  exit.stopped ? "" : " had exited")));
  }
  if (absl::Status released = lease.Release(); !released.ok()) {
    if (lease.EndReason() == client::LeaseEndReason::kReleased) {
      // Not confirmed by the server; it frees the lock with the session.
      report.Note(absl::StrCat("warning: release of ", in.lock, ": ",
                               Describe(released)));
    } else {
      return report.Fail(
          what, absl::AbortedError(absl::StrCat(
                    "the lease on ", in.lock, " was lost before the release (",
                    client::LeaseEndReasonName(*lease.EndReason()), ")")));
    }
  }
  return exit.exit_code;
}

int Run(const Invocation& in, const Reporter& report, SignalRelay* relay,
        const client::ChannelOptions& channel_options) {
  const std::string what = absl::StrCat("run ", in.lock);
  absl::StatusOr<std::string> client_id = RunClientId(in, channel_options);
  if (!client_id.ok()) return report.Fail(what, client_id.status());
  absl::StatusOr<std::unique_ptr<client::Client>> created =
      client::Client::Connect(in.server, channel_options,
                              RunClientOptions(in, *client_id));
  if (!created.ok()) return report.Fail(what, created.status());
  client::Client& locks = **created;
  std::variant<client::Lease, int> acquired =
      AcquireForRun(in, what, locks, report, relay);
  if (const int* exit_code = std::get_if<int>(&acquired)) return *exit_code;
  client::Lease& lease = std::get<client::Lease>(acquired);

  absl::StatusOr<ChildExit> exit =
      RunChild(in.command_line, JobEnvironment(in, lease, locks.client_id()),
               lease.Ended(), in.kill_grace, relay);
  if (!exit.ok()) {
    (void)lease.Release();
    if (exit.status().code() == absl::StatusCode::kCancelled) {
      return 128 + relay->last_signal();
    }
    return report.Fail(what, exit.status());
  }
  if (!exit->start_error.empty()) report.Note(exit->start_error);
  return EndRun(in, what, report, lease, *exit);
}

// Prints each message as it arrives, flushed so that a pipe sees it at
// once, until --count changes or the stream ends (the server cut it, or
// stopped).
int Watch(const Invocation& in, const client::RpcClient& rpc,
          std::ostream& out, const Reporter& report) {
  const std::string name = in.watch_prefix ? in.prefix : in.lock;
  int64_t changes = 0;
  absl::Status ended = rpc.Watch(
      client::WatchCall{.name = name,
                        .prefix = in.watch_prefix,
                        .open_within = in.timeout},
      [&](const client::WatchUpdate& update) {
        out << FormatWatchUpdate(update, in.output) << std::flush;
        if (update.kind == client::WatchUpdate::Kind::kEvent) ++changes;
        return in.count == 0 || changes < in.count;
      },
      Within(absl::InfiniteDuration()));
  if (!ended.ok()) {
    return report.Fail(
        absl::StrCat("watch ", in.watch_prefix ? "--prefix " : "", name),
        ended);
  }
  return kExitOk;
}

int Version(const Invocation& in, const client::RpcClient& rpc,
            std::ostream& out, const Reporter& report) {
  absl::StatusOr<ServerInfo> info = GetServerInfo(rpc, in.timeout);
  out << FormatVersion(in.server, info, in.output);
  if (!info.ok())
    return report.Fail(absl::StrCat("ask ", in.server), info.status());
  return kExitOk;
}

int Renew(const Invocation& in, const client::RpcClient& rpc, std::ostream& out,
          const Reporter& report) {
  absl::StatusOr<client::RenewResult> renewed = rpc.Renew(
      client::RenewCall{in.client_id, in.lock, *in.ttl, RandomRequestId(), ""},
      Within(in.timeout));
  if (!renewed.ok()) {
    return report.Fail(absl::StrCat("renew ", in.lock), renewed.status());
  }
  out << FormatRenewed(in.lock, in.client_id, *renewed, in.output);
  return kExitOk;
}

int Release(const Invocation& in, const client::RpcClient& rpc,
            std::ostream& out, const Reporter& report) {
  absl::StatusOr<client::ReleaseOutcome> released = rpc.Release(
      client::ReleaseCall{in.client_id, in.lock, RandomRequestId(), ""},
      Within(in.timeout));
  if (!released.ok()) {
    return report.Fail(absl::StrCat("release ", in.lock), released.status());
  }
  out << FormatReleased(in.lock, in.client_id, *released, in.output);
  return kExitOk;
}

// The lease holder a write or delete names: --client, else
// $LEASEKEEPER_CLIENT_ID (which run sets); empty if neither.
std::string HolderOf(const Invocation& in) {
  if (!in.client_id.empty()) return in.client_id;
  const char* env = std::getenv("LEASEKEEPER_CLIENT_ID");
  return env != nullptr ? env : "";
}

// The usage error of a write or delete without a holder.
int NoHolder(const Invocation& in, const std::string& command,
             std::ostream& err) {
  err << FormatUsageError(command,
                          "needs --client ID (the lease holder; run sets "
                          "LEASEKEEPER_CLIENT_ID)",
                          in.output);
  return kExitUsage;
}

// A holder-checked write, as the client library makes it.
int Write(const Invocation& in, const client::RpcClient& rpc, std::ostream& out,
          std::ostream& err, const Reporter& report) {
  const std::string writer = HolderOf(in);
  if (writer.empty()) return NoHolder(in, "write", err);
  absl::Status written = rpc.Write(client::WriteCall{.lock = in.lock,
                                                     .key = in.key,
                                                     .value = in.value,
                                                     .token = in.token,
                                                     .client_id = writer,
                                                     .require_held = true},
                                   Within(in.timeout));
  if (!written.ok()) {
    return report.Fail(absl::StrCat("write ", in.lock, " ", in.key), written);
  }
  out << FormatWritten(in.lock, in.key, in.token, in.output);
  return kExitOk;
}

int Read(const Invocation& in, const client::RpcClient& rpc, std::ostream& out,
         const Reporter& report) {
  absl::StatusOr<std::optional<std::string>> value =
      rpc.Read(in.lock, in.key, Within(in.timeout));
  if (!value.ok()) {
    return report.Fail(absl::StrCat("read ", in.lock, " ", in.key),
                       value.status());
  }
  out << FormatRead(in.lock, in.key, *value, in.output);
  if (!value->has_value()) {
    // The JSON says "found": false; people get a line.
    if (in.output == OutputFormat::kTable)
      report.Note(absl::StrCat("nothing was written under (", in.lock, ", ",
                               in.key, ")"));
    return kExitError;
  }
  return kExitOk;
}

// A holder-checked delete (always: the server refuses any other).
int Delete(const Invocation& in, const client::RpcClient& rpc,
           std::ostream& out, std::ostream& err, const Reporter& report) {
  const std::string holder = HolderOf(in);
  if (holder.empty()) return NoHolder(in, "delete", err);
  absl::StatusOr<bool> existed =
      rpc.Delete(client::DeleteCall{.lock = in.lock,
                                    .key = in.key,
                                    .token = in.token,
                                    .client_id = holder},
                 Within(in.timeout));
  if (!existed.ok()) {
    return report.Fail(absl::StrCat("delete ", in.lock, " ", in.key),
                       existed.status());
  }
  out << FormatDeleted(in.lock, in.key, in.token, *existed, in.output);
  return kExitOk;
}

int Keys(const Invocation& in, const client::RpcClient& rpc, std::ostream& out,
         const Reporter& report) {
  absl::StatusOr<client::KeysPage> page =
      rpc.ListKeys(in.lock, in.after, in.limit, Within(in.timeout));
  if (!page.ok()) {
    return report.Fail(absl::StrCat("keys ", in.lock), page.status());
  }
  out << FormatKeys(in.lock, *page, in.output);
  if (in.output == OutputFormat::kTable && !page->next_after.empty()) {
    report.Note(absl::StrCat("more keys follow: --after ",
                             page->next_after));
  }
  return kExitOk;
}

int Inspect(const Invocation& in, const client::RpcClient& rpc,
            std::ostream& out, const Reporter& report) {
  absl::StatusOr<client::LockInfo> info =
      rpc.Inspect(in.lock, Within(in.timeout));
  if (!info.ok()) {
    return report.Fail(absl::StrCat("inspect ", in.lock), info.status());
  }
  out << FormatInspect(in.lock, *info, in.output);
  return kExitOk;
}

int ShowStatus(const Invocation& in, const client::RpcClient& rpc,
               std::ostream& out, const Reporter& report) {
  absl::StatusOr<client::ClientStatus> status =
      rpc.Status(in.client_id, Within(in.timeout));
  if (!status.ok()) {
    return report.Fail(absl::StrCat("status ", in.client_id), status.status());
  }
  out << FormatStatus(in.client_id, *status, in.output);
  return kExitOk;
}

int ShowLocks(const Invocation& in, const client::RpcClient& rpc,
              std::ostream& out, const Reporter& report) {
  constexpr size_t kMaxLocksListed = 100'000;
  absl::StatusOr<std::vector<client::LockSummary>> locks =
      rpc.ListAllLocks(in.prefix, kMaxLocksListed, Within(in.timeout));
  if (!locks.ok()) return report.Fail("locks", locks.status());
  out << FormatLocks(*locks, in.output);
  return kExitOk;
}

int ForceReleaseLock(const Invocation& in, const client::RpcClient& rpc,
                     std::ostream& out, const Reporter& report) {
  absl::StatusOr<std::vector<ForcedRelease>> released =
      ForceRelease(rpc, in.lock, in.holder, in.reason, in.timeout);
  if (!released.ok()) {
    return report.Fail(absl::StrCat("force-release ", in.lock),
                       released.status());
  }
  out << FormatForceReleased(in.lock, *released, in.output);
  return kExitOk;
}

// Health is asked of every --server endpoint at once; the service is up if
// any node serves it. One node that cannot be asked is a failure like any
// other call's; of several, each is reported on its line.
int Health(const Invocation& in, const client::ChannelOptions& channel_options,
           std::ostream& out, const Reporter& report) {
  absl::StatusOr<std::vector<std::string>> endpoints =
      client::ParseEndpoints(in.server);
  if (!endpoints.ok()) return report.Fail("--server", endpoints.status());
  std::vector<std::future<absl::StatusOr<HealthStatus>>> asked;
  for (const std::string& endpoint : *endpoints) {
    asked.push_back(std::async(std::launch::async, [&, endpoint] {
      return CheckHealth(client::MakeChannel(endpoint, channel_options),
                         in.service, in.timeout);
    }));
  }
  std::vector<NodeHealth> nodes;
  for (size_t i = 0; i < asked.size(); ++i) {
    nodes.push_back(NodeHealth{(*endpoints)[i], asked[i].get()});
  }
  if (nodes.size() == 1 && !nodes[0].status.ok()) {
    return report.Fail(absl::StrCat("health of ", in.server),
                       nodes[0].status.status());
  }
  out << FormatHealth(in.server, in.service, nodes, in.output);
  return OverallHealth(nodes) == HealthStatus::kServing ? kExitOk : kExitError;
}

int ShowClusterStatus(const Invocation& in, const client::RpcClient& rpc,
                      std::ostream& out, const Reporter& report) {
  absl::StatusOr<client::ClusterInfo> info =
      rpc.ClusterStatus(Within(in.timeout));
  if (!info.ok()) return report.Fail("cluster status", info.status());
  out << FormatClusterStatus(*info, in.output);
  return kExitOk;
}

}  // namespace

int Execute(const Invocation& in, std::ostream& out, std::ostream& err,
            SignalRelay* relay) {
  const Reporter report(in, err);
  absl::StatusOr<client::ChannelOptions> channel_options = ChannelOptionsOf(in);
  if (!channel_options.ok()) {
    return report.Fail("tls", channel_options.status());
  }
  if (in.command == Command::kRun) {
    return Run(in, report, relay, *channel_options);
  }
  if (in.command == Command::kPartitionOf) {
    const uint32_t partition =
        in.consistent ? client::ConsistentPartitionOf(in.key, in.partitions)
                      : client::PartitionOf(in.key, in.partitions);
    out << FormatPartition(in.key, in.partitions, in.consistent, partition,
                           in.output);
    return kExitOk;
  }
  absl::StatusOr<std::unique_ptr<client::RpcClient>> connected =
      client::RpcClient::Connect(in.server, *channel_options);
  if (!connected.ok()) return report.Fail("--server", connected.status());
  const client::RpcClient& rpc = **connected;
  switch (in.command) {
    case Command::kAcquire:
      return Acquire(in, rpc, out, report);
    case Command::kRenew:
      return Renew(in, rpc, out, report);
    case Command::kRelease:
      return Release(in, rpc, out, report);
    case Command::kWrite:
      return Write(in, rpc, out, err, report);
    case Command::kRead:
      return Read(in, rpc, out, report);
    case Command::kDelete:
      return Delete(in, rpc, out, err, report);
    case Command::kKeys:
      return Keys(in, rpc, out, report);
    case Command::kInspect:
      return Inspect(in, rpc, out, report);
    case Command::kStatus:
      return ShowStatus(in, rpc, out, report);
    case Command::kLocks:
      return ShowLocks(in, rpc, out, report);
    case Command::kForceRelease:
      return ForceReleaseLock(in, rpc, out, report);
    case Command::kVersion:
      return Version(in, rpc, out, report);
    case Command::kHealth:
      return Health(in, *channel_options, out, report);
    case Command::kClusterStatus:
      return ShowClusterStatus(in, rpc, out, report);
    case Command::kWatch:
      return Watch(in, rpc, out, report);
    case Command::kRun:
    case Command::kPartitionOf:
      break;
  }
  return kExitError;  // unreachable: kRun and kPartitionOf returned above
}

}  // namespace leasekeeper::ctl
