// Test support for leasekeeperd: an in-process server with a fake clock, a
// small synchronous client, asynchronous waiting Acquires, and child
// processes (the real leasekeeperd and the test client helper; ChildProcess
// and NewChannel are harness/'s).
//
// Every server listens on 127.0.0.1 only, on a port the kernel picks.
//
// Thread-safety: a fixture and its helpers belong to the test's thread;
// AsyncAcquire completes on a gRPC thread and is safe to wait on.
#ifndef LEASEKEEPER_TESTS_SERVER_TEST_SUPPORT_H_
#define LEASEKEEPER_TESTS_SERVER_TEST_SUPPORT_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "harness/channel.h"
#include "harness/child_process.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"
#include "server/clock.h"
#include "server/server.h"
#include "server/server_config.h"

namespace leasekeeper::testing {

namespace pb = ::leasekeeper::v1;

// The outcome of one call: status, response and the error metadata.
template <typename Response>
struct Result {
  grpc::Status status;
  Response response;
  std::string reason;      // leasekeeper-reason, "" if absent
  pb::ErrorDetail detail;  // leasekeeper-error-bin

  bool ok() const { return status.ok(); }
  grpc::StatusCode code() const { return status.error_code(); }
};

// Fills reason/detail from a finished call's trailing metadata.
template <typename Response>
void ReadErrorMetadata(const grpc::ClientContext& context,
                       Result<Response>& result) {
  const auto& trailers = context.GetServerTrailingMetadata();
  if (auto it = trailers.find("leasekeeper-reason"); it != trailers.end()) {
    result.reason.assign(it->second.data(), it->second.size());
  }
  if (auto it = trailers.find("leasekeeper-error-bin"); it != trailers.end()) {
    result.detail.ParseFromString(
        std::string(it->second.data(), it->second.size()));
  }
}

// A waiting Acquire issued with the callback API.
class AsyncAcquire {
 public:
  AsyncAcquire(pb::LockService::Stub& stub, const pb::AcquireRequest& request,
               std::chrono::milliseconds deadline);
  AsyncAcquire(const AsyncAcquire&) = delete;
  AsyncAcquire& operator=(const AsyncAcquire&) = delete;
  // Waits for the call to finish (it must not outlive its context).
  ~AsyncAcquire();

  // True once the call finished, waiting at most `timeout`.
  bool Done(std::chrono::milliseconds timeout);
  // The result. REQUIRES: Done().
  Result<pb::AcquireResponse> Get();
  void Cancel() { state_->context.TryCancel(); }

 private:
  // The pattern of gRPC's callback examples: the callback signals under the
  // mutex and touches nothing afterwards, so the waiter may destroy
  // everything (context included) once it has seen `done`.
  struct State {
    grpc::ClientContext context;
    pb::AcquireRequest request;
    pb::AcquireResponse response;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;  // guarded by mu
    grpc::Status status;
  };
  std::unique_ptr<State> state_;
};

class TestClient {
 public:
  explicit TestClient(const std::string& address);

  Result<pb::AcquireResponse> Acquire(const pb::AcquireRequest& request);
  // wait_timeout_ms = 0
  Result<pb::AcquireResponse> Acquire(
      const std::string& client, const std::string& lock, int64_t ttl_ms,
      pb::LockMode mode = pb::LOCK_MODE_EXCLUSIVE);
  Result<pb::RenewResponse> Renew(const pb::RenewRequest& request);
  Result<pb::RenewResponse> Renew(const std::string& client,
                                  const std::string& lock, int64_t ttl_ms);
  Result<pb::ReleaseResponse> Release(const pb::ReleaseRequest& request);
  Result<pb::ReleaseResponse> Release(const std::string& client,
                                      const std::string& lock);
  Result<pb::WriteResponse> Write(const pb::WriteRequest& request);
  Result<pb::WriteResponse> Write(const std::string& lock,
                                  const std::string& key,
                                  const std::string& value, uint64_t token);
  Result<pb::ReadResponse> Read(const std::string& lock,
                                const std::string& key);
  Result<pb::ReadResponse> Read(const pb::ReadRequest& request);
  Result<pb::DeleteResponse> Delete(const pb::DeleteRequest& request);
  Result<pb::ListKeysResponse> ListKeys(const pb::ListKeysRequest& request);
  Result<pb::InspectResponse> Inspect(const std::string& lock);
  Result<pb::StatusResponse> Status(const std::string& client);
  Result<pb::InspectResponse> Inspect(const pb::InspectRequest& request);
  Result<pb::StatusResponse> Status(const pb::StatusRequest& request);
  Result<pb::ListLocksResponse> ListLocks(const pb::ListLocksRequest& request);

