#include "tests/server/test_support.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "spdlog/spdlog.h"

namespace leasekeeper::testing {
namespace {

// In-process servers log through spdlog's default logger; keep test output
// to warnings unless LEASEKEEPER_TEST_LOG names a level (e.g. "debug").
const bool kLogLevelSet = [] {
  const char* level = std::getenv("LEASEKEEPER_TEST_LOG");
  spdlog::set_level(level != nullptr ? spdlog::level::from_str(level)
                                     : spdlog::level::warn);
  return true;
}();

using std::chrono::milliseconds;
using std::chrono::steady_clock;

template <typename Request, typename Response>
using SyncMethod = grpc::Status (pb::LockService::Stub::*)(grpc::ClientContext*,
                                                           const Request&,
                                                           Response*);

template <typename Request, typename Response>
Result<Response> Invoke(pb::LockService::Stub& stub,
                        SyncMethod<Request, Response> method,
                        const Request& request) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  Result<Response> result;
  result.status = (stub.*method)(&context, request, &result.response);
  ReadErrorMetadata(context, result);
  return result;
}

}  // namespace

AsyncAcquire::AsyncAcquire(pb::LockService::Stub& stub,
                           const pb::AcquireRequest& request,
                           milliseconds deadline)
    : state_(std::make_unique<State>()) {
  state_->request = request;
  state_->context.set_deadline(std::chrono::system_clock::now() + deadline);
  State* state = state_.get();
  stub.async()->Acquire(&state->context, &state->request, &state->response,
                        [state](grpc::Status status) {
                          std::lock_guard<std::mutex> lock(state->mu);
                          state->status = std::move(status);
                          state->done = true;
                          state->cv.notify_all();
                        });
}

AsyncAcquire::~AsyncAcquire() {
  if (!Done(milliseconds(0))) state_->context.TryCancel();
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [this] { return state_->done; });
}

bool AsyncAcquire::Done(milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->cv.wait_for(lock, timeout, [this] { return state_->done; });
}

Result<pb::AcquireResponse> AsyncAcquire::Get() {
  Result<pb::AcquireResponse> result;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait(lock, [this] { return state_->done; });
    result.status = state_->status;
  }
  result.response = state_->response;
  ReadErrorMetadata(state_->context, result);
  return result;
}

TestClient::TestClient(const std::string& address)
    : channel_(NewChannel(address)),
      stub_(pb::LockService::NewStub(channel_)) {}

Result<pb::AcquireResponse> TestClient::Acquire(
    const pb::AcquireRequest& request) {
  return Invoke(*stub_, &pb::LockService::Stub::Acquire, request);
}

Result<pb::AcquireResponse> TestClient::Acquire(const std::string& client,
                                                const std::string& lock,
                                                int64_t ttl_ms,
                                                pb::LockMode mode) {
  pb::AcquireRequest request = AcquireRequest(client, lock, ttl_ms);
  request.set_mode(mode);
  return Acquire(request);
}

Result<pb::RenewResponse> TestClient::Renew(const pb::RenewRequest& request) {
  return Invoke(*stub_, &pb::LockService::Stub::Renew, request);
}

Result<pb::RenewResponse> TestClient::Renew(const std::string& client,
                                            const std::string& lock,
                                            int64_t ttl_ms) {
  return Renew(RenewRequest(client, lock, ttl_ms));
}

Result<pb::ReleaseResponse> TestClient::Release(
    const pb::ReleaseRequest& request) {
  return Invoke(*stub_, &pb::LockService::Stub::Release, request);
}

Result<pb::ReleaseResponse> TestClient::Release(const std::string& client,
                                                const std::string& lock) {
  return Release(ReleaseRequest(client, lock));
}

Result<pb::WriteResponse> TestClient::Write(const pb::WriteRequest& request) {
  return Invoke(*stub_, &pb::LockService::Stub::Write, request);
}

