#include "server/lock_service.h"

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "server/convert.h"
#include "server/grpc_status.h"
#include "server/limit_checks.h"
#include "server/server_errors.h"
#include "server/session_reactor.h"
#include "server/watch_stream.h"
#include "spdlog/spdlog.h"
#include "version/version.h"

namespace leasekeeper::server {
namespace {

namespace pb = ::leasekeeper::v1;

// The peer of a call, as its transport proved it.
security::PeerIdentity PeerOf(grpc::CallbackServerContext* context) {
  return security::PeerIdentityFromAuthContext(context->auth_context().get());
}

// Acquire, Renew, Release: the caller acts as its own client and is granted
// the lock (security/authorizer.h). Checked before validation, so a caller
// without access learns nothing about the request's shape.
absl::Status AuthorizeLockCall(const security::Authorizer& authorizer,
                               grpc::CallbackServerContext* context,
                               const std::string& client,
                               const std::string& lock) {
  const security::PeerIdentity peer = PeerOf(context);
  if (absl::Status s = authorizer.CheckActAs(peer, client); !s.ok()) return s;
  return authorizer.CheckUseLock(peer, lock);
}

grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(PrepareFinish(context, status));
  return reactor;
}

template <typename T>
absl::Status StatusOf(const absl::StatusOr<T>& answer) {
  return answer.status();
}

// The completion of a unary call (CoreOwner's, run once the answer is
// durable): `fill` writes an OK answer into the response, then the call
// finishes with the answer's status. No thread waits for the disk: it runs
// on the store's flusher thread, or on the handler's when nothing is
// pending.
template <typename Answer, typename Fill>
CoreOwner::Completion<Answer> FinishWith(grpc::CallbackServerContext* context,
                                         grpc::ServerUnaryReactor* reactor,
                                         Fill fill) {
  return [context, reactor, fill = std::move(fill)](Answer answer) mutable {
    if (answer.ok()) fill(answer);
    reactor->Finish(PrepareFinish(context, StatusOf(answer)));
  };
}

// The opening every unary call shares, in this order: the node's `role`,
// the request's parse (`parse()`, a StatusOr), the caller's authorisation
// (`authorize()`); the first refusal finishes the call at once. The parse
// comes first so that no refusal (nor its log line) echoes a field over
// its size limit. Otherwise `start(parsed)` hands the call on and returns
// its reactor.
template <typename Authorize, typename Parse, typename Start>
grpc::ServerUnaryReactor* OpenUnary(grpc::CallbackServerContext* context,
                                    const absl::Status& role,
                                    Authorize authorize, Parse parse,
                                    Start start) {
  if (!role.ok()) return FinishNow(context, role);
  auto parsed = parse();
  if (!parsed.ok()) return FinishNow(context, parsed.status());
  if (absl::Status denied = authorize(); !denied.ok()) {
    return FinishNow(context, denied);
  }
  return start(*std::move(parsed));
}

// A start for OpenUnary: `ask(done)` asks the owner, whose answer finishes
// the call (FinishWith, `fill`).
template <typename Answer, typename Ask, typename Fill>
grpc::ServerUnaryReactor* AskOwner(grpc::CallbackServerContext* context,
                                   Ask ask, Fill fill) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  ask(FinishWith<Answer>(context, reactor, std::move(fill)));
  return reactor;
}

