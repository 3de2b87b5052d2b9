// leasekeeper-loadgen: measures a running leasekeeperd over gRPC.
//
//   leasekeeper-loadgen [--target=127.0.0.1:7233] [--samples=1000]
//                       [--clients=64] [--seconds=5] [--lanes=10]
//                       [--server-pid=PID] [--ids=200000]
//                       [--capacity=4]
//                       [--only=release|expiry|throughput|memory|clients|
//                               semaphore]
//
// Figures:
//  release    time from sending a Release to the waiting Acquire of the next
//             client returning granted (push hand-over), p50/p99/max.
//  expiry     time from a lease's expiry instant to the waiter's grant
//             arriving. The server's ticks are CLOCK_MONOTONIC milliseconds,
//             the same clock this process reads, so the expiry instant is
//             known exactly when the holder's grant tick is: samples whose
//             Acquire round trip crossed a millisecond boundary are retried.
//             --lanes pairs run at once, each sample with a 50 ms lease.
//  throughput acquire+release pairs per second with --clients concurrent
//             clients, each on its own lock (uncontended) and all on one lock
//             waiting for each other (contended hand-over).
//  memory     (needs --server-pid) VmRSS of the server before and after
//             100,000 held locks plus 10,000 blocked waiters.
//  clients    (needs --server-pid) VmRSS of the server before and after
//             --ids distinct client ids have each taken a lock and released
//             it (--clients at a time, each on a lock of its own), so that
//             only their registrations remain, unless the server forgets
//             idle clients (--forget-idle-clients-after).
//  semaphore  (on request only) W2 on a counting semaphore: --clients
//             clients on one semaphore of --capacity permits, each waiting
//             for a permit and releasing it as soon as granted; grants/s and
//             the Acquire call's latency (its wait for a permit) p50/p99.
//             With --server-pid also VmRSS before and after 100,000 permit
//             holders (100 semaphores of capacity 1,000, one client per
//             permit).
// Lock names are unique per run, so it can run against a live server; every
// lease it takes is released, or lapses within 60 s.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "grpcpp/grpcpp.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"

namespace {

namespace pb = ::leasekeeper::v1;
using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

struct Options {
  std::string target = "127.0.0.1:7233";
  int samples = 1'000;
  int clients = 64;
  int seconds = 5;
  int server_pid = 0;
  int lanes = 10;  // concurrent holder/waiter pairs in the expiry test
  int ids = 200'000;  // distinct client ids in the clients figure
  int capacity = 4;   // permits of the semaphore figure
  std::string only;
};

std::string run_id;  // makes lock and client names unique per run

std::shared_ptr<grpc::Channel> NewChannel(const std::string& target, int n) {
  grpc::ChannelArguments args;
  args.SetInt("leasekeeper.loadgen.channel", n);  // one connection each
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
}

double Micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

void PrintPercentiles(const char* what, std::vector<double> us) {
  if (us.empty()) {
    std::printf("%-44s no samples\n", what);
    return;
  }
  std::sort(us.begin(), us.end());
  auto at = [&](double q) {
    return us[std::min(us.size() - 1, static_cast<size_t>(q * us.size()))];
  };
  std::printf("%-44s n=%zu p50=%.0fus p99=%.0fus max=%.0fus\n", what, us.size(),
              at(0.50), at(0.99), us.back());
}

// A waiting Acquire whose completion time is recorded by the callback.
class Waiter {
 public:
  Waiter(pb::LockService::Stub& stub, pb::AcquireRequest request)
      : request_(std::move(request)) {
    context_.set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(30));
    stub.async()->Acquire(&context_, &request_, &response_,
                          [this](grpc::Status status) {
                            const Clock::time_point now = Clock::now();
                            std::lock_guard<std::mutex> lock(mu_);
                            status_ = std::move(status);
                            finished_at_ = now;
                            done_ = true;
                            cv_.notify_all();
                          });
  }
  ~Waiter() {
    context_.TryCancel();
    Wait();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
  }
  bool granted() {
    Wait();
    return status_.ok() && response_.has_granted();
  }
  Clock::time_point finished_at() {
    Wait();
    return finished_at_;
  }
  void Cancel() { context_.TryCancel(); }

 private:
  grpc::ClientContext context_;
  pb::AcquireRequest request_;
  pb::AcquireResponse response_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  grpc::Status status_;
  Clock::time_point finished_at_;
};

