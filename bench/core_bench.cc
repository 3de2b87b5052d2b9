// core_bench: the core's figures and their targets (see bench/README.md).
//
//  - Uncontended acquire+release pairs straight through LockTable, on one
//    lock reused, on 1,024 locks in rotation and on a new lock every pair
//    (items/s = pairs/s; target >= 2,000,000 on one core).
//  - The same pairs with 0, 1,000 and 1,000,000 idle locks in the table
//    (acquired and released once, so they exist with counters), taken by as
//    many clients (which stay registered) or by one; the 1,000,000 figure
//    must be within 20% of the 1,000 one. A second series acquires the idle
//    locks themselves, in random order, which adds the cache misses of a large
//    table.
//  - Memory: the bytes a LockTable grows by per held lock
//    (1,000,000 locks "h/<i>" held by 1,000 clients, 1 h leases in ms, as
//    leasekeeper-bench's mem_held fills leasekeeperd) and per waiting
//    client (100,000 clients queued 1,000 per lock on 100 held locks, as
//    mem_waiters), and per semaphore permit holder (1,000,000 permits of
//    1,000 semaphores of capacity 1,000). Counters: malloc's bytes in use
//    (glibc mallinfo2, chunk headers included) and RSS growth, each divided by the count. Run them
//    alone (--benchmark_filter=BM_Memory) for an RSS figure unspoilt by
//    memory the other benchmarks freed.
//  - The contract's Part 4 workloads (bench/workloads.h) replayed end to end
//    through RunReplayText, JSON parse and serialisation included (target:
//    each under 50 ms). Each checks its results once before timing and is
//    skipped with an error if they are not the ones the workload is built
//    to produce.
//
// Extra flag, before Google Benchmark's own: --dump_workloads=DIR writes each
// workload's input to DIR/<name>.json, to feed to leasekeeper-replay.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "bench/workloads.h"
#include "benchmark/benchmark.h"
#include "core/lock_table.h"
#include "core/types.h"
#include "replay/replay.h"

