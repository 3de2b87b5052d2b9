// UndecodableRequestInterceptorFactory: a unary call whose request bytes do
// not parse as its protobuf message is answered INVALID_ARGUMENT "invalid
// arguments: the request of /leasekeeper.v1.LockService/<Method> cannot be
// parsed" (reason INVALID_ARGUMENTS, field "request"), and changes nothing.
//
// Why an interceptor: gRPC's callback API answers such a call itself, before
// any handler runs, with UNIMPLEMENTED and an empty message, which reads as
// "this server lacks the method". The interceptor sees the missing request
// at POST_RECV_MESSAGE and rewrites the status at PRE_SEND_STATUS. Session
// streams parse their own messages (server/lock_service.h); the factory
// makes no interceptor for streaming methods.
//
// Register it before interceptors that record the status (metrics), so
// they see the rewritten one.
//
// Thread-safety: the factory may be used from any thread; each interceptor
// belongs to one call.
#ifndef LEASEKEEPER_SERVER_UNDECODABLE_REQUEST_H_
#define LEASEKEEPER_SERVER_UNDECODABLE_REQUEST_H_

#include <memory>

#include "grpcpp/support/server_interceptor.h"

namespace leasekeeper::server {

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeUndecodableRequestInterceptorFactory();

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_UNDECODABLE_REQUEST_H_