Result<pb::WriteResponse> TestClient::Write(const std::string& lock,
                                            const std::string& key,
                                            const std::string& value,
                                            uint64_t token) {
  return Write(WriteRequest(lock, key, value, token));
}

Result<pb::ReadResponse> TestClient::Read(const std::string& lock,
                                          const std::string& key) {
  return Read(ReadRequest(lock, key));
}

Result<pb::ReadResponse> TestClient::Read(const pb::ReadRequest& request) {
  return Invoke(*stub_, &pb::LockService::Stub::Read, request);
}

Result<pb::DeleteResponse> TestClient::Delete(const pb::DeleteRequest& request) {
  return Invoke(*stub_, &pb::LockService::Stub::Delete, request);
}

Result<pb::ListKeysResponse> TestClient::ListKeys(
    const pb::ListKeysRequest& request) {
  return Invoke(*stub_, &pb::LockService::Stub::ListKeys, request);
}

Result<pb::InspectResponse> TestClient::Inspect(const std::string& lock) {
  pb::InspectRequest request;
  request.set_lock(lock);
  return Invoke(*stub_, &pb::LockService::Stub::Inspect, request);
}

Result<pb::StatusResponse> TestClient::Status(const std::string& client) {
  pb::StatusRequest request;
  request.set_client_id(client);
  return Invoke(*stub_, &pb::LockService::Stub::Status, request);
}

Result<pb::InspectResponse> TestClient::Inspect(
    const pb::InspectRequest& request) {
  return Invoke(*stub_, &pb::LockService::Stub::Inspect, request);
}

Result<pb::StatusResponse> TestClient::Status(
    const pb::StatusRequest& request) {
  return Invoke(*stub_, &pb::LockService::Stub::Status, request);
}

Result<pb::ListLocksResponse> TestClient::ListLocks(
    const pb::ListLocksRequest& request) {
  return Invoke(*stub_, &pb::LockService::Stub::ListLocks, request);
}

std::unique_ptr<AsyncAcquire> TestClient::StartAcquire(
    const pb::AcquireRequest& request, milliseconds deadline) {
  return std::make_unique<AsyncAcquire>(*stub_, request, deadline);
}

pb::AcquireRequest AcquireRequest(const std::string& client,
                                  const std::string& lock, int64_t ttl_ms,
                                  int64_t wait_timeout_ms) {
  pb::AcquireRequest request;
  request.set_client_id(client);
  request.set_lock(lock);
  request.set_ttl_ms(ttl_ms);
  request.set_wait_timeout_ms(wait_timeout_ms);
  return request;
}

pb::RenewRequest RenewRequest(const std::string& client,
                              const std::string& lock, int64_t ttl_ms) {
  pb::RenewRequest request;
  request.set_client_id(client);
  request.set_lock(lock);
  request.set_ttl_ms(ttl_ms);
  return request;
}

pb::ReleaseRequest ReleaseRequest(const std::string& client,
                                  const std::string& lock) {
  pb::ReleaseRequest request;
  request.set_client_id(client);
  request.set_lock(lock);
  return request;
}

pb::WriteRequest WriteRequest(const std::string& lock, const std::string& key,
                              const std::string& value, uint64_t token,
                              const std::string& client, bool require_held) {
  pb::WriteRequest request;
  request.set_lock(lock);
  request.set_key(key);
  request.set_value(value);
  request.set_token(token);
  request.set_client_id(client);
  request.set_require_held(require_held);
  return request;
}

pb::ReadRequest ReadRequest(const std::string& lock, const std::string& key,
                            uint64_t token) {
  pb::ReadRequest request;
  request.set_lock(lock);
  request.set_key(key);
  request.set_token(token);
  return request;
}

pb::DeleteRequest DeleteRequest(const std::string& lock, const std::string& key,
                                uint64_t token, const std::string& client) {
  pb::DeleteRequest request;
  request.set_lock(lock);
  request.set_key(key);
  request.set_token(token);
  request.set_client_id(client);
  return request;
}

