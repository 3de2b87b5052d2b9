#include "workloads.h"

#include <sys/resource.h>

#include <atomic>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "crash_holder.h"
#include "epoll_loop.h"
#include "etcd_lock_client.h"
#include "grpc_loop.h"
#include "latencies.h"
#include "leasekeeper_lock_client.h"
#include "metrics/testing/exposition_parser.h"
#include "metrics/testing/http_get.h"
#include "process_stats.h"
#include "redis_lock_client.h"

namespace leasekeeper::bench {
namespace {

constexpr int64_t kLongLeaseMs = 30'000;  // W1-W3, and every waiter
constexpr int64_t kShortLeaseMs = 2'000;  // W4's holders
constexpr int kW2Clients = 16;

// Errors from any loop thread; the first one is reported.
class ErrorLog {
 public:
  void Add(const std::string& error) {
    absl::MutexLock lock(&mu_);
    if (count_++ == 0) first_ = error;
  }
  void Report(nlohmann::json& out) {
    absl::MutexLock lock(&mu_);
    out["errors"] = count_;
    if (count_ > 0) out["first_error"] = first_;
  }
  // The first error, or "" if there was none.
  std::string first() {
    absl::MutexLock lock(&mu_);
    return first_;
  }

 private:
  absl::Mutex mu_;
  int64_t count_ ABSL_GUARDED_BY(mu_) = 0;
  std::string first_ ABSL_GUARDED_BY(mu_);
};

// The measured interval of W1 and W2, in NowNs().
struct Window {
  int64_t start_ns;
  int64_t end_ns;
  bool Contains(int64_t from, int64_t to) const {
    return from >= start_ns && to <= end_ns;
  }
};

// The clients of one workload and the loops they run on.
// Invariant: the loops are destroyed (drained) before the clients.
class Fleet {
 public:
  Fleet(const Target& target, int threads) : target_(target) {
    for (int i = 0; i < std::max(threads, 1); ++i) {
      if (target.system == System::kRedis) {
        loops_.push_back(std::make_unique<EpollLoop>());
      } else {
        loops_.push_back(std::make_unique<GrpcLoop>());
      }
    }
  }
  ~Fleet() {
    loops_.clear();
    clients_.clear();
  }
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  int loops() const { return static_cast<int>(loops_.size()); }

  // A client named target.prefix + "/" + name, on loop `loop_index`
  // (modulo the number of loops).
  LockClient* Add(const std::string& name, int loop_index) {
    Loop* loop = loops_[loop_index % loops_.size()].get();
    std::string id = absl::StrCat(target_.prefix, "/", name);
    switch (target_.system) {
      case System::kLeasekeeper:
        clients_.push_back(std::make_unique<LeasekeeperLockClient>(
            *static_cast<GrpcLoop*>(loop), target_.address, id));
        break;
      case System::kRedis:
        clients_.push_back(std::make_unique<RedisLockClient>(
            *static_cast<EpollLoop*>(loop), target_.address, id));
        break;
      case System::kEtcd:
        clients_.push_back(std::make_unique<EtcdLockClient>(
            *static_cast<GrpcLoop*>(loop), target_.address, id));
        break;
    }
    return clients_.back().get();
  }

  // Starts every client added so far; "" or the first error.
  std::string StartAll() {
    ErrorLog errors;
    absl::BlockingCounter started(static_cast<int>(clients_.size()));
    for (auto& client : clients_) {
      LockClient* c = client.get();
      c->loop().Post([c, &errors, &started] {
        c->Start([&errors, &started](std::string error) {
          if (!error.empty()) errors.Add(error);
          started.DecrementCount();
        });
      });
    }
    started.Wait();
    return errors.first();
  }

  void StopAll() {
    absl::BlockingCounter stopped(static_cast<int>(clients_.size()));
    for (auto& client : clients_) {
      LockClient* c = client.get();
      c->loop().Post(
          [c, &stopped] { c->Stop([&stopped] { stopped.DecrementCount(); }); });
    }
    stopped.Wait();
  }

