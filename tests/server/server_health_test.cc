// grpc.health.v1.Health follows the store: NOT_SERVING, overall and for
// leasekeeper.v1.LockService, once the store has failed, so that a probe
// restarts a daemon that refuses every mutation.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using std::chrono::milliseconds;

// A file size limit (RLIMIT_FSIZE, SIGXFSZ ignored so that write(2) fails
// with EFBIG) fails the store for good, as in the durability tests.
TEST(HealthTest, StorageFailureTurnsHealthNotServing) {
  DataDir dir;
  const std::string command = absl::StrCat(
      "trap '' XFSZ; exec prlimit --fsize=16384 ", LEASEKEEPERD_PATH,
      " --listen=127.0.0.1:0 --log-level=off --snapshot-every=0 ", dir.flag());
  ChildProcess process("/bin/sh", {"-c", command});
  std::optional<std::string> line = process.ReadLine(milliseconds(10'000));
  ASSERT_TRUE(line.has_value());
  const std::string address = line->substr(line->rfind(' ') + 1);

  EXPECT_EQ(HealthOf(address, ""), HealthCheckResponse::SERVING);
  EXPECT_EQ(HealthOf(address, "leasekeeper.v1.LockService"),
            HealthCheckResponse::SERVING);

  TestClient client(address);
  grpc::StatusCode refused = grpc::StatusCode::OK;
  for (int i = 0; i < 2'000 && refused == grpc::StatusCode::OK; ++i) {
    refused = client
                  .Acquire(absl::StrCat("client-", i), "L", 60'000,
                           pb::LOCK_MODE_SHARED)
                  .code();
  }
  ASSERT_EQ(refused, grpc::StatusCode::UNAVAILABLE);

  EXPECT_EQ(HealthOf(address, ""), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(HealthOf(address, "leasekeeper.v1.LockService"),
            HealthCheckResponse::NOT_SERVING);
}

// On a healthy disk health stays SERVING through mutations.
TEST(HealthTest, HealthyStoreStaysServing) {
  Daemon daemon = StartDaemon();
  ASSERT_FALSE(daemon.address.empty());
  TestClient client(daemon.address);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(client
                    .Acquire(absl::StrCat("client-", i), "L", 60'000,
                             pb::LOCK_MODE_SHARED)
                    .ok());
  }
  EXPECT_EQ(HealthOf(daemon.address, ""), HealthCheckResponse::SERVING);
  EXPECT_EQ(HealthOf(daemon.address, "leasekeeper.v1.LockService"),
            HealthCheckResponse::SERVING);
}

}  // namespace
}  // namespace leasekeeper::testing