// One Acquire call. Lives until OnDone; CoreOwner may hold it (parked) and
// complete it from any thread.
class AcquireReactor final : public grpc::ServerUnaryReactor,
                             public PendingAcquire {
 public:
  AcquireReactor(CoreOwner& owner, grpc::CallbackServerContext* context,
                 AcquireArgs args, pb::AcquireResponse* response)
      : owner_(owner),
        context_(context),
        response_(response),
        args_(std::move(args)) {
    // Completes us exactly once, possibly before it returns or on another
    // thread: touch nothing after it.
    owner_.Acquire(args_, this);
  }

  void Complete(AcquireCallAnswer reply) override {
    FinishWith(std::move(reply));
  }

  void OnCancel() override {
    owner_.ReportAcquireCall(
        AcquireWaitCancelled{args_.client, args_.lock, this});
  }

  void OnDone() override {
    owner_.ReportAcquireCall(
        AcquireCallFinished{args_, reply_, context_->IsCancelled()});
    delete this;
  }

 private:
  void FinishWith(AcquireCallAnswer reply) {
    reply_ = std::move(reply);
    if (reply_.result.ok()) {
      ToProto(*reply_.result, response_);
      Finish(grpc::Status::OK);
    } else {
      Finish(PrepareFinish(context_, reply_.result.status()));
    }
  }

  CoreOwner& owner_;
  grpc::CallbackServerContext* const context_;
  pb::AcquireResponse* const response_;
  const AcquireArgs args_;
  AcquireCallAnswer reply_{absl::UnknownError("not answered")};
};

absl::Status ValidateForceRelease(const pb::ForceReleaseRequest& request,
                                  const Limits& limits) {
  if (request.lock().empty()) {
    return InvalidField(ErrorCode::kInvalidArguments, "lock");
  }
  const LimitChecks checks(limits);
  if (absl::Status s = checks.LockName(request.lock()); !s.ok()) return s;
  if (absl::Status s = checks.ClientId(request.client_id()); !s.ok()) return s;
  return checks.Label(request.reason());
}

// A value for a logfmt line: quoted, with quotes and control bytes escaped.
std::string LogValue(absl::string_view text) {
  return absl::StrCat("\"", absl::CHexEscape(text), "\"");
}

const security::Authorizer& OpenAuthorizer() {
  static const security::Authorizer* const open =
      new security::Authorizer(security::Authorizer::Open());
  return *open;
}

// A Session stream this node does not serve (ClusterRole): ended at once
// with the refusal, before reading anything.
class RefusedStream final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  RefusedStream(grpc::CallbackServerContext* context,
                const absl::Status& refusal) {
    Finish(PrepareFinish(context, refusal));
  }
  void OnDone() override { delete this; }
};

}  // namespace

absl::Status LockServiceImpl::CheckRole() const {
  return role_ == nullptr ? absl::OkStatus() : role_->CheckServing();
}

LockServiceImpl::LockServiceImpl(CoreOwner& owner, const Limits& limits,
                                 const security::Authorizer* authorizer)
    : owner_(owner),
      limits_(limits),
      authorizer_(authorizer != nullptr ? *authorizer : OpenAuthorizer()) {}

grpc::ServerUnaryReactor* LockServiceImpl::Acquire(
    grpc::CallbackServerContext* context, const pb::AcquireRequest* request,
    pb::AcquireResponse* response) {
  return OpenUnary(
      context, CheckRole(),
      [&] {
        return AuthorizeLockCall(authorizer_, context, request->client_id(),
                                 request->lock());
      },
      [&] { return ParseAcquire(*request, limits_); },
      [&](AcquireArgs args) {
        return new AcquireReactor(owner_, context, std::move(args), response);
      });
}

grpc::ServerUnaryReactor* LockServiceImpl::Renew(
    grpc::CallbackServerContext* context, const pb::RenewRequest* request,
    pb::RenewResponse* response) {
  return OpenUnary(
      context, CheckRole(),
      [&] {
        return AuthorizeLockCall(authorizer_, context, request->client_id(),
                                 request->lock());
      },
      [&] { return ParseRenew(*request, limits_); },
      [&](const RenewArgs& args) {
        return AskOwner<absl::StatusOr<RenewAnswer>>(
            context,
            [&](auto done) { owner_.Lease(Ask(args, std::move(done))); },
            [response](const absl::StatusOr<RenewAnswer>& answer) {
              ToProto(*answer, response);
            });
      });
}