 private:
  const Target target_;
  std::vector<std::unique_ptr<LockClient>> clients_;
  std::vector<std::unique_ptr<Loop>> loops_;
};

int64_t SelfCpuNs() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1'000'000'000LL +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1'000LL;
}

void SleepUntil(int64_t ns) {
  int64_t left = ns - NowNs();
  if (left > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(left));
}

// CPU time of each of `pids` now (-1 for one that cannot be read).
std::vector<int64_t> CpuNsOf(const std::vector<int>& pids) {
  std::vector<int64_t> ns;
  for (int pid : pids) {
    std::optional<ProcessStats> stats = ReadProcessStats(pid);
    ns.push_back(stats ? stats->cpu_ns : -1);
  }
  return ns;
}

// CPU time each process used between two readings of CpuNsOf (-1: not
// readable at both).
std::vector<int64_t> CpuUsed(const std::vector<int64_t>& before,
                             const std::vector<int64_t>& after) {
  std::vector<int64_t> used;
  for (size_t i = 0; i < before.size(); ++i) {
    used.push_back(before[i] < 0 || after[i] < 0 ? -1 : after[i] - before[i]);
  }
  return used;
}

// The leader's leasekeeper_etcd_transactions_total and _records_total and
// the sum of its leasekeeper_etcd_append_duration_seconds (the time its
// batch transactions took), or nullopt if /metrics cannot be read or lacks
// them (not a cluster leader).
struct EtcdCounters {
  double transactions = 0;
  double records = 0;
  double append_seconds = 0;
};
std::optional<EtcdCounters> ReadEtcdCounters(int metrics_port) {
  absl::StatusOr<metrics::testing::HttpResponse> got =
      metrics::testing::HttpGet(metrics_port, "/metrics");
  if (!got.ok() || got->status != 200) return std::nullopt;
  absl::StatusOr<metrics::testing::Exposition> exposition =
      metrics::testing::Exposition::Parse(got->body);
  if (!exposition.ok()) return std::nullopt;
  std::optional<double> transactions =
      exposition->Value("leasekeeper_etcd_transactions_total");
  std::optional<double> records =
      exposition->Value("leasekeeper_etcd_records_total");
  std::optional<double> append_seconds =
      exposition->Value("leasekeeper_etcd_append_duration_seconds_sum");
  if (!transactions || !records || !append_seconds) return std::nullopt;
  return EtcdCounters{*transactions, *records, *append_seconds};
}

// What the servers did over a window, measured from the calling thread at
// its edges: the CPU time of the server processes, of the observed ones,
// of this process and of the whole machine, and the leader's etcd
// transaction counters (Target says which).
class CpuMeter {
 public:
  explicit CpuMeter(const Target& target) : target_(target) {}
  void Begin() {
    machine_ns_ = -MachineBusyNs();
    bench_ns_ = -SelfCpuNs();
    server_before_ = CpuNsOf(target_.server_pids);
    observed_before_ = CpuNsOf(target_.observed_pids);
    if (target_.metrics_port > 0)
      etcd_before_ = ReadEtcdCounters(target_.metrics_port);
  }
  void End() {
    machine_ns_ += MachineBusyNs();
    bench_ns_ += SelfCpuNs();
    server_used_ = CpuUsed(server_before_, CpuNsOf(target_.server_pids));
    observed_used_ = CpuUsed(observed_before_, CpuNsOf(target_.observed_pids));
    if (target_.metrics_port > 0)
      etcd_after_ = ReadEtcdCounters(target_.metrics_port);
  }
  // Adds bench_cpu_ms and, with server pids, server_cpu_ms (their sum),
  // server_cpu_ms_each, other_cpu_ms (everything else the machine ran
  // meanwhile, the observed processes included) and, per operation,
  // server_cpu_us_per_op; observed_cpu_ms_each with observed pids;
  // etcd_transactions, etcd_records and etcd_append_s (the seconds those
  // transactions took) with a metrics port.
  void Report(nlohmann::json& out, int64_t operations) const {
    out["bench_cpu_ms"] = bench_ns_ / 1e6;
    if (!target_.server_pids.empty()) {
      int64_t server_ns = 0;
      nlohmann::json each = nlohmann::json::array();
      for (int64_t ns : server_used_) {
        each.push_back(ns < 0 ? -1 : ns / 1e6);
        server_ns += std::max<int64_t>(ns, 0);
      }
      out["other_cpu_ms"] =
          std::max<int64_t>(0, machine_ns_ - bench_ns_ - server_ns) / 1e6;
      out["server_cpu_ms"] = server_ns / 1e6;
      out["server_cpu_ms_each"] = each;
      if (operations > 0)
        out["server_cpu_us_per_op"] = server_ns / 1e3 / operations;
    }
    if (!target_.observed_pids.empty()) {
      nlohmann::json each = nlohmann::json::array();
      for (int64_t ns : observed_used_) each.push_back(ns < 0 ? -1 : ns / 1e6);
      out["observed_cpu_ms_each"] = each;
    }
    if (etcd_before_ && etcd_after_) {
      out["etcd_transactions"] =
          etcd_after_->transactions - etcd_before_->transactions;
      out["etcd_records"] = etcd_after_->records - etcd_before_->records;
      out["etcd_append_s"] =
          etcd_after_->append_seconds - etcd_before_->append_seconds;
    }
  }

