// NewChannel: a gRPC channel to a test or benchmark target that shares no
// connection with other channels.
//
// Thread-safety: safe from any thread.
#ifndef LEASEKEEPER_HARNESS_CHANNEL_H_
#define LEASEKEEPER_HARNESS_CHANNEL_H_

#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"

namespace leasekeeper::testing {

// A fresh channel with its own TCP connection (not shared with others);
// plaintext unless `credentials` are given.
std::shared_ptr<grpc::Channel> NewChannel(
    const std::string& address,
    std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

}  // namespace leasekeeper::testing

#endif  // LEASEKEEPER_HARNESS_CHANNEL_H_