  // A waiting Acquire (wait_timeout_ms should be > 0).
  std::unique_ptr<AsyncAcquire> StartAcquire(
      const pb::AcquireRequest& request,
      std::chrono::milliseconds deadline = std::chrono::seconds(30));

  pb::LockService::Stub& stub() { return *stub_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::LockService::Stub> stub_;
};

pb::AcquireRequest AcquireRequest(const std::string& client,
                                  const std::string& lock, int64_t ttl_ms,
                                  int64_t wait_timeout_ms = 0);
pb::RenewRequest RenewRequest(const std::string& client,
                              const std::string& lock, int64_t ttl_ms);
pb::ReleaseRequest ReleaseRequest(const std::string& client,
                                  const std::string& lock);
// `client` and `require_held`: a holder-checked write (empty, false: not).
pb::WriteRequest WriteRequest(const std::string& lock, const std::string& key,
                              const std::string& value, uint64_t token,
                              const std::string& client = "",
                              bool require_held = false);
// `token` 0: an unfenced read.
pb::ReadRequest ReadRequest(const std::string& lock, const std::string& key,
                            uint64_t token = 0);

pb::DeleteRequest DeleteRequest(const std::string& lock, const std::string& key,
                                uint64_t token, const std::string& client);
pb::ListKeysRequest ListKeysRequest(const std::string& lock,
                                    const std::string& after = "",
                                    int32_t limit = 0);

// Polls `condition` every millisecond until true or `timeout`; the observer
// polls, never the server.
bool Eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(5));

// leasekeeperd in-process on 127.0.0.1:0 with a FakeClock at tick 0.
class ServerTest : public ::testing::Test {
 protected:
  static server::ServerConfig DefaultConfig();

  void SetUp() override;
  void TearDown() override;
  // Replaces the running server (SetUp starts one with DefaultConfig()).
  void Restart(server::ServerConfig config);

  // Moves the fake clock to `ms`.
  void At(Tick ms) { clock_.Set(ms); }
  server::CoreOwner& owner() { return server_->owner(); }
  // Waits until the server has `n` parked waiting calls.
  bool ParkedCallsAre(size_t n);

  server::FakeClock clock_{0};
  std::unique_ptr<server::LeasekeeperServer> server_;
  std::unique_ptr<TestClient> client_;
  std::string address_;
};

// Starts build/bin/leasekeeperd on 127.0.0.1:0 with `extra_args` and
// returns it with its address, or nullptr (and a test failure). Unless
// `extra_args` names a --data-dir, the daemon gets a fresh one of its own
// under $TEST_TMPDIR (or /tmp), removed with the last copy of `data_dir`.
struct Daemon {
  std::unique_ptr<ChildProcess> process;
  std::string address;
  std::shared_ptr<const std::string> data_dir;
};
Daemon StartDaemon(const std::vector<std::string>& extra_args = {});

// grpc.health.v1.Health's answer for `service` ("" overall) at `address`,
// or nullopt if the check failed (5 s deadline).
std::optional<grpc::health::v1::HealthCheckResponse::ServingStatus> HealthOf(
    const std::string& address, const std::string& service);

// A field of /proc/PID/status ("Threads", "VmRSS" in KiB) as a number; -1
// if absent.
int64_t ProcStatusField(pid_t pid, const std::string& field);

// Path of the test client helper (tests/server/test_client.cc).
std::string TestClientPath();

// A fresh data dir under $TEST_TMPDIR (or /tmp) that outlives the daemons
// (or CoreOwners) started on it; removed with this object.
class DataDir {
 public:
  DataDir();
  ~DataDir();
  DataDir(const DataDir&) = delete;
  DataDir& operator=(const DataDir&) = delete;
  const std::string& path() const { return path_; }
  std::string flag() const { return "--data-dir=" + path_; }

 private:
  std::string path_;
};

}  // namespace leasekeeper::testing

#endif  // LEASEKEEPER_TESTS_SERVER_TEST_SUPPORT_H_
