// leasekeeper-restart-bench: how long does leasekeeperd take to come back
// with N locks held?
//
// Builds data dirs the way the daemon would (apply + append, snapshot when
// asked) with N clients each holding one lock, then times DurableStore::Open
// (the whole recovery: read + check the snapshot, restore the core, replay
// the log after it, apply the restart grace) in three shapes:
//   snapshot   everything in a snapshot, nothing after it
//   snap+tail  a snapshot plus N/5 renewals in the log after it
//   log only   no snapshot: N acquires replayed from the log
// and the cost of the daemon-side pieces: capturing a CoreSnapshot under
// the core lock, and writing it (off-thread).
//
// Usage: leasekeeper-restart-bench [--locks N] [--dir DIR]
//        leasekeeper-restart-bench --build-only DIR [--locks N]
//          (a data dir for timing a real `leasekeeperd --data-dir DIR`)
// The dir (default: a fresh one under /tmp) is removed afterwards. Each
// recovery runs in a fresh process, like a restarted daemon.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/state_machine.h"
#include "storage/durable_store.h"

namespace leasekeeper::storage {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

CoreConfig ServerConfig() {
  CoreConfig config;
  config.max_ttl = 86'400'000;  // leasekeeperd: milliseconds
  return config;
}

constexpr int64_t kTtlMs = 3'600'000;
constexpr int64_t kGraceMs = 10'000;

void Check(const absl::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
    std::exit(1);
  }
}

// Fills `dir` with `locks` acquires (client i holds lock i); then
// `renewals` renewals; snapshots as `snapshot_after` says (0: none).
void Build(const std::string& dir, int64_t locks, int64_t renewals,
           bool snapshot_after_acquires) {
  StateMachine machine(ServerConfig());
  DurableStoreOptions options;
  options.fsync = FsyncPolicy::kNever;  // building, not measuring
  options.snapshot_every_records = 0;
  options.segment_bytes = uint64_t{64} << 20;
  auto store = DurableStore::Open(dir, options, machine);
  Check(store.status(), "open for build");
  Tick now = 1;
  LogPosition last = 0;
  for (int64_t i = 0; i < locks; ++i) {
    Operation op{now, op::Acquire{absl::StrCat("client-", i),
                                  absl::StrCat("jobs/export-", i), kTtlMs,
                                  LockMode::kExclusive}};
    if (i % 1000 == 999) ++now;
    machine.Apply(op).status().IgnoreError();
    auto position = (*store)->Append(op);
    Check(position.status(), "append");
    last = *position;
  }
  if (snapshot_after_acquires) {
    const auto capture = Clock::now();
    CoreSnapshot snapshot = machine.Snapshot();
    const double capture_ms = MsSince(capture);
    Check((*store)->WaitDurable(last), "durable");
    const auto write = Clock::now();
    if (!(*store)->SubmitSnapshot(std::move(snapshot), last)) {
      std::fprintf(stderr, "snapshot refused\n");
      std::exit(1);
    }
    Check((*store)->WaitForSnapshot(), "snapshot");
    const double write_ms = MsSince(write);
    const DurableStoreStats stats = (*store)->stats();
    std::printf(
        "  snapshot of %lld locks: capture under the core lock %.0f ms, "
        "encode+write+fsync+rename (off-thread) %.0f ms, %.1f MB\n",
        static_cast<long long>(locks), capture_ms, write_ms,
        stats.last_snapshot_bytes / 1e6);
  }
  for (int64_t i = 0; i < renewals; ++i) {
    Operation op{now, op::Renew{absl::StrCat("client-", i),
                                absl::StrCat("jobs/export-", i), kTtlMs}};
    if (i % 1000 == 999) ++now;
    machine.Apply(op).status().IgnoreError();
    Check((*store)->Append(op).status(), "append");
  }
  Check((*store)->Close(), "close");
}

