#include "client/ctl/commands.h"

#include <unistd.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/channel.h"
#include "client/client.h"
#include "client/ctl/output.h"
#include "client/errors.h"
#include "client/rpc_client.h"

namespace leasekeeper::ctl {
namespace {

using client::AcquireOutcome;
using client::CallOptions;
using client::ErrorReason;
using client::HasErrorReason;

std::string Describe(const absl::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ",
                      status.message());
}

int Fail(std::ostream& err, absl::string_view what,
         const absl::Status& status) {
  err << "leasekeeper-ctl: " << what << ": " << Describe(status) << "\n";
  return kExitError;
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

CallOptions Within(absl::Duration timeout) {
  CallOptions options;
  options.timeout = timeout;
  return options;
}

client::LockMode ModeOf(const Invocation& invocation) {
  return invocation.shared ? client::LockMode::kShared
                           : client::LockMode::kExclusive;
}

int Acquire(const Invocation& in, const client::RpcClient& rpc,
            std::ostream& out, std::ostream& err) {
  client::AcquireCall call;
  call.client_id = in.client_id;
  call.lock = in.lock;
  call.ttl = *in.ttl;
  call.mode = ModeOf(in);
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
    return Fail(err, absl::StrCat("acquire ", in.lock), result.status());
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
        return Fail(err,
                    absl::StrCat("withdraw the queued request for ", in.lock),
                    withdrawn.status());
      }
      out << FormatBusy(in.lock, in.client_id, result->position, in.output);
      return kExitBusy;
    }
    case AcquireOutcome::kWithdrawn:
      err << "leasekeeper-ctl: acquire " << in.lock
          << ": the wait was withdrawn by a release of " << in.client_id
          << "\n";
      return kExitError;
  }
  return kExitError;
}

int Run(const Invocation& in, std::ostream& err, SignalRelay* relay,
        const client::ChannelOptions& channel_options) {
  const std::string what = absl::StrCat("run ", in.lock);
  client::ClientOptions options;
  options.client_id = in.client_id;
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
  absl::StatusOr<std::unique_ptr<client::Client>> created =
      client::Client::Connect(in.server, channel_options, options);
  if (!created.ok()) return Fail(err, what, created.status());
  client::Client& locks = **created;

  client::AcquireOptions acquire_options;
  acquire_options.mode = ModeOf(in);
  acquire_options.stop = relay->interrupted();
  std::optional<client::Lease> lease;
  if (in.try_only) {
    absl::StatusOr<std::optional<client::Lease>> tried =
        locks.TryAcquire(in.lock, *in.ttl, acquire_options);
    if (!tried.ok()) return Fail(err, what, tried.status());
    if (!tried->has_value()) {
      err << "leasekeeper-ctl: " << in.lock << " is busy; not running "
          << in.command_line[0] << "\n";
      return kExitBusy;
    }
    lease.emplace(**std::move(tried));
  } else {
    absl::StatusOr<client::Lease> acquired = locks.Acquire(
        in.lock, *in.ttl, in.wait.value_or(absl::InfiniteDuration()),
        acquire_options);
    if (!acquired.ok()) {
      if (relay->interrupted().stop_requested()) {
        return 128 + relay->last_signal();
      }
      if (acquired.status().code() == absl::StatusCode::kDeadlineExceeded) {
        err << "leasekeeper-ctl: " << in.lock << " was not granted within "
            << absl::FormatDuration(*in.wait) << "; not running "
            << in.command_line[0] << "\n";
        return kExitBusy;
      }
      return Fail(err, what, acquired.status());
    }
    lease.emplace(*std::move(acquired));
  }

  const std::vector<std::pair<std::string, std::string>> environment = {
      {"LEASEKEEPER_LOCK", in.lock},
      {"LEASEKEEPER_FENCING_TOKEN", absl::StrCat(lease->token())},
      {"LEASEKEEPER_SERVER", in.server},
      {"LEASEKEEPER_CLIENT_ID", locks.client_id()},
  };
  absl::StatusOr<ChildExit> exit = RunChild(
      in.command_line, environment, lease->Ended(), in.kill_grace, relay);
  if (!exit.ok()) {
    (void)lease->Release();
    if (exit.status().code() == absl::StatusCode::kCancelled) {
      return 128 + relay->last_signal();
    }
    return Fail(err, what, exit.status());
  }
  if (!exit->start_error.empty()) {
    err << "leasekeeper-ctl: " << exit->start_error << "\n";
  }
  if (std::optional<client::LeaseEndReason> lost = lease->EndReason()) {
    err << "leasekeeper-ctl: lost the lease on " << in.lock << " (token "
        << lease->token() << "): " << client::LeaseEndReasonName(*lost)
        << (exit->stopped ? "; stopped " : "; ") << in.command_line[0]
        << (exit->stopped ? "" : " had exited") << "\n";
    return kExitError;
  }
  if (absl::Status released = lease->Release(); !released.ok()) {
    if (lease->EndReason() == client::LeaseEndReason::kReleased) {
      // Not confirmed by the server; it frees the lock with the session.
      err << "leasekeeper-ctl: warning: release of " << in.lock << ": "
          << Describe(released) << "\n";
    } else {
      err << "leasekeeper-ctl: the lease on " << in.lock
          << " was lost before the release ("
          << client::LeaseEndReasonName(*lease->EndReason()) << ")\n";
      return kExitError;
    }
  }
  return exit->exit_code;
}

}  // namespace