 private:
  const Target& target_;
  int64_t bench_ns_ = 0;
  int64_t machine_ns_ = 0;
  std::vector<int64_t> server_before_, server_used_;
  std::vector<int64_t> observed_before_, observed_used_;
  std::optional<EtcdCounters> etcd_before_, etcd_after_;
};

nlohmann::json Header(const Target& target, const char* workload) {
  return {{"system", SystemName(target.system)}, {"workload", workload}};
}

// ---- W1 ----

class W1Worker {
 public:
  W1Worker(LockClient* client, std::string lock, Window window,
           ErrorLog* errors, absl::BlockingCounter* finished)
      : client_(client),
        lock_(std::move(lock)),
        window_(window),
        errors_(errors),
        finished_(finished) {}

  void Step() {
    int64_t t0 = NowNs();
    if (t0 >= window_.end_ns) {
      finished_->DecrementCount();
      return;
    }
    client_->Acquire(
        lock_, kLongLeaseMs, /*wait=*/false, nullptr,
        [this, t0](AcquireResult r) {
          int64_t t1 = NowNs();
          if (!r.granted) {
            Fail(r.error.empty() ? "w1: own lock was held" : r.error);
            return;
          }
          client_->Release(lock_, [this, t0, t1](std::string error) {
            int64_t t2 = NowNs();
            if (!error.empty()) {
              Fail(error);
              return;
            }
            if (window_.Contains(t0, t2)) {
              acquire_.Add(t1 - t0);
              release_.Add(t2 - t1);
            }
            Step();
          });
        });
  }

  Latencies& acquire() { return acquire_; }
  Latencies& release() { return release_; }

 private:
  void Fail(const std::string& error) {
    errors_->Add(error);
    finished_->DecrementCount();
  }

  LockClient* client_;
  std::string lock_;
  Window window_;
  ErrorLog* errors_;
  absl::BlockingCounter* finished_;
  Latencies acquire_;
  Latencies release_;
};

// ---- W2 ----

class W2Worker {
 public:
  W2Worker(int index, LockClient* client, std::string lock, Window window,
           std::atomic<int>* last_holder, ErrorLog* errors,
           absl::BlockingCounter* finished)
      : index_(index),
        client_(client),
        lock_(std::move(lock)),
        window_(window),
        last_holder_(last_holder),
        errors_(errors),
        finished_(finished) {}