grpc::ServerUnaryReactor* LockServiceImpl::Release(
    grpc::CallbackServerContext* context, const pb::ReleaseRequest* request,
    pb::ReleaseResponse* response) {
  return OpenUnary(
      context, CheckRole(),
      [&] {
        return AuthorizeLockCall(authorizer_, context, request->client_id(),
                                 request->lock());
      },
      [&] { return ParseRelease(*request, limits_); },
      [&](const ReleaseArgs& args) {
        return AskOwner<absl::StatusOr<ReleaseAnswer>>(
            context,
            [&](auto done) { owner_.Lease(Ask(args, std::move(done))); },
            [response](const absl::StatusOr<ReleaseAnswer>& outcome) {
              response->set_result(ToProto(*outcome));
            });
      });
}

grpc::ServerUnaryReactor* LockServiceImpl::Write(
    grpc::CallbackServerContext* context, const pb::WriteRequest* request,
    pb::WriteResponse* /*response*/) {
  return OpenUnary(
      context, CheckRole(),
      [&]() -> absl::Status {
        // A writer that names its client acts as that client, as for
        // Acquire: under mutual TLS it cannot write under another
        // identity's lease. And there every write is holder-checked, so
        // that an identity granted the lock's prefix cannot write with
        // another holder's token either.
        if (absl::Status denied =
                request->client_id().empty()
                    ? authorizer_.CheckUseLock(PeerOf(context), request->lock())
                    : AuthorizeLockCall(authorizer_, context,
                                        request->client_id(), request->lock());
            !denied.ok()) {
          return denied;
        }
        if (authorizer_.requires_identity() && !request->require_held()) {
          return absl::PermissionDeniedError(
              "under mutual TLS a write must set require_held");
        }
        return absl::OkStatus();
      },
      [&] { return ParseWrite(*request, limits_); },
      [&](WriteArgs args) {
        return AskOwner<absl::StatusOr<StoreAnswer>>(
            context,
            [&](auto done) {
              owner_.Write(StoreMutation(std::move(args)), std::move(done));
            },
            [](const absl::StatusOr<StoreAnswer>&) {});
      });
}

grpc::ServerUnaryReactor* LockServiceImpl::Read(
    grpc::CallbackServerContext* context, const pb::ReadRequest* request,
    pb::ReadResponse* response) {
  using Answer = absl::StatusOr<std::optional<std::string>>;
  return OpenUnary(
      context, CheckRole(),
      [&] {
        return authorizer_.CheckUseLock(PeerOf(context), request->lock());
      },
      [&] { return ParseRead(*request, limits_); },
      [&](const ReadArgs& args) {
        // A read may show what a write not yet durable wrote: it waits too.
        return AskOwner<Answer>(
            context,
            [&](auto done) { owner_.Query(Ask(args, std::move(done))); },
            [response](const Answer& value) {
              if (!value->has_value()) return;
              response->set_found(true);
              response->set_value(**value);
            });
      });
}

grpc::ServerUnaryReactor* LockServiceImpl::Delete(
    grpc::CallbackServerContext* context, const pb::DeleteRequest* request,
    pb::DeleteResponse* response) {
  return OpenUnary(
      context, CheckRole(),
      [&] {
        // The deleter acts as its client, as a holder-checked writer does.
        return AuthorizeLockCall(authorizer_, context, request->client_id(),
                                 request->lock());
      },
      [&] { return ParseDelete(*request, limits_); },
      [&](DeleteArgs args) {
        return AskOwner<absl::StatusOr<StoreAnswer>>(
            context,
            [&](auto done) {
              owner_.Write(StoreMutation(std::move(args)), std::move(done));
            },
            [response](const absl::StatusOr<StoreAnswer>& answer) {
              response->set_existed(answer->existed);
            });
      });
}