pb::AcquireRequest Request(const std::string& client, const std::string& lock,
                           int64_t ttl_ms, int64_t wait_ms) {
  pb::AcquireRequest request;
  request.set_client_id(client);
  request.set_lock(lock);
  request.set_ttl_ms(ttl_ms);
  request.set_wait_timeout_ms(wait_ms);
  return request;
}

grpc::Status Acquire(pb::LockService::Stub& stub, const pb::AcquireRequest& r,
                     pb::AcquireResponse* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  return stub.Acquire(&context, r, response);
}

grpc::Status Release(pb::LockService::Stub& stub, const std::string& client,
                     const std::string& lock) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  pb::ReleaseRequest request;
  request.set_client_id(client);
  request.set_lock(lock);
  pb::ReleaseResponse response;
  return stub.Release(&context, request, &response);
}

int QueueLength(pb::LockService::Stub& stub, const std::string& lock) {
  grpc::ClientContext context;
  pb::InspectRequest request;
  request.set_lock(lock);
  pb::InspectResponse response;
  if (!stub.Inspect(&context, request, &response).ok()) return -1;
  return response.queue_size();
}

void WaitUntilQueued(pb::LockService::Stub& stub, const std::string& lock,
                     int n) {
  while (QueueLength(stub, lock) < n) {
    std::this_thread::sleep_for(microseconds(200));
  }
}

