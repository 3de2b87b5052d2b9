// Watch streams through real gRPC against the in-process server (fake
// clock): the stream's shape (snapshot, synced, events), its refusals, and
// a thousand watchers read with the callback API from one process, next to
// one that never reads: it is cut while the others keep up and the lock
// table keeps its pace. Marked live: it measures throughput with a loose
// bound (the machine may be loaded).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// One Watch stream read with the callback API. Counts what arrives; reads
// only once Start(read=true) or Resume() asked for it.
class Watcher final : public grpc::ClientReadReactor<pb::WatchResponse> {
 public:
  Watcher(pb::LockService::Stub& stub, pb::WatchRequest request)
      : request_(std::move(request)) {
    stub.async()->Watch(&context_, &request_, this);
  }
  ~Watcher() override {
    context_.TryCancel();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
  }

  // Starts the call; a watcher started with read=false never reads until
  // Resume().
  void Start(bool read) {
    if (read) StartRead(&message_);
    StartCall();
  }
  void Resume() { StartRead(&message_); }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (message_.has_synced()) synced_ = true;
      if (message_.has_current()) ++current_;
      if (message_.has_event()) events_.push_back(message_.event());
    }
    cv_.notify_all();
    StartRead(&message_);
  }
  void OnDone(const grpc::Status& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
    const auto& trailers = context_.GetServerTrailingMetadata();
    if (auto it = trailers.find("leasekeeper-reason"); it != trailers.end()) {
      reason_.assign(it->second.data(), it->second.size());
    }
    done_ = true;
    cv_.notify_all();
  }

  bool WaitFor(const std::function<bool()>& ready, milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, ready);
  }
  bool Synced(milliseconds timeout) {
    return WaitFor([&] { return synced_; }, timeout);
  }
  bool HasEvents(size_t n, milliseconds timeout) {
    return WaitFor([&] { return events_.size() >= n || done_; }, timeout) &&
           Events().size() >= n;
  }
  bool Done(milliseconds timeout) {
    return WaitFor([&] { return done_; }, timeout);
  }
  std::vector<pb::WatchEvent> Events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  int current() {
    std::lock_guard<std::mutex> lock(mu_);
    return current_;
  }
  grpc::Status status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  std::string reason() {
    std::lock_guard<std::mutex> lock(mu_);
    return reason_;
  }

 private:
  grpc::ClientContext context_;
  pb::WatchRequest request_;
  pb::WatchResponse message_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool synced_ = false;
  int current_ = 0;
  std::vector<pb::WatchEvent> events_;
  bool done_ = false;
  grpc::Status status_;
  std::string reason_;
};

pb::WatchRequest WatchLock(const std::string& lock) {
  pb::WatchRequest request;
  request.set_lock(lock);
  return request;
}

pb::WatchRequest WatchPrefix(const std::string& prefix) {
  pb::WatchRequest request;
  request.set_prefix(prefix);
  return request;
}

class WatchTest : public ServerTest {
 protected:
  std::unique_ptr<Watcher> StartWatcher(pb::WatchRequest request,
                                        bool read = true) {
    auto watcher = std::make_unique<Watcher>(client_->stub(), request);
    watcher->Start(read);
    return watcher;
  }
};

