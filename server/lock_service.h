// LockServiceImpl: the gRPC face of leasekeeperd (callback API).
//
// Each unary handler asks the Authorizer whether the caller may make the
// call (security/authorizer.h; refusals are UNAUTHENTICATED or
// PERMISSION_DENIED and change nothing), validates its request (convert.h),
// makes one CoreOwner call whose completion converts the answer back and
// finishes (CoreOwner runs it once the answer is durable, inline or on the
// store's thread); errors go through ToGrpcStatus. ForceRelease (admin
// only) logs every use at warn with the caller's identity and address. No
// handler blocks: an Acquire that must wait parks its reactor in CoreOwner
// (keyed by client and lock) and returns its thread; the reactor is
// finished later by whichever event settles it (a grant, a withdrawal, an
// abort, its wait timeout, its cancellation, shutdown). A cancelled or
// disconnected waiting call withdraws its request (OnCancel); an answer
// that did not reach the client is undone (OnDone). Session streams are
// SessionReactors (server/session_reactor.h); Watch streams are write
// reactors fed by the watch hub (server/watch_stream.h).
//
// Cluster mode (cluster_role.h): before anything else, every lock call
// (Acquire, Renew, Release, Write, Read, Delete, ListKeys, Inspect,
// Status, ListLocks, ForceRelease, and a Session stream, ended at once) asks the ClusterRole
// whether this node serves now; if not it is refused with its NotLeader
// status (UNAVAILABLE, reason NOT_LEADER, trailing metadata
// leasekeeper-leader when the leader is known) and changes nothing.
// ServerInfo and ClusterStatus are answered on every node.
//
// Thread-safety: gRPC calls the handlers concurrently; all shared state is
// in CoreOwner.
#ifndef LEASEKEEPER_SERVER_LOCK_SERVICE_H_
#define LEASEKEEPER_SERVER_LOCK_SERVICE_H_

#include <atomic>
#include <cstddef>

#include "grpcpp/grpcpp.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"
#include "security/authorizer.h"
#include "server/cluster_role.h"
#include "server/core_owner.h"
#include "server/rpc_metrics.h"
#include "server/server_config.h"

namespace leasekeeper::server {

// The generated CallbackService, except that Session is a raw (byte
// buffer) stream: gRPC's typed stream reports a message that does not
// parse exactly like the client's half-close, so the server parses Session
// messages itself to tell the two apart. (A unary request that does not
// parse is answered by UndecodableRequestInterceptor.)
// clang-format off
using LockServiceBase =
    v1::LockService::WithCallbackMethod_Acquire<
    v1::LockService::WithCallbackMethod_Renew<
    v1::LockService::WithCallbackMethod_Release<
    v1::LockService::WithCallbackMethod_Write<
    v1::LockService::WithCallbackMethod_Read<
    v1::LockService::WithCallbackMethod_Delete<
    v1::LockService::WithCallbackMethod_ListKeys<
    v1::LockService::WithCallbackMethod_Inspect<
    v1::LockService::WithCallbackMethod_Status<
    v1::LockService::WithCallbackMethod_ListLocks<
    v1::LockService::WithRawCallbackMethod_Session<
    v1::LockService::WithCallbackMethod_ForceRelease<
    v1::LockService::WithCallbackMethod_ServerInfo<
    v1::LockService::WithCallbackMethod_ClusterStatus<
    v1::LockService::WithCallbackMethod_Watch<
    v1::LockService::Service>>>>>>>>>>>>>>>;
// clang-format on

class LockServiceImpl final : public LockServiceBase {
 public:
  // `authorizer` (security/authorizer.h) decides every call before it is
  // validated or applied; null means open (every check passes). It must
  // outlive the service.
  LockServiceImpl(CoreOwner& owner, const Limits& limits,
                  const security::Authorizer* authorizer = nullptr);
  LockServiceImpl(const LockServiceImpl&) = delete;
  LockServiceImpl& operator=(const LockServiceImpl&) = delete;