  void Step() {
    int64_t t0 = NowNs();
    if (t0 >= window_.end_ns) {
      finished_->DecrementCount();
      return;
    }
    client_->Acquire(lock_, kLongLeaseMs, /*wait=*/true, nullptr,
                     [this, t0](AcquireResult r) {
                       int64_t t1 = NowNs();
                       if (!r.granted) {
                         errors_->Add(r.error.empty()
                                          ? "w2: wait ended without a grant"
                                          : r.error);
                         finished_->DecrementCount();
                         return;
                       }
                       int previous = last_holder_->exchange(index_);
                       if (t1 >= window_.start_ns && t1 <= window_.end_ns) {
                         ++grants_;
                         if (previous != index_) ++handovers_;
                       }
                       if (window_.Contains(t0, t1)) wait_.Add(t1 - t0);
                       client_->Release(lock_, [this](std::string error) {
                         if (!error.empty()) {
                           errors_->Add(error);
                           finished_->DecrementCount();
                           return;
                         }
                         Step();
                       });
                     });
  }

  Latencies& wait() { return wait_; }
  int64_t grants() const { return grants_; }
  int64_t handovers() const { return handovers_; }

 private:
  int index_;
  LockClient* client_;
  std::string lock_;
  Window window_;
  std::atomic<int>* last_holder_;
  ErrorLog* errors_;
  absl::BlockingCounter* finished_;
  Latencies wait_;
  int64_t grants_ = 0;
  int64_t handovers_ = 0;
};

// ---- W3 ----

class W3Run {
 public:
  W3Run(LockClient* holder, LockClient* waiter, std::string lock, int samples)
      : holder_(holder),
        waiter_(waiter),
        lock_(std::move(lock)),
        remaining_(samples) {}

  void Next() {
    if (failed_) return;
    if (remaining_-- == 0) {
      done_.Notify();
      return;
    }
    holder_->Acquire(
        lock_, kLongLeaseMs, /*wait=*/false, nullptr, [this](AcquireResult r) {
          if (!r.granted) {
            Fail(r.error.empty() ? "w3: holder not granted" : r.error);
            return;
          }
          parts_left_ =
              2;  // the holder's release and the waiter's grant + release
          waiter_->Acquire(
              lock_, kLongLeaseMs, /*wait=*/true,
              [this] {
                absl::Duration delay = absl::Microseconds(delay_us_(rng_));
                holder_->loop().After(delay, [this] {
                  t0_ = NowNs();
                  holder_->Release(lock_, [this](std::string error) {
                    if (!error.empty()) return Fail(error);
                    PartDone();
                  });
                });
              },
              [this](AcquireResult r) {
                int64_t t1 = NowNs();
                if (!r.granted)
                  return Fail(r.error.empty() ? "w3: waiter not granted"
                                              : r.error);
                if (t0_ == 0)
                  return Fail("w3: waiter granted before the release");
                handover_.Add(t1 - t0_);
                t0_ = 0;
                waiter_->Release(lock_, [this](std::string error) {
                  if (!error.empty()) return Fail(error);
                  PartDone();
                });
              });
        });
  }

  absl::Notification& done() { return done_; }
  Latencies& handover() { return handover_; }
  ErrorLog& errors() { return errors_; }

 private:
  void PartDone() {
    if (--parts_left_ == 0) Next();
  }
  void Fail(const std::string& error) {
    if (failed_) return;
    failed_ = true;
    errors_.Add(error);
    done_.Notify();
  }

  LockClient* holder_;
  LockClient* waiter_;
  std::string lock_;
  int remaining_;
  int parts_left_ = 0;
  int64_t t0_ = 0;
  bool failed_ = false;
  std::mt19937 rng_{42};  // the same release delays for every system
  std::uniform_int_distribution<int> delay_us_{0, 10'000};
  Latencies handover_;
  ErrorLog errors_;
  absl::Notification done_;
};

// ---- W4 ----

class W4Pair {
 public:
  W4Pair(LockClient* holder, LockClient* waiter, std::string lock,
         ErrorLog* errors, absl::BlockingCounter* finished)
      : holder_(holder),
        waiter_(waiter),
        lock_(std::move(lock)),
        errors_(errors),
        finished_(finished) {}