grpc::ServerUnaryReactor* LockServiceImpl::ListKeys(
    grpc::CallbackServerContext* context, const pb::ListKeysRequest* request,
    pb::ListKeysResponse* response) {
  return OpenUnary(
      context, CheckRole(),
      [&] {
        return authorizer_.CheckUseLock(PeerOf(context), request->lock());
      },
      [&] { return ParseListKeys(*request, limits_); },
      [&](const KeysQuery& query) {
        return AskOwner<absl::StatusOr<KeysAnswer>>(
            context,
            [&](auto done) { owner_.Query(Ask(query, std::move(done))); },
            [response](const absl::StatusOr<KeysAnswer>& answer) {
              for (const std::string& key : answer->keys) {
                response->add_keys(key);
              }
              response->set_next_after(answer->next_after.value_or(""));
            });
      });
}

grpc::ServerUnaryReactor* LockServiceImpl::Inspect(
    grpc::CallbackServerContext* context, const pb::InspectRequest* request,
    pb::InspectResponse* response) {
  return OpenUnary(
      context, CheckRole(),
      [&] {
        return authorizer_.CheckObserveLock(PeerOf(context), request->lock());
      },
      [&] { return ParseInspect(*request, limits_); },
      [&](const InspectQuery& query) {
        return AskOwner<absl::StatusOr<InspectAnswer>>(
            context,
            [&](auto done) { owner_.Query(Ask(query, std::move(done))); },
            [response](const absl::StatusOr<InspectAnswer>& answer) {
              ToProto(*answer, absl::Now(), response);
            });
      });
}

grpc::ServerUnaryReactor* LockServiceImpl::Status(
    grpc::CallbackServerContext* context, const pb::StatusRequest* request,
    pb::StatusResponse* response) {
  return OpenUnary(
      context, CheckRole(),
      [&] {
        return authorizer_.CheckObserveClient(PeerOf(context),
                                              request->client_id());
      },
      [&] { return ParseStatus(*request, limits_); },
      [&](const StatusQuery& query) {
        return AskOwner<absl::StatusOr<StatusAnswer>>(
            context,
            [&](auto done) { owner_.Query(Ask(query, std::move(done))); },
            [response](const absl::StatusOr<StatusAnswer>& answer) {
              ToProto(*answer, absl::Now(), response);
            });
      });
}

