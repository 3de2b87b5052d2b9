// The gRPC transport settings of leasekeeperd's listening port: how it
// detects dead peers on idle connections (and so lost sessions). One place,
// so that bench/anchors/grpc_floor_server.cc, which measures what gRPC alone
// costs, runs with exactly the daemon's settings.
//
// Header-only (no library to link): the floor server links the generated
// code and nothing of the daemon.
//
// Thread-safety: a function of the builder it is given.
#ifndef LEASEKEEPER_SERVER_TRANSPORT_OPTIONS_H_
#define LEASEKEEPER_SERVER_TRANSPORT_OPTIONS_H_

#include <grpcpp/grpcpp.h>

namespace leasekeeper::server {

// Ping after 10 s of silence, give up 5 s later; clients may ping every
// 5 s, also with no call open (a Session is one long call).
inline void AddTransportOptions(grpc::ServerBuilder& builder) {
  constexpr int kKeepaliveTimeMs = 10'000;
  constexpr int kKeepaliveTimeoutMs = 5'000;
  constexpr int kMinClientPingIntervalMs = 5'000;
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             kKeepaliveTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      kMinClientPingIntervalMs);
}

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_TRANSPORT_OPTIONS_H_