namespace leasekeeper::bench {
namespace {

constexpr int64_t kTtl = 60;
// Hot locks the rotating pairs cycle through (a power of two).
constexpr size_t kHotLocks = 1024;

std::vector<std::string> Names(absl::string_view prefix, size_t count) {
  std::vector<std::string> names;
  names.reserve(count);
  for (size_t i = 0; i < count; ++i) names.push_back(absl::StrCat(prefix, i));
  return names;
}

// One acquire+release pair that must be granted and then released.
// Returns false (after SkipWithError) if it was not.
inline bool Pair(benchmark::State& state, LockTable& table, Tick now,
                 absl::string_view client, absl::string_view lock) {
  absl::StatusOr<AcquireOutcome> acquired =
      table.Acquire(now, client, lock, kTtl, LockMode::kExclusive);
  if (!acquired.ok() || acquired->kind != AcquireOutcome::Kind::kGranted) {
    state.SkipWithError("an uncontended acquire was not granted");
    return false;
  }
  absl::StatusOr<ReleaseOutcome> released = table.Release(now, client, lock);
  if (!released.ok() || *released != ReleaseOutcome::kReleased) {
    state.SkipWithError("a release by the holder was not 'released'");
    return false;
  }
  return true;
}

// The same client and lock every pair.
void BM_PairSameLock(benchmark::State& state) {
  LockTable table;
  Tick now = 0;
  for (auto _ : state) {
    if (!Pair(state, table, ++now, "client", "lock")) break;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PairSameLock);

// 1,024 (client, lock) pairs in rotation: distinct lock and client per pair,
// each existing after its first use.
void BM_PairRotating(benchmark::State& state) {
  LockTable table;
  const std::vector<std::string> clients = Names("client-", kHotLocks);
  const std::vector<std::string> locks = Names("lock-", kHotLocks);
  Tick now = 0;
  size_t i = 0;
  for (auto _ : state) {
    const size_t k = i++ & (kHotLocks - 1);
    if (!Pair(state, table, ++now, clients[k], locks[k])) break;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PairRotating);

// A lock and a client never seen before, every pair: the cost of creating
// both (the table grows by one lock and one client per pair).
void BM_PairFreshLock(benchmark::State& state) {
  LockTable table;
  const size_t count = static_cast<size_t>(state.max_iterations);
  const std::vector<std::string> clients = Names("client-", count);
  const std::vector<std::string> locks = Names("lock-", count);
  Tick now = 0;
  size_t i = 0;
  for (auto _ : state) {
    if (!Pair(state, table, ++now, clients[i], locks[i])) break;
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["locks"] = static_cast<double>(table.lock_count());
}
BENCHMARK(BM_PairFreshLock);

// A table holding `idle` locks, each acquired and released once, either by
// a client of its own (so as many clients stay registered) or all by one
// client. Built once per shape and kept across runs (building a million
// takes a second); `now` only moves forward.
struct IdleTable {
  LockTable table;
  Tick now = 0;
  std::vector<std::string> clients;  // clients[i] took locks[i]
  std::vector<std::string> locks;
};

IdleTable& IdleTableOf(size_t idle, bool client_per_lock) {
  static auto* tables =
      new std::map<std::pair<size_t, bool>, std::unique_ptr<IdleTable>>();
  std::unique_ptr<IdleTable>& slot = (*tables)[{idle, client_per_lock}];
  if (slot == nullptr) {
    slot = std::make_unique<IdleTable>();
    slot->locks = Names("idle-lock-", idle);
    slot->clients = client_per_lock
                        ? Names("idle-client-", idle)
                        : std::vector<std::string>(idle, "idle-client");
    for (size_t i = 0; i < idle; ++i) {
      ++slot->now;
      (void)slot->table.Acquire(slot->now, slot->clients[i], slot->locks[i],
                                kTtl, LockMode::kExclusive);
      (void)slot->table.Release(slot->now, slot->clients[i], slot->locks[i]);
    }
  }
  return *slot;
}

bool IdleTableIsAsBuilt(benchmark::State& state, const IdleTable& idle,
                        size_t expected_locks, size_t expected_clients) {
  if (idle.table.lock_count() < expected_locks ||
      idle.table.registered_client_count() < expected_clients ||
      idle.table.held_lease_count() != 0) {
    state.SkipWithError("the idle table does not hold the idle locks");
    return false;
  }
  return true;
}

// The rotating pairs (on hot locks and clients of their own) with
// range(0) idle locks present, taken by range(0) distinct clients
// (range(1) = 1) or by one client (range(1) = 0): the idle locks must not
// slow them down.
void BM_PairRotatingWithIdleLocks(benchmark::State& state) {
  const size_t idle_count = static_cast<size_t>(state.range(0));
  const bool client_per_lock = state.range(1) != 0;
  IdleTable& idle = IdleTableOf(idle_count, client_per_lock);
  if (!IdleTableIsAsBuilt(state, idle, idle_count,
                          client_per_lock ? idle_count : 0)) {
    return;
  }
  const std::vector<std::string> clients = Names("hot-client-", kHotLocks);
  const std::vector<std::string> locks = Names("hot-lock-", kHotLocks);
  size_t i = 0;
  for (auto _ : state) {
    const size_t k = i++ & (kHotLocks - 1);
    if (!Pair(state, idle.table, ++idle.now, clients[k], locks[k])) break;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["locks"] = static_cast<double>(idle.table.lock_count());
  state.counters["clients"] =
      static_cast<double>(idle.table.registered_client_count());
}
BENCHMARK(BM_PairRotatingWithIdleLocks)
    ->ArgNames({"idle", "client_per_lock"})
    ->Args({0, 1})
    ->Args({1000, 1})
    ->Args({1000000, 1})
    ->Args({1000, 0})
    ->Args({1000000, 0});

// Pairs on the idle locks themselves, by their own clients, in random
// order: adds the cache misses of reaching a random entry of a large table.
void BM_PairOnRandomIdleLock(benchmark::State& state) {
  const size_t idle_count = static_cast<size_t>(state.range(0));
  IdleTable& idle = IdleTableOf(idle_count, /*client_per_lock=*/true);
  if (!IdleTableIsAsBuilt(state, idle, idle_count, idle_count)) return;
  constexpr size_t kOrder = size_t{1} << 16;
  std::vector<uint32_t> order(kOrder);
  std::mt19937 random(42);
  std::uniform_int_distribution<uint32_t> pick(
      0, static_cast<uint32_t>(idle_count - 1));
  for (uint32_t& index : order) index = pick(random);
  size_t i = 0;
  for (auto _ : state) {
    const uint32_t k = order[i++ & (kOrder - 1)];
    if (!Pair(state, idle.table, ++idle.now, idle.clients[k], idle.locks[k])) {
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PairOnRandomIdleLock)->Arg(1000)->Arg(1000000);

// Memory in use now: malloc's bytes in use and the resident set.
struct MemoryNow {
  int64_t malloc_bytes = 0;
  int64_t rss_bytes = 0;
};
MemoryNow ReadMemory() {
  MemoryNow now;
  struct mallinfo2 info = mallinfo2();
  now.malloc_bytes = static_cast<int64_t>(info.uordblks + info.hblkhd);
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0, resident_pages = 0;
  if (statm >> size_pages >> resident_pages) {
    now.rss_bytes = resident_pages * sysconf(_SC_PAGESIZE);
  }
  return now;
}

void ReportPerItem(benchmark::State& state, const MemoryNow& before,
                   int64_t count) {
  const MemoryNow after = ReadMemory();
  state.counters["malloc_bytes_per_item"] =
      static_cast<double>(after.malloc_bytes - before.malloc_bytes) / count;
  state.counters["rss_bytes_per_item"] =
      static_cast<double>(after.rss_bytes - before.rss_bytes) / count;
}

constexpr int64_t kHourMs = 3'600'000;
constexpr int64_t kDayMs = 86'400'000;

// 1,000,000 locks held by 1,000 clients (client i % 1,000 holds lock i).
void BM_MemoryHeld(benchmark::State& state) {
  const int64_t count = state.range(0);
  for (auto _ : state) {
    const MemoryNow before = ReadMemory();
    auto table = std::make_unique<LockTable>(CoreConfig{.max_ttl = kDayMs});
    for (int64_t i = 0; i < count; ++i) {
      absl::StatusOr<AcquireOutcome> acquired =
          table->Acquire(i, absl::StrCat("h-c", i % 1000),
                         absl::StrCat("h/", i), kHourMs, LockMode::kExclusive);
      if (!acquired.ok() || acquired->kind != AcquireOutcome::Kind::kGranted) {
        state.SkipWithError("an uncontended acquire was not granted");
        return;
      }
    }
    ReportPerItem(state, before, count);
    state.PauseTiming();
    table.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_MemoryHeld)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// `count` semaphore permits held: 1,000 semaphores of capacity 1,000, each
// permit of each held by one of 1,000 clients (client k holds one permit of
// every semaphore), as BM_MemoryHeld's 1,000 clients hold its locks.
void BM_MemorySemaphoreHolders(benchmark::State& state) {
  const int64_t count = state.range(0);
  constexpr int64_t kCapacity = 1000;
  const int64_t semaphores = std::max<int64_t>(1, count / kCapacity);
  for (auto _ : state) {
    const MemoryNow before = ReadMemory();
    auto table = std::make_unique<LockTable>(CoreConfig{.max_ttl = kDayMs});
    for (int64_t i = 0; i < count; ++i) {
      absl::StatusOr<AcquireOutcome> acquired = table->Acquire(
          i, absl::StrCat("p-c", i / semaphores), absl::StrCat("p/", i % semaphores),
          kHourMs, LockMode::kSemaphore, kCapacity);
      if (!acquired.ok() || acquired->kind != AcquireOutcome::Kind::kGranted) {
        state.SkipWithError("a permit within the capacity was not granted");
        return;
      }
    }
    ReportPerItem(state, before, count);
    state.PauseTiming();
    table.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_MemorySemaphoreHolders)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// 100 held locks and `count` clients queued on them, 1,000 per lock.
void BM_MemoryWaiters(benchmark::State& state) {
  const int64_t count = state.range(0);
  const int64_t locks = std::max<int64_t>(1, count / 1000);
  for (auto _ : state) {
    auto table = std::make_unique<LockTable>(CoreConfig{.max_ttl = kDayMs});
    for (int64_t j = 0; j < locks; ++j) {
      absl::StatusOr<AcquireOutcome> acquired =
          table->Acquire(0, absl::StrCat("w-h", j), absl::StrCat("w/", j),
                         kHourMs, LockMode::kExclusive);
      if (!acquired.ok() || acquired->kind != AcquireOutcome::Kind::kGranted) {
        state.SkipWithError("a holder's acquire was not granted");
        return;
      }
    }
    const MemoryNow with_holders = ReadMemory();
    for (int64_t i = 0; i < count; ++i) {
      absl::StatusOr<AcquireOutcome> queued = table->Acquire(
          1, absl::StrCat("w-w", i), absl::StrCat("w/", i % locks), kHourMs,
          LockMode::kExclusive);
      if (!queued.ok() || queued->kind != AcquireOutcome::Kind::kQueued) {
        state.SkipWithError("a waiter's acquire was not queued");
        return;
      }
    }
    ReportPerItem(state, with_holders, count);
    state.PauseTiming();
    table.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_MemoryWaiters)
    ->Arg(100'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// The Part 4 workloads, kept alive for the registered benchmarks.
const std::vector<Workload>& Workloads() {
  static const auto* workloads = new std::vector<Workload>(Part4Workloads());
  return *workloads;
}

// One workload through RunReplayText, parse to serialisation.
void BM_Workload(benchmark::State& state, const Workload* workload) {
  const std::string input = workload->operations.dump();
  absl::StatusOr<std::string> output = RunReplayText(input);
  if (!output.ok()) {
    state.SkipWithError(std::string(output.status().message()).c_str());
    return;
  }
  if (absl::Status check = CheckResults(*workload, *output); !check.ok()) {
    state.SkipWithError(std::string(check.message()).c_str());
    return;
  }
  for (auto _ : state) {
    output = RunReplayText(input);
    benchmark::DoNotOptimize(output);
  }
  state.SetItemsProcessed(state.iterations() *
                          static_cast<int64_t>(workload->expanded_ops));
  state.counters["ops"] = static_cast<double>(workload->expanded_ops);
  state.counters["input_bytes"] = static_cast<double>(input.size());
}

// Only the JSON parse of a workload's input, to tell its share.
void BM_WorkloadParseOnly(benchmark::State& state, const Workload* workload) {
  const std::string input = workload->operations.dump();
  for (auto _ : state) {
    nlohmann::json parsed = nlohmann::json::parse(input);
    benchmark::DoNotOptimize(parsed);
  }
}

void RegisterWorkloads() {
  for (const Workload& workload : Workloads()) {
    benchmark::RegisterBenchmark(
        absl::StrCat("BM_Workload/", workload.name).c_str(), BM_Workload,
        &workload)
        ->Unit(benchmark::kMillisecond);
  }
  for (const Workload& workload : Workloads()) {
    benchmark::RegisterBenchmark(
        absl::StrCat("BM_WorkloadParseOnly/", workload.name).c_str(),
        BM_WorkloadParseOnly, &workload)
        ->Unit(benchmark::kMillisecond);
  }
}

// Writes each workload's input to dir/<name>.json; false on a write error.
bool DumpWorkloads(const std::string& dir) {
  for (const Workload& workload : Workloads()) {
    const std::string path = absl::StrCat(dir, "/", workload.name, ".json");
    std::ofstream out(path);
    out << workload.operations.dump() << "\n";
    if (!out) {
      std::fprintf(stderr, "core_bench: cannot write %s\n", path.c_str());
      return false;
    }
    std::printf("%s: %zu operations expanded\n", path.c_str(),
                workload.expanded_ops);
  }
  return true;
}

}  // namespace
}  // namespace leasekeeper::bench

int main(int argc, char** argv) {
  constexpr std::string_view kDumpFlag = "--dump_workloads=";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, kDumpFlag.size()) == kDumpFlag) {
      return leasekeeper::bench::DumpWorkloads(
                 std::string(arg.substr(kDumpFlag.size())))
                 ? 0
                 : 1;
    }
  }
  leasekeeper::bench::RegisterWorkloads();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