  void Run() {
    holder_->Acquire(
        lock_, kShortLeaseMs, /*wait=*/false, nullptr, [this](AcquireResult r) {
          if (!r.granted)
            return Fail(r.error.empty() ? "w4: holder not granted" : r.error);
          expiry_ns_ = r.lease_start_ns + r.ttl_ms * 1'000'000;
          ttl_ms_ = r.ttl_ms;
          waiter_->Acquire(lock_, kLongLeaseMs, /*wait=*/true, nullptr,
                           [this](AcquireResult r) {
                             granted_ns_ = NowNs();
                             if (!r.granted)
                               return Fail(r.error.empty()
                                               ? "w4: waiter not granted"
                                               : r.error);
                             waiter_->Release(lock_, [this](std::string error) {
                               if (!error.empty()) return Fail(error);
                               finished_->DecrementCount();
                             });
                           });
        });
  }

  Loop& loop() { return holder_->loop(); }
  int64_t delay_ns() const { return granted_ns_ - expiry_ns_; }
  int64_t ttl_ms() const { return ttl_ms_; }
  bool ok() const { return ok_; }

 private:
  void Fail(const std::string& error) {
    ok_ = false;
    errors_->Add(error);
    finished_->DecrementCount();
  }

  LockClient* holder_;
  LockClient* waiter_;
  std::string lock_;
  ErrorLog* errors_;
  absl::BlockingCounter* finished_;
  int64_t expiry_ns_ = 0;
  int64_t granted_ns_ = 0;
  int64_t ttl_ms_ = 0;
  bool ok_ = true;
};

}  // namespace

absl::StatusOr<System> ParseSystem(const std::string& name) {
  if (name == "leasekeeper") return System::kLeasekeeper;
  if (name == "redis") return System::kRedis;
  if (name == "etcd") return System::kEtcd;
  return absl::InvalidArgumentError(absl::StrCat("unknown system: ", name));
}

std::string SystemName(System system) {
  switch (system) {
    case System::kLeasekeeper:
      return "leasekeeper";
    case System::kRedis:
      return "redis";
    case System::kEtcd:
      return "etcd";
  }
  return "?";
}

nlohmann::json RunW1(const Target& target, const WorkloadOptions& options) {
  nlohmann::json out = Header(target, "w1");
  out["clients"] = options.clients;
  out["threads"] = options.threads;
  ErrorLog errors;
  std::vector<std::unique_ptr<W1Worker>> workers;
  absl::BlockingCounter finished(options.clients);
  Fleet fleet(target, options.threads);
  std::vector<LockClient*> clients;
  for (int i = 0; i < options.clients; ++i) {
    clients.push_back(fleet.Add(absl::StrCat("w1-c", i), i));
  }
  if (std::string error = fleet.StartAll(); !error.empty()) {
    out["errors"] = 1;
    out["first_error"] = error;
    return out;
  }
  int64_t start = NowNs() + absl::ToInt64Nanoseconds(options.warmup);
  Window window{start, start + absl::ToInt64Nanoseconds(options.duration)};
  for (int i = 0; i < options.clients; ++i) {
    workers.push_back(std::make_unique<W1Worker>(
        clients[i], absl::StrCat(target.prefix, "/w1/", i), window, &errors,
        &finished));
    W1Worker* w = workers.back().get();
    clients[i]->loop().Post([w] { w->Step(); });
  }
  CpuMeter cpu(target);
  SleepUntil(window.start_ns);
  cpu.Begin();
  SleepUntil(window.end_ns);
  cpu.End();
  finished.Wait();
  fleet.StopAll();
  Latencies acquire, release;
  for (auto& w : workers) {
    acquire.Merge(w->acquire());
    release.Merge(w->release());
  }
  int64_t pairs = static_cast<int64_t>(acquire.count());
  out["duration_s"] = absl::ToDoubleSeconds(options.duration);
  out["pairs"] = pairs;
  out["pairs_per_s"] = pairs / absl::ToDoubleSeconds(options.duration);
  out["acquire"] = acquire.Summary();
  out["release"] = release.Summary();
  cpu.Report(out, pairs);
  errors.Report(out);
  return out;
}

nlohmann::json RunW2(const Target& target, const WorkloadOptions& options) {
  nlohmann::json out = Header(target, "w2");
  out["clients"] = kW2Clients;
  out["threads"] = options.threads;
  ErrorLog errors;
  std::atomic<int> last_holder{-1};
  std::vector<std::unique_ptr<W2Worker>> workers;
  absl::BlockingCounter finished(kW2Clients);
  Fleet fleet(target, options.threads);
  std::vector<LockClient*> clients;
  for (int i = 0; i < kW2Clients; ++i)
    clients.push_back(fleet.Add(absl::StrCat("w2-c", i), i));
  if (std::string error = fleet.StartAll(); !error.empty()) {
    out["errors"] = 1;
    out["first_error"] = error;
    return out;
  }
  int64_t start = NowNs() + absl::ToInt64Nanoseconds(options.warmup);
  Window window{start, start + absl::ToInt64Nanoseconds(options.duration)};
  std::string lock = absl::StrCat(target.prefix, "/w2");
  for (int i = 0; i < kW2Clients; ++i) {
    workers.push_back(std::make_unique<W2Worker>(
        i, clients[i], lock, window, &last_holder, &errors, &finished));
    W2Worker* w = workers.back().get();
    clients[i]->loop().Post([w] { w->Step(); });
  }
  CpuMeter cpu(target);
  SleepUntil(window.start_ns);
  cpu.Begin();
  SleepUntil(window.end_ns);
  cpu.End();
  finished.Wait();
  fleet.StopAll();
  Latencies wait;
  int64_t grants = 0, handovers = 0;
  for (auto& w : workers) {
    wait.Merge(w->wait());
    grants += w->grants();
    handovers += w->handovers();
  }
  double seconds = absl::ToDoubleSeconds(options.duration);
  out["duration_s"] = seconds;
  out["grants"] = grants;
  out["grants_per_s"] = grants / seconds;
  out["handovers"] = handovers;
  out["handovers_per_s"] = handovers / seconds;
  out["wait"] = wait.Summary();
  cpu.Report(out, grants);
  errors.Report(out);
  return out;
}

nlohmann::json RunW3(const Target& target, const WorkloadOptions& options) {
  nlohmann::json out = Header(target, "w3");
  Fleet fleet(target, 1);
  LockClient* holder = fleet.Add("w3-holder", 0);
  LockClient* waiter = fleet.Add("w3-waiter", 0);
  W3Run run(holder, waiter, absl::StrCat(target.prefix, "/w3"),
            options.samples);
  if (std::string error = fleet.StartAll(); !error.empty()) {
    out["errors"] = 1;
    out["first_error"] = error;
    return out;
  }
  CpuMeter cpu(target);
  int64_t start = NowNs();
  cpu.Begin();
  holder->loop().Post([&run] { run.Next(); });
  run.done().WaitForNotification();
  cpu.End();
  out["elapsed_s"] = (NowNs() - start) / 1e9;
  fleet.StopAll();
  out["handover"] = run.handover().Summary();
  cpu.Report(out, static_cast<int64_t>(run.handover().count()));
  run.errors().Report(out);
  return out;
}

nlohmann::json RunW4Expiry(const Target& target,
                           const WorkloadOptions& options) {
  nlohmann::json out = Header(target, "w4_expiry");
  ErrorLog errors;
  std::vector<std::unique_ptr<W4Pair>> pairs;
  absl::BlockingCounter finished(options.samples);
  Fleet fleet(target, options.threads);
  for (int i = 0; i < options.samples; ++i) {
    LockClient* holder = fleet.Add(absl::StrCat("w4-h", i), i);
    LockClient* waiter = fleet.Add(absl::StrCat("w4-w", i), i);
    pairs.push_back(std::make_unique<W4Pair>(
        holder, waiter, absl::StrCat(target.prefix, "/w4/", i), &errors,
        &finished));
  }
  if (std::string error = fleet.StartAll(); !error.empty()) {
    out["errors"] = 1;
    out["first_error"] = error;
    return out;
  }
  for (int i = 0; i < options.samples; ++i) {
    W4Pair* pair = pairs[i].get();
    pair->loop().After(options.stagger * i, [pair] { pair->Run(); });
  }
  finished.Wait();
  fleet.StopAll();
  Latencies delay;
  for (auto& pair : pairs) {
    if (pair->ok()) delay.Add(pair->delay_ns());
  }
  out["lease_ms"] = pairs.empty() ? 0 : pairs.front()->ttl_ms();
  out["after_expiry"] = delay.Summary();
  errors.Report(out);
  return out;
}

nlohmann::json RunW4Crash(const Target& target,
                          const WorkloadOptions& options) {
  nlohmann::json out = Header(target, "w4_crash");
  ErrorLog errors;
  std::vector<std::unique_ptr<CrashHolder>> holders;
  for (int i = 0; i < options.samples; ++i) {
    auto holder = CrashHolder::Spawn(
        target.address, absl::StrCat(target.prefix, "/w4c-h", i),
        absl::StrCat(target.prefix, "/w4c/", i), kLongLeaseMs);
    if (!holder.ok()) {
      out["errors"] = 1;
      out["first_error"] = holder.status().ToString();
      return out;
    }
    holders.push_back(*std::move(holder));
  }
  std::vector<int64_t> cut_ns(options.samples, 0),
      granted_ns(options.samples, 0);
  absl::BlockingCounter finished(options.samples);
  Fleet fleet(target, options.threads);
  std::vector<LockClient*> waiters;
  for (int i = 0; i < options.samples; ++i) {
    waiters.push_back(fleet.Add(absl::StrCat("w4c-w", i), i));
  }
  if (std::string error = fleet.StartAll(); !error.empty()) {
    out["errors"] = 1;
    out["first_error"] = error;
    return out;
  }
  for (int i = 0; i < options.samples; ++i) {
    LockClient* waiter = waiters[i];
    CrashHolder* holder = holders[i].get();
    std::string lock = absl::StrCat(target.prefix, "/w4c/", i);
    waiter->loop().Post([&, i, waiter, holder, lock] {
      waiter->Acquire(
          lock, kLongLeaseMs, /*wait=*/true,
          [&, i, waiter, holder] {
            waiter->loop().After(options.stagger * i, [&, i, holder] {
              cut_ns[i] = holder->Kill();
            });
          },
          [&, i, waiter, lock](AcquireResult r) {
            granted_ns[i] = NowNs();
            if (!r.granted) {
              errors.Add(r.error.empty() ? "w4 crash: waiter not granted"
                                         : r.error);
              finished.DecrementCount();
              return;
            }
            waiter->Release(lock, [&](std::string error) {
              if (!error.empty()) errors.Add(error);
              finished.DecrementCount();
            });
          });
    });
  }
  finished.Wait();
  fleet.StopAll();
  Latencies delay;
  for (int i = 0; i < options.samples; ++i) {
    if (cut_ns[i] > 0 && granted_ns[i] > cut_ns[i])
      delay.Add(granted_ns[i] - cut_ns[i]);
  }
  out["lease_ms"] = kLongLeaseMs;
  out["grace_ms"] = holders.empty() ? 0 : holders.front()->grace_ms();
  out["after_cut"] = delay.Summary();
  errors.Report(out);
  return out;
}

}  // namespace leasekeeper::bench
