#include "client/rpc_client.h"

#include <grpcpp/client_context.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/errors.h"
#include "client/internal/call_messages.h"
#include "client/internal/call_retry.h"
#include "client/internal/call_timing.h"
#include "client/internal/channel_set.h"
#include "proto/lock_mode.h"

namespace leasekeeper::client {
namespace {

namespace pb = ::leasekeeper::v1;

HolderInfo FromProto(const pb::Holder& holder) {
  HolderInfo info;
  info.client_id = holder.client_id();
  info.lock = holder.lock();
  info.mode = LockModeFromProto<LockMode>(holder.mode());
  info.token = holder.token();
  info.expires_in = absl::Milliseconds(holder.expires_in_ms());
  if (holder.has_expires_at()) {
    info.expires_at_wall =
        absl::FromUnixSeconds(holder.expires_at().seconds()) +
        absl::Nanoseconds(holder.expires_at().nanos());
  }
  info.holder_label = holder.holder_label();
  return info;
}

MemberRole FromProto(pb::MemberRole role) {
  switch (role) {
    case pb::LEADER:
      return MemberRole::kLeader;
    case pb::FOLLOWER:
      return MemberRole::kFollower;
    case pb::CATCHING_UP:
      return MemberRole::kCatchingUp;
    case pb::DISCONNECTED:
      return MemberRole::kDisconnected;
    default:
      return MemberRole::kUnspecified;
  }
}

std::vector<HolderInfo> FromProto(
    const google::protobuf::RepeatedPtrField<pb::Holder>& holders) {
  std::vector<HolderInfo> result;
  result.reserve(holders.size());
  for (const pb::Holder& holder : holders) result.push_back(FromProto(holder));
  return result;
}

WaiterInfo FromProto(const pb::Waiter& waiter) {
  WaiterInfo info;
  info.client_id = waiter.client_id();
  info.mode = LockModeFromProto<LockMode>(waiter.mode());
  info.ttl = absl::Milliseconds(waiter.ttl_ms());
  info.position = waiter.position();
  info.holder_label = waiter.holder_label();
  return info;
}

WatchEventKind FromProto(pb::WatchEventKind kind) {
  switch (kind) {
    case pb::WATCH_EVENT_KIND_GRANTED:
      return WatchEventKind::kGranted;
    case pb::WATCH_EVENT_KIND_QUEUED:
      return WatchEventKind::kQueued;
    case pb::WATCH_EVENT_KIND_RELEASED:
      return WatchEventKind::kReleased;
    case pb::WATCH_EVENT_KIND_LAPSED:
      return WatchEventKind::kLapsed;
    case pb::WATCH_EVENT_KIND_WITHDRAWN:
      return WatchEventKind::kWithdrawn;
    case pb::WATCH_EVENT_KIND_FORCED_RELEASE:
      return WatchEventKind::kForcedRelease;
    case pb::WATCH_EVENT_KIND_DEADLOCK_ABORT:
      return WatchEventKind::kDeadlockAbort;
    default:
      return WatchEventKind::kUnknown;
  }
}

WatchUpdate FromProto(const pb::WatchResponse& message) {
  WatchUpdate update;
  switch (message.kind_case()) {
    case pb::WatchResponse::kCurrent:
      update.kind = WatchUpdate::Kind::kCurrent;
      update.lock = message.current().lock();
      update.current.holders = FromProto(message.current().holders());
      for (const pb::Waiter& waiter : message.current().queue()) {
        update.current.queue.push_back(FromProto(waiter));
      }
      break;
    case pb::WatchResponse::kSynced:
      update.kind = WatchUpdate::Kind::kSynced;
      update.sequence = message.synced().sequence();
      update.locks = message.synced().locks();
      break;
    case pb::WatchResponse::kEvent:
    case pb::WatchResponse::KIND_NOT_SET: {
      const pb::WatchEvent& e = message.event();
      update.kind = WatchUpdate::Kind::kEvent;
      update.event.kind = FromProto(e.kind());
      update.event.lock = e.lock();
      update.event.client_id = e.client_id();
      update.event.mode = LockModeFromProto<LockMode>(e.mode());
      update.event.token = e.token();
      update.event.ttl = absl::Milliseconds(e.ttl_ms());
      if (e.has_time()) {
        update.event.time = absl::FromUnixSeconds(e.time().seconds()) +
                            absl::Nanoseconds(e.time().nanos());
      }
      update.event.sequence = e.sequence();
      break;
    }
  }
  return update;
}

// When a call started now with `options` must be over (all its attempts).
MonotonicTime DeadlineOf(const CallOptions& options) {
  return options.timeout == absl::InfiniteDuration()
             ? absl::InfiniteDuration()
             : MonotonicNow() + std::max(options.timeout, absl::ZeroDuration());
}

// An attempt's deadline and wait-for-ready, the same for every call.
void SetUpAttempt(MonotonicTime deadline, const CallOptions& options,
                  const internal::ChannelSet::Pick& pick,
                  grpc::ClientContext& context) {
  internal::SetDeadlineAfter(deadline - MonotonicNow(), context);
  // Waiting for one endpoint to connect would stall a call the service
  // may answer elsewhere.
  context.set_wait_for_ready(options.wait_for_ready && !pick.can_move);
}

// Runs one unary call through `channels`: sets the deadline (for all
// attempts together), wires the stop token to TryCancel, maps the status,
// and goes again as CallRetry decides, where the endpoint choice points.
// `invoke` is (stub, context, response) -> grpc::Status.
template <typename Response, typename Invoke>
absl::StatusOr<Response> RunCall(internal::ChannelSet& channels,
                                 const CallOptions& options, bool repeatable,
                                 Invoke invoke) {
  if (options.cancel.stop_requested()) {
    return absl::CancelledError("cancelled before the call started");
  }
  internal::CallRetry retry(DeadlineOf(options), repeatable);
  for (;;) {
    internal::ChannelSet::Pick pick = channels.Current();
    grpc::ClientContext context;
    SetUpAttempt(retry.deadline(), options, pick, context);
    std::stop_callback cancel_on_stop(options.cancel,
                                      [&context] { context.TryCancel(); });
    Response response;
    const grpc::Status grpc_status = invoke(*pick.stub, &context, &response);
    const absl::Status status = FromGrpcStatus(context, grpc_status);
    const bool moved = channels.Report(pick, status);
    if (status.ok()) return response;
    if (!retry.After(status, pick.target, moved, channels.Current().not_before,
                     MonotonicNow())) {
      return retry.status();
    }
    if (!internal::SleepUnlessStopped(retry.at() - MonotonicNow(),
                                      options.cancel)) {
      return absl::CancelledError(
          absl::StrCat("cancelled between attempts; the last: ",
                       retry.status().message()));
    }
  }
}

// RunCall of one of the Stub's unary methods with `request`.
template <typename Request, typename Response>
absl::StatusOr<Response> RunCall(
    internal::ChannelSet& channels, const CallOptions& options, bool repeatable,
    grpc::Status (pb::LockService::Stub::*method)(grpc::ClientContext*,
                                                  const Request&, Response*),
    const Request& request) {
  return RunCall<Response>(
      channels, options, repeatable,
      [&](pb::LockService::Stub& stub, grpc::ClientContext* context,
          Response* response) {
        return (stub.*method)(context, request, response);
      });
}

}  // namespace

absl::string_view MemberRoleName(MemberRole role) {
  switch (role) {
    case MemberRole::kLeader:
      return "leader";
    case MemberRole::kFollower:
      return "follower";
    case MemberRole::kCatchingUp:
      return "catching-up";
    case MemberRole::kDisconnected:
      return "disconnected";
    case MemberRole::kUnspecified:
      break;
  }
  return "unknown";
}

absl::string_view SessionStateName(SessionState state) {
  switch (state) {
    case SessionState::kNone:
      return "none";
    case SessionState::kOpen:
      return "open";
    case SessionState::kGrace:
      return "grace";
    case SessionState::kUnspecified:
      break;
  }
  return "unknown";
}

RpcClient::RpcClient(std::shared_ptr<grpc::Channel> channel)
    : RpcClient(internal::ChannelSet::Fixed(std::move(channel))) {}

RpcClient::RpcClient(std::shared_ptr<internal::ChannelSet> channels)
    : channels_(std::move(channels)) {}

absl::StatusOr<std::unique_ptr<RpcClient>> RpcClient::Connect(
    absl::string_view endpoints, const ChannelOptions& options) {
  absl::StatusOr<std::shared_ptr<internal::ChannelSet>> channels =
      internal::ChannelSet::Connect(endpoints, options);
  if (!channels.ok()) return channels.status();
  return std::make_unique<RpcClient>(*std::move(channels));
}

pb::LockService::Stub& RpcClient::stub() const {
  return *channels_->Current().stub;
}

absl::Status RpcClient::CallWith(
    const CallOptions& options, bool repeatable,
    const std::function<grpc::Status(pb::LockService::Stub&,
                                     grpc::ClientContext*)>& invoke) const {
  struct Nothing {};
  return RunCall<Nothing>(*channels_, options, repeatable,
                          [&](pb::LockService::Stub& stub,
                              grpc::ClientContext* context, Nothing*) {
                            return invoke(stub, context);
                          })
      .status();
}

absl::StatusOr<ClusterInfo> RpcClient::ClusterStatus(
    const CallOptions& options) const {
  absl::StatusOr<pb::ClusterStatusResponse> response = RunCall(
      *channels_, options, /*repeatable=*/true,
      &pb::LockService::Stub::ClusterStatus, pb::ClusterStatusRequest());
  if (!response.ok()) return response.status();
  ClusterInfo info;
  info.cluster = response->cluster();
  info.node_id = response->node_id();
  info.role = FromProto(response->role());
  info.leader_id = response->leader_id();
  info.leader_address = response->leader_address();
  info.epoch = response->epoch();
  info.last_position = response->last_position();
  info.etcd_error = response->etcd_error();
  for (const pb::ClusterMember& member : response->members()) {
    info.members.push_back(ClusterMemberInfo{
        member.node_id(), member.advertise(), FromProto(member.role()),
        member.applied_position(), member.lag()});
  }
  return info;
}

RpcClient::~RpcClient() = default;

absl::StatusOr<AcquireResult> RpcClient::Acquire(
    const AcquireCall& call, const CallOptions& options) const {
  const pb::AcquireRequest request = internal::ToRequest(call);
  absl::StatusOr<pb::AcquireResponse> response =
      RunCall(*channels_, options, /*repeatable=*/!call.request_id.empty(),
              &pb::LockService::Stub::Acquire, request);
  if (!response.ok()) return response.status();
  return internal::FromResponse(*response);
}

absl::StatusOr<RenewResult> RpcClient::Renew(const RenewCall& call,
                                             const CallOptions& options) const {
  const pb::RenewRequest request = internal::ToRequest(call);
  absl::StatusOr<pb::RenewResponse> response =
      RunCall(*channels_, options, /*repeatable=*/!call.request_id.empty(),
              &pb::LockService::Stub::Renew, request);
  if (!response.ok()) return response.status();
  return internal::FromResponse(*response);
}

absl::StatusOr<ReleaseOutcome> RpcClient::Release(
    const ReleaseCall& call, const CallOptions& options) const {
  const pb::ReleaseRequest request = internal::ToRequest(call);
  absl::StatusOr<pb::ReleaseResponse> response =
      RunCall(*channels_, options, /*repeatable=*/!call.request_id.empty(),
              &pb::LockService::Stub::Release, request);
  if (!response.ok()) return response.status();
  return internal::FromResponse(*response);
}

absl::Status RpcClient::Write(const WriteCall& call,
                              const CallOptions& options) const {
  pb::WriteRequest request;
  request.set_lock(call.lock);
  request.set_key(call.key);
  request.set_value(call.value);
  request.set_token(call.token);
  request.set_client_id(call.client_id);
  request.set_require_held(call.require_held);
  return RunCall(*channels_, options, /*repeatable=*/true,
                 &pb::LockService::Stub::Write, request)
      .status();
}

absl::StatusOr<std::optional<std::string>> RpcClient::Read(
    absl::string_view lock, absl::string_view key,
    const CallOptions& options) const {
  pb::ReadRequest request;
  request.set_lock(std::string(lock));
  request.set_key(std::string(key));
  absl::StatusOr<pb::ReadResponse> response =
      RunCall(*channels_, options, /*repeatable=*/true,
              &pb::LockService::Stub::Read, request);
  if (!response.ok()) return response.status();
  if (!response->found()) return std::optional<std::string>();
  return std::optional<std::string>(response->value());
}

absl::StatusOr<bool> RpcClient::Delete(const DeleteCall& call,
                                       const CallOptions& options) const {
  pb::DeleteRequest request;
  request.set_lock(call.lock);
  request.set_key(call.key);
  request.set_token(call.token);
  request.set_client_id(call.client_id);
  // Repeatable: a second delete of the same key by the same holder is
  // accepted (existed = false) and changes nothing more.
  absl::StatusOr<pb::DeleteResponse> response =
      RunCall(*channels_, options, /*repeatable=*/true,
              &pb::LockService::Stub::Delete, request);
  if (!response.ok()) return response.status();
  return response->existed();
}

absl::StatusOr<KeysPage> RpcClient::ListKeys(absl::string_view lock,
                                             absl::string_view after,
                                             int32_t limit,
                                             const CallOptions& options) const {
  pb::ListKeysRequest request;
  request.set_lock(std::string(lock));
  request.set_after(std::string(after));
  request.set_limit(limit);
  absl::StatusOr<pb::ListKeysResponse> response =
      RunCall(*channels_, options, /*repeatable=*/true,
              &pb::LockService::Stub::ListKeys, request);
  if (!response.ok()) return response.status();
  return KeysPage{.keys = {response->keys().begin(), response->keys().end()},
                  .next_after = response->next_after()};
}

absl::string_view WatchEventKindName(WatchEventKind kind) {
  switch (kind) {
    case WatchEventKind::kGranted:
      return "granted";
    case WatchEventKind::kQueued:
      return "queued";
    case WatchEventKind::kReleased:
      return "released";
    case WatchEventKind::kLapsed:
      return "lapsed";
    case WatchEventKind::kWithdrawn:
      return "withdrawn";
    case WatchEventKind::kForcedRelease:
      return "forced-release";
    case WatchEventKind::kDeadlockAbort:
      return "deadlock-abort";
    case WatchEventKind::kUnknown:
      break;
  }
  return "unknown";
}

absl::Status RpcClient::Watch(
    const WatchCall& call,
    const std::function<bool(const WatchUpdate&)>& on_update,
    const CallOptions& options) const {
  if (options.cancel.stop_requested()) {
    return absl::CancelledError("cancelled before the call started");
  }
  pb::WatchRequest request;
  if (call.prefix) {
    request.set_prefix(call.name);
  } else {
    request.set_lock(call.name);
  }
  // Until its first message the stream opens as a read is retried
  // (CallRetry), within call.open_within; once it runs it is not moved
  // (the proto has no position to resume from without a gap).
  const MonotonicTime deadline = DeadlineOf(options);
  internal::CallRetry retry(
      std::min(deadline, MonotonicNow() + call.open_within),
      /*repeatable=*/true);
  for (;;) {
    internal::ChannelSet::Pick pick = channels_->Current();
    grpc::ClientContext context;
    SetUpAttempt(deadline, options, pick, context);
    std::stop_callback cancel_on_stop(options.cancel,
                                      [&context] { context.TryCancel(); });
    std::unique_ptr<grpc::ClientReader<pb::WatchResponse>> reader =
        pick.stub->Watch(&context, request);
    pb::WatchResponse message;
    bool delivered = false;
    bool stopped = false;
    while (reader->Read(&message)) {
      delivered = true;
      if (!on_update(FromProto(message))) {
        stopped = true;
        context.TryCancel();
        while (reader->Read(&message)) {
        }
        break;
      }
    }
    const grpc::Status status = reader->Finish();
    if (stopped || status.ok()) {
      channels_->Report(pick, absl::OkStatus());
      return absl::OkStatus();
    }
    absl::Status failed = FromGrpcStatus(context, status);
    const bool moved = channels_->Report(pick, failed);
    if (delivered) return failed;
    if (!retry.After(failed, pick.target, moved,
                     channels_->Current().not_before, MonotonicNow())) {
      return retry.status();
    }
    if (!internal::SleepUnlessStopped(retry.at() - MonotonicNow(),
                                      options.cancel)) {
      return absl::CancelledError("cancelled before the watch started");
    }
  }
}

absl::StatusOr<LockInfo> RpcClient::Inspect(absl::string_view lock,
                                            const CallOptions& options) const {
  pb::InspectRequest request;
  request.set_lock(std::string(lock));
  LockInfo info;
  do {
    absl::StatusOr<pb::InspectResponse> response =
        RunCall(*channels_, options, /*repeatable=*/true,
                &pb::LockService::Stub::Inspect, request);
    if (!response.ok()) return response.status();
    std::vector<HolderInfo> holders = FromProto(response->holders());
    std::move(holders.begin(), holders.end(), std::back_inserter(info.holders));
    for (const pb::Waiter& waiter : response->queue()) {
      info.queue.push_back(FromProto(waiter));
    }
    info.capacity = response->capacity();
    request.set_page_token(response->next_page_token());
  } while (!request.page_token().empty());
  return info;
}

absl::StatusOr<ClientStatus> RpcClient::Status(
    absl::string_view client_id, const CallOptions& options) const {
  pb::StatusRequest request;
  request.set_client_id(std::string(client_id));
  ClientStatus status;
  do {
    absl::StatusOr<pb::StatusResponse> response =
        RunCall(*channels_, options, /*repeatable=*/true,
                &pb::LockService::Stub::Status, request);
    if (!response.ok()) return response.status();
    std::vector<HolderInfo> holds = FromProto(response->holds());
    std::move(holds.begin(), holds.end(), std::back_inserter(status.holds));
    // Every page carries the client's state; the last one is the latest.
    status.registered = response->registered();
    status.age = response->age();
    status.waiting_for = response->waiting_for();
    switch (response->session()) {
      case pb::SESSION_STATE_NONE:
        status.session = SessionState::kNone;
        break;
      case pb::SESSION_STATE_OPEN:
        status.session = SessionState::kOpen;
        break;
      case pb::SESSION_STATE_GRACE:
        status.session = SessionState::kGrace;
        break;
      default:
        status.session = SessionState::kUnspecified;
        break;
    }
    request.set_page_token(response->next_page_token());
  } while (!request.page_token().empty());
  return status;
}

absl::StatusOr<LockPage> RpcClient::ListLocks(
    absl::string_view prefix, int32_t page_size, absl::string_view page_token,
    const CallOptions& options) const {
  pb::ListLocksRequest request;
  request.set_prefix(std::string(prefix));
  request.set_page_size(page_size);
  request.set_page_token(std::string(page_token));
  absl::StatusOr<pb::ListLocksResponse> response =
      RunCall(*channels_, options, /*repeatable=*/true,
              &pb::LockService::Stub::ListLocks, request);
  if (!response.ok()) return response.status();
  LockPage page;
  for (const pb::LockSummary& summary : response->locks()) {
    LockSummary s;
    s.lock = summary.lock();
    s.holders = FromProto(summary.holders());
    s.queue_length = summary.queue_length();
    s.capacity = summary.capacity();
    page.locks.push_back(std::move(s));
  }
  page.next_page_token = response->next_page_token();
  return page;
}

absl::StatusOr<std::vector<LockSummary>> RpcClient::ListAllLocks(
    absl::string_view prefix, size_t max_locks,
    const CallOptions& options) const {
  constexpr int32_t kPageSize = 1000;
  std::vector<LockSummary> all;
  std::string token;
  do {
    absl::StatusOr<LockPage> page =
        ListLocks(prefix, kPageSize, token, options);
    if (!page.ok()) return page.status();
    for (LockSummary& summary : page->locks) {
      if (all.size() >= max_locks) return all;
      all.push_back(std::move(summary));
    }
    token = std::move(page->next_page_token);
  } while (!token.empty());
  return all;
}

}  // namespace leasekeeper::client