void MeasureRelease(const Options& o) {
  auto holder_stub = pb::LockService::NewStub(NewChannel(o.target, 1));
  auto waiter_stub = pb::LockService::NewStub(NewChannel(o.target, 2));
  std::vector<double> handover, release_rtt;
  for (int i = 0; i < o.samples; ++i) {
    const std::string lock = absl::StrCat("lg/", run_id, "/release/", i);
    pb::AcquireResponse granted;
    if (!Acquire(*holder_stub, Request("lg-holder", lock, 60'000, 0), &granted)
             .ok()) {
      std::printf("release: holder acquire failed\n");
      return;
    }
    Waiter waiter(*waiter_stub, Request("lg-waiter", lock, 60'000, 10'000));
    WaitUntilQueued(*holder_stub, lock, 1);
    const Clock::time_point sent = Clock::now();
    Release(*holder_stub, "lg-holder", lock);
    const Clock::time_point released = Clock::now();
    if (!waiter.granted()) continue;
    handover.push_back(Micros(waiter.finished_at() - sent));
    release_rtt.push_back(Micros(released - sent));
    Release(*waiter_stub, "lg-waiter", lock);
  }
  PrintPercentiles("release sent -> waiter's grant received", handover);
  PrintPercentiles("  (Release round trip, for reference)", release_rtt);
}

void MeasureExpiry(const Options& o) {
  const int lane_count = std::max(1, o.lanes);
  constexpr int64_t kTtlMs = 50;
  std::mutex mu;
  std::vector<double> latencies;
  std::atomic<int> retried{0};
  std::vector<std::thread> lanes;
  for (int lane = 0; lane < lane_count; ++lane) {
    lanes.emplace_back([&, lane] {
      auto holder_stub =
          pb::LockService::NewStub(NewChannel(o.target, 10 + lane));
      auto waiter_stub =
          pb::LockService::NewStub(NewChannel(o.target, 30 + lane));
      const std::string holder = absl::StrCat("lg-exp-holder-", lane);
      const std::string waiter_id = absl::StrCat("lg-exp-waiter-", lane);
      int done = 0;
      for (int i = 0; done < o.samples / lane_count; ++i) {
        const std::string lock =
            absl::StrCat("lg/", run_id, "/expiry/", lane, "/", i);
        pb::AcquireResponse granted;
        const Clock::time_point sent = Clock::now();
        if (!Acquire(*holder_stub, Request(holder, lock, kTtlMs, 0), &granted)
                 .ok()) {
          return;
        }
        const Clock::time_point answered = Clock::now();
        const auto sent_ms =
            std::chrono::duration_cast<milliseconds>(sent.time_since_epoch());
        const auto answered_ms = std::chrono::duration_cast<milliseconds>(
            answered.time_since_epoch());
        Waiter waiter(*waiter_stub, Request(waiter_id, lock, 1'000, 10'000));
        if (sent_ms != answered_ms) {  // grant tick ambiguous: retry
          ++retried;
          waiter.granted();
          Release(*waiter_stub, waiter_id, lock);
          continue;
        }
        const Clock::time_point expiry(sent_ms + milliseconds(kTtlMs));
        if (!waiter.granted()) continue;
        const double us = Micros(waiter.finished_at() - expiry);
        Release(*waiter_stub, waiter_id, lock);
        ++done;
        std::lock_guard<std::mutex> lock_guard(mu);
        latencies.push_back(us);
      }
    });
  }
  for (std::thread& t : lanes) t.join();
  PrintPercentiles("lease expiry instant -> waiter's grant", latencies);
  std::printf("  (%d samples retried: grant tick ambiguous)\n", retried.load());
}

void MeasureThroughput(const Options& o, bool contended) {
  constexpr int kChannels = 8;
  std::vector<std::unique_ptr<pb::LockService::Stub>> stubs;
  for (int i = 0; i < kChannels; ++i) {
    stubs.push_back(pb::LockService::NewStub(NewChannel(o.target, 100 + i)));
  }
  std::atomic<bool> stop{false};
  std::atomic<int64_t> pairs{0}, failures{0};
  std::vector<std::thread> threads;
  const Clock::time_point start = Clock::now();
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      pb::LockService::Stub& stub = *stubs[c % kChannels];
      const std::string client = absl::StrCat("lg-tp-", run_id, "-", c);
      const std::string lock = contended
                                   ? absl::StrCat("lg/", run_id, "/contended")
                                   : absl::StrCat("lg/", run_id, "/tp/", c);
      while (!stop.load(std::memory_order_relaxed)) {
        pb::AcquireResponse response;
        grpc::Status status =
            Acquire(stub, Request(client, lock, 60'000, contended ? 30'000 : 0),
                    &response);
        if (!status.ok() || !response.has_granted()) {
          ++failures;
          continue;
        }
        if (Release(stub, client, lock).ok()) ++pairs;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  stop = true;
  for (std::thread& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("%-44s %.0f pairs/s (%d clients, %.1f s, %lld failures)\n",
              contended ? "acquire+release, all on one lock"
                        : "acquire+release, one lock per client",
              static_cast<double>(pairs.load()) / seconds, o.clients, seconds,
              static_cast<long long>(failures.load()));
}

long RssKiB(int pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      long kib = 0;
      std::sscanf(line.c_str(), "VmRSS: %ld", &kib);
      return kib;
    }
  }
  return -1;
}

// Runs `count` Acquires with at most `in_flight` outstanding (callback API).
void BulkAcquire(pb::LockService::Stub& stub, int count, int in_flight,
                 const std::function<pb::AcquireRequest(int)>& make) {
  struct Call {
    grpc::ClientContext context;
    pb::AcquireRequest request;
    pb::AcquireResponse response;
  };
  std::mutex mu;
  std::condition_variable cv;
  int outstanding = 0;
  for (int i = 0; i < count; ++i) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return outstanding < in_flight; });
      ++outstanding;
    }
    auto* call = new Call;
    call->request = make(i);
    stub.async()->Acquire(&call->context, &call->request, &call->response,
                          [&, call](grpc::Status) {
                            delete call;
                            std::lock_guard<std::mutex> lock(mu);
                            --outstanding;
                            cv.notify_all();
                          });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return outstanding == 0; });
}