grpc::ServerUnaryReactor* LockServiceImpl::ListLocks(
    grpc::CallbackServerContext* context, const pb::ListLocksRequest* request,
    pb::ListLocksResponse* response) {
  return OpenUnary(
      context, CheckRole(),
      [&] {
        return authorizer_.CheckListLocks(PeerOf(context), request->prefix());
      },
      [&] { return ParseListLocks(*request, limits_); },
      [&](const ListLocksQuery& query) {
        return AskOwner<absl::StatusOr<ListLocksAnswer>>(
            context,
            [&](auto done) { owner_.Query(Ask(query, std::move(done))); },
            [response](const absl::StatusOr<ListLocksAnswer>& answer) {
              ToProto(*answer, absl::Now(), response);
            });
      });
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
LockServiceImpl::Session(grpc::CallbackServerContext* context) {
  if (absl::Status refused = CheckRole(); !refused.ok()) {
    return new RefusedStream(context, refused);
  }
  return SessionReactor::Start(owner_, limits_, authorizer_, unopened_sessions_,
                               rpc_metrics_, context);
}

grpc::ServerUnaryReactor* LockServiceImpl::ForceRelease(
    grpc::CallbackServerContext* context,
    const pb::ForceReleaseRequest* request,
    pb::ForceReleaseResponse* response) {
  if (absl::Status refused = CheckRole(); !refused.ok()) {
    return FinishNow(context, refused);
  }
  // Validated first: the refusal's log line echoes only fields within
  // their limits.
  if (absl::Status s = ValidateForceRelease(*request, limits_); !s.ok()) {
    return FinishNow(context, s);
  }
  const security::PeerIdentity peer = PeerOf(context);
  if (absl::Status denied = authorizer_.CheckAdmin(peer, "ForceRelease");
      !denied.ok()) {
    spdlog::warn(
        "event=forced_release_refused by={} peer={} lock={} client={} "
        "error={}",
        LogValue(peer.ToString()), LogValue(context->peer()),
        LogValue(request->lock()), LogValue(request->client_id()),
        LogValue(denied.message()));
    return FinishNow(context, denied);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  owner_.Lease(Ask(
      ForceReleaseArgs{.lock = request->lock(), .client = request->client_id()},
      [reactor, context, request, response, peer = peer.ToString()](
          absl::StatusOr<std::vector<CoreOwner::ForcedRelease>> released) {
        if (!released.ok()) {
          spdlog::warn(
              "event=forced_release_failed by={} peer={} lock={} client={} "
              "reason={} error={}",
              LogValue(peer), LogValue(context->peer()),
              LogValue(request->lock()), LogValue(request->client_id()),
              LogValue(request->reason()),
              LogValue(released.status().message()));
          reactor->Finish(PrepareFinish(context, released.status()));
          return;
        }
        for (const CoreOwner::ForcedRelease& lease : *released) {
          // Who did it, from where, to whom, and why: the audit trail.
          spdlog::warn(
              "event=forced_release by={} peer={} lock={} client={} token={} "
              "reason={}",
              LogValue(peer), LogValue(context->peer()),
              LogValue(request->lock()), LogValue(lease.client), lease.token,
              LogValue(request->reason()));
          pb::ReleasedLease* proto = response->add_released();
          proto->set_client_id(lease.client);
          proto->set_token(lease.token);
          proto->set_mode(ModeToProto(lease.mode));
        }
        reactor->Finish(grpc::Status::OK);
      }));
  return reactor;
}

namespace {

// The daemon's start, for ServerInfo's uptime: read once, during static
// initialisation (before main), from the monotonic clock.
const std::chrono::steady_clock::time_point kProcessStart =
    std::chrono::steady_clock::now();

}  // namespace

grpc::ServerUnaryReactor* LockServiceImpl::ServerInfo(
    grpc::CallbackServerContext* context,
    const pb::ServerInfoRequest* /*request*/,
    pb::ServerInfoResponse* response) {
  if (absl::Status denied = authorizer_.CheckTransportOnly(PeerOf(context));
      !denied.ok()) {
    return FinishNow(context, denied);
  }
  response->set_version(BuildVersion());
  response->set_commit(BuildCommit());
  response->set_grpc_version(grpc::Version());
  response->set_uptime_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - kProcessStart)
                              .count());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* LockServiceImpl::ClusterStatus(
    grpc::CallbackServerContext* context,
    const pb::ClusterStatusRequest* /*request*/,
    pb::ClusterStatusResponse* response) {
  if (absl::Status denied = authorizer_.CheckTransportOnly(PeerOf(context));
      !denied.ok()) {
    return FinishNow(context, denied);
  }
  if (role_ != nullptr) role_->FillStatus(response);
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerWriteReactor<pb::WatchResponse>* LockServiceImpl::Watch(
    grpc::CallbackServerContext* context, const pb::WatchRequest* request) {
  // A follower's table is not the leader's: it refuses, as for every lock
  // call, and the client watches the leader.
  if (absl::Status refused = CheckRole(); !refused.ok()) {
    return StartWatchStream(owner_, context, refused);
  }
  absl::StatusOr<WatchTarget> target = ParseWatch(*request, limits_);
  if (!target.ok()) return StartWatchStream(owner_, context, target);
  const security::PeerIdentity peer = PeerOf(context);
  absl::Status denied =
      target->prefix ? authorizer_.CheckListLocks(peer, target->name)
                     : authorizer_.CheckObserveLock(peer, target->name);
  if (!denied.ok()) return StartWatchStream(owner_, context, denied);
  return StartWatchStream(owner_, context, std::move(target));
}

}  // namespace leasekeeper::server
