#include "harness/channel.h"

#include <atomic>

namespace leasekeeper::testing {

std::shared_ptr<grpc::Channel> NewChannel(
    const std::string& address,
    std::shared_ptr<grpc::ChannelCredentials> credentials) {
  static std::atomic<int> counter{0};
  grpc::ChannelArguments args;
  // A distinct argument keeps gRPC from sharing one subchannel (and so one
  // connection) between channels.
  args.SetInt("leasekeeper.test.channel", counter.fetch_add(1));
  if (credentials == nullptr) {
    credentials = grpc::InsecureChannelCredentials();
  }
  return grpc::CreateCustomChannel(address, credentials, args);
}

}  // namespace leasekeeper::testing