  grpc::ServerUnaryReactor* Acquire(grpc::CallbackServerContext* context,
                                    const v1::AcquireRequest* request,
                                    v1::AcquireResponse* response) override;
  grpc::ServerUnaryReactor* Renew(grpc::CallbackServerContext* context,
                                  const v1::RenewRequest* request,
                                  v1::RenewResponse* response) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* context,
                                    const v1::ReleaseRequest* request,
                                    v1::ReleaseResponse* response) override;
  grpc::ServerUnaryReactor* Write(grpc::CallbackServerContext* context,
                                  const v1::WriteRequest* request,
                                  v1::WriteResponse* response) override;
  grpc::ServerUnaryReactor* Read(grpc::CallbackServerContext* context,
                                 const v1::ReadRequest* request,
                                 v1::ReadResponse* response) override;
  // Delete: authorized as a Write that names its client (the caller acts
  // as client_id and uses the lock); ListKeys as Read.
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* context,
                                   const v1::DeleteRequest* request,
                                   v1::DeleteResponse* response) override;
  grpc::ServerUnaryReactor* ListKeys(grpc::CallbackServerContext* context,
                                     const v1::ListKeysRequest* request,
                                     v1::ListKeysResponse* response) override;
  grpc::ServerUnaryReactor* Inspect(grpc::CallbackServerContext* context,
                                    const v1::InspectRequest* request,
                                    v1::InspectResponse* response) override;
  grpc::ServerUnaryReactor* Status(grpc::CallbackServerContext* context,
                                   const v1::StatusRequest* request,
                                   v1::StatusResponse* response) override;
  grpc::ServerUnaryReactor* ListLocks(grpc::CallbackServerContext* context,
                                      const v1::ListLocksRequest* request,
                                      v1::ListLocksResponse* response) override;
  // Messages are leasekeeper.v1.SessionRequest and SessionResponse. One
  // that does not parse ends the stream with INVALID_ARGUMENT "invalid
  // arguments: Session message cannot be parsed"; the session then is in
  // its grace exactly as after a broken connection (resumable, its locks
  // kept until the grace ends). A stream counts against --max-sessions from
  // its start (RESOURCE_EXHAUSTED "limit exceeded: max-sessions" beyond)
  // and is ended DEADLINE_EXCEEDED if no `open` arrives within
  // --session-open-timeout.
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Session(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* ForceRelease(
      grpc::CallbackServerContext* context,
      const v1::ForceReleaseRequest* request,
      v1::ForceReleaseResponse* response) override;
  grpc::ServerUnaryReactor* ServerInfo(
      grpc::CallbackServerContext* context,
      const v1::ServerInfoRequest* request,
      v1::ServerInfoResponse* response) override;
  // Answered by every node, whatever its role (ClusterRole::FillStatus).
  grpc::ServerUnaryReactor* ClusterStatus(
      grpc::CallbackServerContext* context,
      const v1::ClusterStatusRequest* request,
      v1::ClusterStatusResponse* response) override;

  // Who decides whether lock calls are served (cluster_role.h); null (the
  // default) serves every call. REQUIRES: set before serving; outlives the
  // service.
  void SetClusterRole(const ClusterRole* role) { role_ = role; }
  // Where Session streams count the limit refusals they answer calls with
  // (server/rpc_metrics.h); null (the default) counts none. REQUIRES: set
  // before serving; outlives the service.
  void SetRpcMetrics(const RpcMetrics* metrics) { rpc_metrics_ = metrics; }

  // Authorized as Inspect (a lock) or ListLocks (a prefix), then validated
  // (ParseWatch); the stream itself is server/watch_stream.h.
  grpc::ServerWriteReactor<v1::WatchResponse>* Watch(
      grpc::CallbackServerContext* context,
      const v1::WatchRequest* request) override;

 private:
  CoreOwner& owner_;
  const Limits limits_;
  const security::Authorizer& authorizer_;
  // The refusal of a lock call on a node that does not serve them now, or
  // OK.
  absl::Status CheckRole() const;

  const ClusterRole* role_ = nullptr;
  const RpcMetrics* rpc_metrics_ = nullptr;
  // Session streams that have not opened a session yet.
  std::atomic<size_t> unopened_sessions_{0};
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_LOCK_SERVICE_H_