void MeasureMemory(const Options& o) {
  if (o.server_pid <= 0) {
    std::printf("memory: pass --server-pid=PID of leasekeeperd\n");
    return;
  }
  constexpr int kHeld = 100'000;
  constexpr int kWaiters = 10'000;
  const long before = RssKiB(o.server_pid);
  auto stub = pb::LockService::NewStub(NewChannel(o.target, 200));
  const Clock::time_point start = Clock::now();
  BulkAcquire(*stub, kHeld, 512, [&](int i) {
    return Request(absl::StrCat("lg-mem-holder-", run_id, "-", i),
                   absl::StrCat("lg/", run_id, "/mem/", i), 3'600'000, 0);
  });
  const double held_seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  const long with_held = RssKiB(o.server_pid);

  std::vector<std::unique_ptr<pb::LockService::Stub>> stubs;
  for (int i = 0; i < 8; ++i) {
    stubs.push_back(pb::LockService::NewStub(NewChannel(o.target, 300 + i)));
  }
  std::vector<std::unique_ptr<Waiter>> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(std::make_unique<Waiter>(
        *stubs[i % stubs.size()],
        Request(absl::StrCat("lg-mem-waiter-", run_id, "-", i),
                absl::StrCat("lg/", run_id, "/mem/", i), 3'600'000,
                3'600'000)));
  }
  for (int i = 0; i < kWaiters; i += 1'000) {
    WaitUntilQueued(*stub, absl::StrCat("lg/", run_id, "/mem/", i), 1);
  }
  WaitUntilQueued(*stub, absl::StrCat("lg/", run_id, "/mem/", kWaiters - 1), 1);
  std::this_thread::sleep_for(milliseconds(500));
  const long with_waiters = RssKiB(o.server_pid);
  std::printf(
      "memory: VmRSS %ld KiB idle, %ld KiB with %d held locks "
      "(%.1f s to take them), %ld KiB with %d blocked waiters too\n",
      before, with_held, kHeld, held_seconds, with_waiters, kWaiters);
  std::printf("        ~%.0f bytes per held lock, ~%.0f bytes per waiter\n",
              (with_held - before) * 1024.0 / kHeld,
              (with_waiters - with_held) * 1024.0 / kWaiters);
  for (auto& waiter : waiters) waiter->Cancel();
  waiters.clear();
  // Give the locks back (they would lapse in an hour otherwise).
  std::vector<std::thread> releasers;
  for (int t = 0; t < 8; ++t) {
    releasers.emplace_back([&, t] {
      for (int i = t; i < kHeld; i += 8) {
        Release(*stubs[t], absl::StrCat("lg-mem-holder-", run_id, "-", i),
                absl::StrCat("lg/", run_id, "/mem/", i));
      }
    });
  }
  for (std::thread& t : releasers) t.join();
}

