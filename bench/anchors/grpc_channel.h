// The channel each gRPC lock client opens: its own TCP connection (a
// process of its own would have one), never one shared with other clients
// through gRPC's global subchannel pool.

#ifndef LEASEKEEPER_BENCH_ANCHORS_GRPC_CHANNEL_H_
#define LEASEKEEPER_BENCH_ANCHORS_GRPC_CHANNEL_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"

namespace leasekeeper::bench {

inline std::shared_ptr<grpc::Channel> OwnConnection(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
}

inline std::string StatusText(const grpc::Status& status) {
  return absl::StrCat("gRPC ", status.error_code(), ": ",
                      status.error_message());
}

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_GRPC_CHANNEL_H_