TEST_F(WatchTest, AStreamStartsWithTheStateThenSyncedThenEachChange) {
  ASSERT_TRUE(client_->Acquire("a", "jobs/1", 60'000).ok());
  ASSERT_TRUE(client_->Acquire("b", "jobs/1", 60'000).ok());  // queued
  std::unique_ptr<Watcher> watcher = StartWatcher(WatchPrefix("jobs/"));
  ASSERT_TRUE(watcher->Synced(milliseconds(5'000)));
  EXPECT_EQ(watcher->current(), 1);
  At(1'000);
  ASSERT_TRUE(client_->Release("a", "jobs/1").ok());
  ASSERT_TRUE(watcher->HasEvents(2, milliseconds(5'000)));
  std::vector<pb::WatchEvent> events = watcher->Events();
  EXPECT_EQ(events[0].kind(), pb::WATCH_EVENT_KIND_RELEASED);
  EXPECT_EQ(events[0].client_id(), "a");
  EXPECT_EQ(events[0].token(), 1u);
  EXPECT_EQ(events[1].kind(), pb::WATCH_EVENT_KIND_GRANTED);
  EXPECT_EQ(events[1].client_id(), "b");
  EXPECT_EQ(events[1].token(), 2u);
  EXPECT_EQ(events[1].mode(), pb::LOCK_MODE_EXCLUSIVE);
  EXPECT_EQ(events[1].ttl_ms(), 60'000);
  EXPECT_EQ(events[1].sequence(), events[0].sequence() + 1);
  EXPECT_TRUE(events[1].has_time());
}

TEST_F(WatchTest, ARequestWithoutTargetOrWithAnEmptyLockIsRefused) {
  std::unique_ptr<Watcher> none = StartWatcher(pb::WatchRequest());
  ASSERT_TRUE(none->Done(milliseconds(5'000)));
  EXPECT_EQ(none->status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(none->reason(), "INVALID_ARGUMENTS");
  std::unique_ptr<Watcher> empty = StartWatcher(WatchLock(""));
  ASSERT_TRUE(empty->Done(milliseconds(5'000)));
  EXPECT_EQ(empty->status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(owner().watch_hub().GetStats().watchers, 0u);
}

TEST_F(WatchTest, WatchersBeyondTheLimitAreRefusedWithTheLimitNamed) {
  server::ServerConfig config = DefaultConfig();
  config.limits.max_watchers = 2;
  Restart(config);
  std::unique_ptr<Watcher> first = StartWatcher(WatchLock("L"));
  std::unique_ptr<Watcher> second = StartWatcher(WatchLock("L"));
  ASSERT_TRUE(first->Synced(milliseconds(5'000)));
  ASSERT_TRUE(second->Synced(milliseconds(5'000)));
  std::unique_ptr<Watcher> third = StartWatcher(WatchLock("L"));
  ASSERT_TRUE(third->Done(milliseconds(5'000)));
  EXPECT_EQ(third->status().error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(third->reason(), "LIMIT_EXCEEDED");
  EXPECT_EQ(third->status().error_message(), "limit exceeded: max-watchers=2");
}

TEST_F(WatchTest, ShutdownEndsEveryStreamWithShuttingDown) {
  std::unique_ptr<Watcher> watcher = StartWatcher(WatchLock("L"));
  ASSERT_TRUE(watcher->Synced(milliseconds(5'000)));
  server_->Shutdown();
  ASSERT_TRUE(watcher->Done(milliseconds(5'000)));
  EXPECT_EQ(watcher->status().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(watcher->reason(), "SHUTTING_DOWN");
}

// Live: a thousand readers and one that never reads.
TEST_F(WatchTest, AThousandWatchersKeepUpWhileOneThatNeverReadsIsCut) {
  constexpr int kWatchers = 1'000;
  constexpr int kChannels = 10;
  server::ServerConfig config = DefaultConfig();
  config.limits.watch_buffer_events = 64;
  Restart(config);

  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < kChannels; ++i) {
    clients.push_back(std::make_unique<TestClient>(address_));
  }
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int i = 0; i < kWatchers; ++i) {
    auto watcher = std::make_unique<Watcher>(
        clients[i % kChannels]->stub(), WatchLock("shared/L"));
    watcher->Start(/*read=*/true);
    watchers.push_back(std::move(watcher));
  }
  // Its own connection, so that its full window stalls only itself.
  TestClient slow_client(address_);
  auto slow = std::make_unique<Watcher>(slow_client.stub(),
                                        WatchPrefix("flood/"));
  slow->Start(/*read=*/false);
  for (auto& watcher : watchers) {
    ASSERT_TRUE(watcher->Synced(milliseconds(30'000)));
  }
  ASSERT_TRUE(Eventually(
      [&] {
        return owner().watch_hub().GetStats().watchers == kWatchers + 1;
      },
      milliseconds(10'000)));

  // The flood: grants and releases on a lock only the slow one watches,
  // until its buffer overflows. Nothing waits for it meanwhile.
  // Long names make big events: gRPC's transport takes a few MB from a
  // stream whose reader does not read before its writes stall.
  const std::string flood_lock = "flood/" + std::string(250, 'x');
  const std::string flooder(250, 'f');
  const auto flood_start = steady_clock::now();
  int ops = 0;
  while (owner().watch_hub().GetStats().cut == 0 && ops < 200'000) {
    ASSERT_TRUE(client_->Acquire(flooder, flood_lock, 60'000).ok());
    ASSERT_TRUE(client_->Release(flooder, flood_lock).ok());
    ops += 2;
  }
  const double seconds =
      std::chrono::duration<double>(steady_clock::now() - flood_start)
          .count();
  ASSERT_EQ(owner().watch_hub().GetStats().cut, 1u)
      << "the slow watcher was never cut after " << ops << " operations";
  EXPECT_EQ(owner().watch_hub().GetStats().watchers,
            static_cast<size_t>(kWatchers));
  // Loose bound (a loaded machine): a lock table that waited for the slow
  // stream would stall here for good.
  EXPECT_GT(ops / seconds, 100.0) << ops << " operations in " << seconds;
  std::cout << "flood: " << ops << " operations in " << seconds
            << " s until the slow watcher was cut\n";

  // The slow one reads at last: what it had been sent, then the verdict.
  slow->Resume();
  ASSERT_TRUE(slow->Done(milliseconds(10'000)));
  EXPECT_EQ(slow->status().error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(slow->reason(), "WATCH_FELL_BEHIND");
  EXPECT_EQ(slow->status().error_message(), "watch fell behind");

  // Everyone else sees a grant and a release, in order.
  At(5'000);
  ASSERT_TRUE(client_->Acquire("owner", "shared/L", 60'000).ok());
  ASSERT_TRUE(client_->Release("owner", "shared/L").ok());
  for (auto& watcher : watchers) {
    ASSERT_TRUE(watcher->HasEvents(2, milliseconds(30'000)));
    std::vector<pb::WatchEvent> events = watcher->Events();
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].kind(), pb::WATCH_EVENT_KIND_GRANTED);
    EXPECT_EQ(events[0].client_id(), "owner");
    EXPECT_EQ(events[1].kind(), pb::WATCH_EVENT_KIND_RELEASED);
    EXPECT_EQ(events[1].token(), events[0].token());
  }
  EXPECT_EQ(owner().watch_hub().GetStats().cut, 1u);
  watchers.clear();
  ASSERT_TRUE(Eventually(
      [&] { return owner().watch_hub().GetStats().watchers == 0; },
      milliseconds(10'000)));
}

}  // namespace
}  // namespace leasekeeper::testing