void MeasureClientChurn(const Options& o) {
  if (o.server_pid <= 0) {
    std::printf("clients: pass --server-pid=PID of leasekeeperd\n");
    return;
  }
  constexpr int kChannels = 8;
  std::vector<std::unique_ptr<pb::LockService::Stub>> stubs;
  for (int i = 0; i < kChannels; ++i) {
    stubs.push_back(pb::LockService::NewStub(NewChannel(o.target, 400 + i)));
  }
  const long before = RssKiB(o.server_pid);
  std::atomic<int> next{0};
  std::atomic<int64_t> failures{0};
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      pb::LockService::Stub& stub = *stubs[c % kChannels];
      const std::string lock = absl::StrCat("lg/", run_id, "/churn/", c);
      for (int i = next++; i < o.ids; i = next++) {
        const std::string client = absl::StrCat("lg-churn-", run_id, "-", i);
        pb::AcquireResponse response;
        if (!Acquire(stub, Request(client, lock, 60'000, 0), &response).ok() ||
            !response.has_granted() || !Release(stub, client, lock).ok()) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const long after = RssKiB(o.server_pid);
  std::printf(
      "clients: VmRSS %ld KiB before, %ld KiB after %d distinct client ids "
      "came and went (%.1f s, %lld failures): ~%.0f bytes per id\n",
      before, after, o.ids, seconds, static_cast<long long>(failures.load()),
      (after - before) * 1024.0 / o.ids);
}

pb::AcquireRequest Permit(const std::string& client, const std::string& lock,
                          int capacity, int64_t ttl_ms, int64_t wait_ms) {
  pb::AcquireRequest request = Request(client, lock, ttl_ms, wait_ms);
  request.set_mode(pb::LOCK_MODE_SEMAPHORE);
  request.set_capacity(static_cast<uint32_t>(capacity));
  return request;
}

void MeasureSemaphore(const Options& o) {
  constexpr int kChannels = 8;
  std::vector<std::unique_ptr<pb::LockService::Stub>> stubs;
  for (int i = 0; i < kChannels; ++i) {
    stubs.push_back(pb::LockService::NewStub(NewChannel(o.target, 300 + i)));
  }
  const std::string lock = absl::StrCat("lg/", run_id, "/semaphore");
  std::atomic<bool> measuring{false}, stop{false};
  std::atomic<int64_t> grants{0}, failures{0};
  std::mutex mu;
  std::vector<double> waits_us;
  std::vector<std::thread> threads;
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      pb::LockService::Stub& stub = *stubs[c % kChannels];
      const std::string client = absl::StrCat("lg-sem-", run_id, "-", c);
      std::vector<double> mine;
      while (!stop.load(std::memory_order_relaxed)) {
        pb::AcquireResponse response;
        const Clock::time_point sent = Clock::now();
        grpc::Status status = Acquire(
            stub, Permit(client, lock, o.capacity, 60'000, 30'000), &response);
        const Clock::time_point granted = Clock::now();
        if (!status.ok() || !response.has_granted()) {
          ++failures;
          continue;
        }
        if (!Release(stub, client, lock).ok()) {
          ++failures;
          continue;
        }
        if (measuring.load(std::memory_order_relaxed)) {
          ++grants;
          mine.push_back(Micros(granted - sent));
        }
      }
      std::lock_guard<std::mutex> guard(mu);
      waits_us.insert(waits_us.end(), mine.begin(), mine.end());
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // warm-up
  measuring = true;
  const Clock::time_point start = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  measuring = false;
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  for (std::thread& t : threads) t.join();
  std::printf("%-44s %.0f grants/s (%d clients, capacity %d, %.1f s, "
              "%lld failures)\n",
              "semaphore: acquire+release, one semaphore",
              static_cast<double>(grants.load()) / seconds, o.clients,
              o.capacity, seconds, static_cast<long long>(failures.load()));
  PrintPercentiles("semaphore: Acquire call (wait for a permit)", waits_us);
}

void MeasureSemaphoreMemory(const Options& o) {
  constexpr int kSemaphores = 100;
  constexpr int kCapacity = 1000;
  constexpr int kPermits = kSemaphores * kCapacity;
  auto stub = pb::LockService::NewStub(NewChannel(o.target, 400));
  const long before = RssKiB(o.server_pid);
  BulkAcquire(*stub, kPermits, 256, [&](int i) {
    return Permit(absl::StrCat("lg-semmem-", run_id, "-", i),
                  absl::StrCat("lg/", run_id, "/semmem/", i % kSemaphores),
                  kCapacity, 60'000, 0);
  });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const long after = RssKiB(o.server_pid);
  std::printf(
      "semaphore memory: VmRSS %ld KiB before, %ld KiB with %d permit "
      "holders (%d semaphores of %d, a client each): ~%.0f bytes per holder\n",
      before, after, kPermits, kSemaphores, kCapacity,
      (after - before) * 1024.0 / kPermits);
}

bool ParseInt(absl::string_view value, int* out) {
  return absl::SimpleAtoi(value, out);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    const size_t eq = arg.find('=');
    const absl::string_view name = arg.substr(0, eq);
    const absl::string_view value =
        eq == absl::string_view::npos ? "" : arg.substr(eq + 1);
    bool ok = true;
    if (name == "--target") {
      o.target = std::string(value);
    } else if (name == "--samples") {
      ok = ParseInt(value, &o.samples);
    } else if (name == "--clients") {
      ok = ParseInt(value, &o.clients);
    } else if (name == "--seconds") {
      ok = ParseInt(value, &o.seconds);
    } else if (name == "--lanes") {
      ok = ParseInt(value, &o.lanes);
    } else if (name == "--server-pid") {
      ok = ParseInt(value, &o.server_pid);
    } else if (name == "--ids") {
      ok = ParseInt(value, &o.ids) && o.ids > 0;
    } else if (name == "--capacity") {
      ok = ParseInt(value, &o.capacity) && o.capacity >= 1 &&
           o.capacity <= 65535;
    } else if (name == "--only") {
      o.only = std::string(value);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "usage: %s [--target=HOST:PORT] [--samples=N] "
                   "[--clients=N] [--seconds=N] [--lanes=N] [--server-pid=PID] "
                   "[--ids=N] [--capacity=N] "
                   "[--only=release|expiry|throughput|memory|clients|"
                   "semaphore]\n",
                   argv[0]);
      return 2;
    }
  }
  run_id = absl::StrFormat("%d-%d", getpid(),
                           static_cast<int>(Clock::now().time_since_epoch() /
                                            milliseconds(1) % 100000));
  std::printf("leasekeeper-loadgen against %s\n", o.target.c_str());
  auto wants = [&](absl::string_view what) {
    return o.only.empty() || o.only == what;
  };
  if (wants("release")) MeasureRelease(o);
  if (wants("expiry")) MeasureExpiry(o);
  if (wants("throughput")) {
    MeasureThroughput(o, /*contended=*/false);
    MeasureThroughput(o, /*contended=*/true);
  }
  if (wants("memory")) MeasureMemory(o);
  if (o.only == "clients") MeasureClientChurn(o);  // slow: on request only
  if (o.only == "semaphore") {
    MeasureSemaphore(o);
    if (o.server_pid > 0) MeasureSemaphoreMemory(o);
  }
  return 0;
}