pb::ListKeysRequest ListKeysRequest(const std::string& lock,
                                    const std::string& after, int32_t limit) {
  pb::ListKeysRequest request;
  request.set_lock(lock);
  request.set_after(after);
  request.set_limit(limit);
  return request;
}

bool Eventually(const std::function<bool()>& condition, milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  while (steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return condition();
}

server::ServerConfig ServerTest::DefaultConfig() {
  server::ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.session_grace_ms = 2'000;
  return config;
}

void ServerTest::SetUp() { Restart(DefaultConfig()); }

void ServerTest::Restart(server::ServerConfig config) {
  if (server_ != nullptr) server_->Shutdown();
  client_.reset();
  server_ =
      std::make_unique<server::LeasekeeperServer>(std::move(config), clock_);
  ASSERT_TRUE(server_->Start().ok());
  address_ = server_->address();
  client_ = std::make_unique<TestClient>(address_);
}

void ServerTest::TearDown() {
  if (server_ == nullptr) return;
  EXPECT_TRUE(owner().CheckConsistency().ok())
      << owner().CheckConsistency().message();
  server_->Shutdown();
}

bool ServerTest::ParkedCallsAre(size_t n) {
  return Eventually([&] { return owner().GetStats().parked_calls == n; });
}

Daemon StartDaemon(const std::vector<std::string>& extra_args) {
  std::vector<std::string> args = {"--listen=127.0.0.1:0", "--log-level=warn"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  Daemon daemon;
  const bool has_data_dir =
      std::any_of(extra_args.begin(), extra_args.end(), [](const auto& arg) {
        return absl::StartsWith(arg, "--data-dir");
      });
  if (!has_data_dir) {
    const char* base = std::getenv("TEST_TMPDIR");
    std::string pattern = absl::StrCat(base != nullptr ? base : "/tmp",
                                       "/leasekeeperd-test-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp " << pattern;
      return daemon;
    }
    daemon.data_dir = std::shared_ptr<const std::string>(
        new std::string(pattern), [](const std::string* dir) {
          std::error_code ignored;
          std::filesystem::remove_all(*dir, ignored);
          delete dir;
        });
    args.push_back("--data-dir=" + pattern);
  }
  daemon.process = std::make_unique<ChildProcess>(LEASEKEEPERD_PATH, args);
  if (!daemon.process->running()) {
    ADD_FAILURE() << "cannot start " << LEASEKEEPERD_PATH;
    return daemon;
  }
  std::optional<std::string> line =
      daemon.process->ReadLine(std::chrono::seconds(10));
  constexpr char kPrefix[] = "leasekeeperd listening on ";
  if (!line.has_value() || !absl::StartsWith(*line, kPrefix)) {
    ADD_FAILURE() << "leasekeeperd did not report its address: "
                  << line.value_or("<nothing>");
    return daemon;
  }
  daemon.address = line->substr(sizeof(kPrefix) - 1);
  return daemon;
}

DataDir::DataDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(base != nullptr ? base : "/tmp",
                                     "/leasekeeperd-data-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern;
  path_ = pattern;
}

DataDir::~DataDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::optional<grpc::health::v1::HealthCheckResponse::ServingStatus> HealthOf(
    const std::string& address, const std::string& service) {
  auto health = grpc::health::v1::Health::NewStub(NewChannel(address));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  if (!health->Check(&context, request, &response).ok()) return std::nullopt;
  return response.status();
}

int64_t ProcStatusField(pid_t pid, const std::string& field) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, field + ":")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, " kB");
    int64_t value = 0;
    if (absl::SimpleAtoi(rest, &value)) return value;
  }
  return -1;
}

std::string TestClientPath() { return LEASEKEEPER_TEST_CLIENT_PATH; }

}  // namespace leasekeeper::testing
