// LockServiceImpl: the gRPC face of leasekeeperd (callback API).
//
// Each unary handler asks the Authorizer whether the caller may make the
// call (security/authorizer.h; refusals are UNAUTHENTICATED or
// PERMISSION_DENIED and change nothing), validates its request (convert.h),
// makes one CoreOwner call, converts the answer back and finishes; errors go
// through ToGrpcStatus. ForceRelease (admin only) logs every use at warn
// with the caller's identity and address. No handler blocks: an Acquire that
// must wait parks its reactor in CoreOwner (keyed by client and lock) and
// returns its thread; the reactor is finished later by whichever event settles
// it (a grant, a withdrawal, an abort, its wait timeout, its cancellation,
// shutdown). A cancelled or disconnected waiting call withdraws its request
// (OnCancel); an answer that did not reach the client is undone (OnDone).
// Session streams are bidi reactors that forward open/keepalive/close to
// CoreOwner and write its notices.
//
// Thread-safety: gRPC calls the handlers concurrently; all shared state is
// in CoreOwner.
#ifndef LEASEKEEPER_SERVER_LOCK_SERVICE_H_
#define LEASEKEEPER_SERVER_LOCK_SERVICE_H_

#include "grpcpp/grpcpp.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"
#include "security/authorizer.h"
#include "server/core_owner.h"
#include "server/server_config.h"

namespace leasekeeper::server {

class LockServiceImpl final : public v1::LockService::CallbackService {
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
  grpc::ServerUnaryReactor* Inspect(grpc::CallbackServerContext* context,
                                    const v1::InspectRequest* request,
                                    v1::InspectResponse* response) override;
  grpc::ServerUnaryReactor* Status(grpc::CallbackServerContext* context,
                                   const v1::StatusRequest* request,
                                   v1::StatusResponse* response) override;
  grpc::ServerUnaryReactor* ListLocks(grpc::CallbackServerContext* context,
                                      const v1::ListLocksRequest* request,
                                      v1::ListLocksResponse* response) override;
  grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse>* Session(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* ForceRelease(
      grpc::CallbackServerContext* context,
      const v1::ForceReleaseRequest* request,
      v1::ForceReleaseResponse* response) override;
  grpc::ServerUnaryReactor* ServerInfo(
      grpc::CallbackServerContext* context,
      const v1::ServerInfoRequest* request,
      v1::ServerInfoResponse* response) override;

 private:
  CoreOwner& owner_;
  const Limits limits_;
  const security::Authorizer& authorizer_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_LOCK_SERVICE_H_