int Execute(const Invocation& in, std::ostream& out, std::ostream& err,
            SignalRelay* relay) {
  absl::StatusOr<client::ChannelOptions> channel_options = ChannelOptionsOf(in);
  if (!channel_options.ok()) {
    return Fail(err, "tls", channel_options.status());
  }
  if (in.command == Command::kRun) {
    return Run(in, err, relay, *channel_options);
  }
  const client::RpcClient rpc(client::MakeChannel(in.server, *channel_options));
  const CallOptions call = Within(in.timeout);
  switch (in.command) {
    case Command::kAcquire:
      return Acquire(in, rpc, out, err);
    case Command::kRenew: {
      absl::StatusOr<client::RenewResult> renewed =
          rpc.Renew(client::RenewCall{in.client_id, in.lock, *in.ttl,
                                      RandomRequestId(), ""},
                    call);
      if (!renewed.ok()) {
        return Fail(err, absl::StrCat("renew ", in.lock), renewed.status());
      }
      out << FormatRenewed(in.lock, in.client_id, *renewed, in.output);
      return kExitOk;
    }
    case Command::kRelease: {
      absl::StatusOr<client::ReleaseOutcome> released = rpc.Release(
          client::ReleaseCall{in.client_id, in.lock, RandomRequestId(), ""},
          call);
      if (!released.ok()) {
        return Fail(err, absl::StrCat("release ", in.lock), released.status());
      }
      out << FormatReleased(in.lock, in.client_id, *released, in.output);
      return kExitOk;
    }
    case Command::kWrite: {
      absl::Status written =
          rpc.Write(in.lock, in.key, in.value, in.token, call);
      if (!written.ok()) {
        return Fail(err, absl::StrCat("write ", in.lock, " ", in.key), written);
      }
      out << FormatWritten(in.lock, in.key, in.token, in.output);
      return kExitOk;
    }
    case Command::kRead: {
      absl::StatusOr<std::optional<std::string>> value =
          rpc.Read(in.lock, in.key, call);
      if (!value.ok()) {
        return Fail(err, absl::StrCat("read ", in.lock, " ", in.key),
                    value.status());
      }
      out << FormatRead(in.lock, in.key, *value, in.output);
      if (!value->has_value()) {
        if (in.output == OutputFormat::kTable) {
          err << "leasekeeper-ctl: nothing was written under (" << in.lock
              << ", " << in.key << ")\n";
        }
        return kExitError;
      }
      return kExitOk;
    }
    case Command::kInspect: {
      absl::StatusOr<client::LockInfo> info = rpc.Inspect(in.lock, call);
      if (!info.ok()) {
        return Fail(err, absl::StrCat("inspect ", in.lock), info.status());
      }
      out << FormatInspect(in.lock, *info, in.output);
      return kExitOk;
    }
    case Command::kStatus: {
      absl::StatusOr<client::ClientStatus> status =
          rpc.Status(in.client_id, call);
      if (!status.ok()) {
        return Fail(err, absl::StrCat("status ", in.client_id),
                    status.status());
      }
      out << FormatStatus(in.client_id, *status, in.output);
      return kExitOk;
    }
    case Command::kLocks: {
      constexpr size_t kMaxLocksListed = 100'000;
      absl::StatusOr<std::vector<client::LockSummary>> locks =
          rpc.ListAllLocks(in.prefix, kMaxLocksListed, call);
      if (!locks.ok()) return Fail(err, "locks", locks.status());
      out << FormatLocks(*locks, in.output);
      return kExitOk;
    }
    case Command::kRun:
      break;
  }
  return kExitError;  // unreachable: kRun returned above
}

}  // namespace leasekeeper::ctl