void Recover(const std::string& label, const std::string& dir) {
  // Warm page cache, as for a restart right after a crash. Wall time is
  // what an operator sees; cpu time (all threads of this process, but only
  // Open runs) shows the work when other processes compete for the cores.
  StateMachine machine(ServerConfig());
  DurableStoreOptions options;
  options.restart_grace_ticks = kGraceMs;
  const auto start = Clock::now();
  const std::clock_t cpu_start = std::clock();
  auto store = DurableStore::Open(dir, options, machine);
  const double cpu_ms = (std::clock() - cpu_start) * 1000.0 / CLOCKS_PER_SEC;
  const double total_ms = MsSince(start);
  Check(store.status(), "recover");
  const RecoveryReport& r = (*store)->recovery();
  std::printf(
      "%-14s recovery %6.0f ms wall, %6.0f ms cpu  (snapshot read %.0f ms, "
      "restore %.0f ms, replay of %llu records %.0f ms)\n",
      label.c_str(), total_ms, cpu_ms, r.snapshot_read_us / 1000.0,
      r.restore_us / 1000.0,
      static_cast<unsigned long long>(r.records_replayed),
      r.replay_us / 1000.0);
  std::printf("           %s\n", r.Summary().c_str());
  const auto close = Clock::now();
  store->reset();
  std::printf("           (tear-down of the recovered store %.0f ms)\n",
              MsSince(close));
}

// Runs the recovery of `dir` in a fresh process (this binary with
// --recover), as a restarted daemon would: the builder's heap, full of
// freed nodes, would otherwise tax the first allocations.
void RecoverInFreshProcess(const std::string& label, const std::string& dir) {
  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl("/proc/self/exe", "leasekeeper-restart-bench", "--recover",
            dir.c_str(), "--label", label.c_str(), static_cast<char*>(nullptr));
    std::perror("exec");
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "recovery of %s failed\n", dir.c_str());
    std::exit(1);
  }
}

int Main(int argc, char** argv) {
  int64_t locks = 1'000'000;
  std::string base;
  std::string recover;
  std::string label = "recovery";
  std::string build_only;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--locks" && absl::SimpleAtoi(argv[i + 1], &locks)) continue;
    if (flag == "--dir") {
      base = argv[i + 1];
      continue;
    }
    if (flag == "--recover") {
      recover = argv[i + 1];
      continue;
    }
    if (flag == "--label") {
      label = argv[i + 1];
      continue;
    }
    if (flag == "--build-only") {
      build_only = argv[i + 1];
      continue;
    }
    std::fprintf(stderr,
                 "usage: %s [--locks N] [--dir DIR | --build-only DIR]\n",
                 argv[0]);
    return 2;
  }
  if (!recover.empty()) {
    Recover(label, recover);
    return 0;
  }
  if (!build_only.empty()) {
    Build(build_only, locks, 0, true);
    std::printf("built %s\n", build_only.c_str());
    return 0;
  }
  if (base.empty()) {
    std::string pattern = "/tmp/leasekeeper-restart-bench-XXXXXX";
    base = ::mkdtemp(pattern.data());
  }
  std::printf("leasekeeper-restart-bench: %lld locks held, data under %s\n",
              static_cast<long long>(locks), base.c_str());

  const std::string snap = base + "/snapshot";
  Build(snap, locks, 0, true);
  RecoverInFreshProcess("snapshot", snap);
  // The first restart logged a RestartGrace; without a new snapshot the
  // next restart replays it.
  RecoverInFreshProcess("snapshot+grace", snap);

  const std::string tail = base + "/snap-tail";
  Build(tail, locks, locks / 5, true);
  RecoverInFreshProcess("snap+tail", tail);

  const std::string log = base + "/log-only";
  Build(log, locks, 0, false);
  RecoverInFreshProcess("log only", log);

  std::error_code ignored;
  std::filesystem::remove_all(base, ignored);
  return 0;
}

}  // namespace
}  // namespace leasekeeper::storage

int main(int argc, char** argv) {
  return leasekeeper::storage::Main(argc, argv);
}
