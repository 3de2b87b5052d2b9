// leasekeeper-cluster-bench: cluster mode's figures on this machine, with
// real processes on loopback ports (harness/local_cluster.h starts
// a three-member etcd and three leasekeeperd nodes):
//
//  1. failover: SIGKILL the leader, then time until the first Acquire is
//     granted by the new leader (the client tries every node, following
//     NOT_LEADER's leader address, every 5 ms); the killed node is started
//     again as a follower before the next round. --kills rounds.
//  2. batching: --clients threads each run Acquire+Release pairs on a lock
//     of their own against the leader for --seconds; etcd transactions per
//     operation = etcd revisions over the operations (each batch
//     transaction is one revision; the members' own reports, measured idle
//     first, are taken off), records per transaction the other way round.
//     bench/run-cluster-anchors reads the same factor from the leader's
//     leasekeeper_etcd_transactions_total over its W1 window.
//  3. space, on an etcd and a cluster of their own: --held locks acquired
//     and held (1 h ttl, 1,000 per client id) by --clients threads over
//     one channel each, with a snapshot due only past the fill (so nothing
//     is trimmed yet); then the log's bytes in etcd (key + value sizes under
//     /leasekeeper/<cluster>/log/) and etcd's dbSize and dbSizeInUse
//     (Maintenance Status, the largest over the members): untrimmed, after
//     a physical Compact and a Defragment of every member, and once more
//     records made every member snapshot past the fill and the leader
//     trimmed the log (before and after compaction + defrag again).
//
// Usage: leasekeeper-cluster-bench [--kills 10] [--clients 64]
//        [--seconds 5] [--held 20000]   (0 skips a figure)
// Prints one line per figure; bench/README.md ("Cluster mode") has the
// results and conditions.
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cluster/etcd_client.h"
#include "cluster/etcd_keys.h"
#include "harness/channel.h"
#include "harness/local_cluster.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"

namespace {

namespace pb = ::leasekeeper::v1;
using leasekeeper::testing::EtcdCluster;
using leasekeeper::testing::LeasekeeperCluster;
using leasekeeper::testing::TempDir;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

struct Options {
  int kills = 10;
  int clients = 64;
  int seconds = 5;
  int held = 20'000;
};

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    int value = 0;
    if (!absl::SimpleAtoi(argv[i + 1], &value) || value < 0) continue;
    const std::string flag = argv[i];
    if (flag == "--kills") options.kills = value;
    if (flag == "--clients") options.clients = value;
    if (flag == "--seconds") options.seconds = value;
    if (flag == "--held") options.held = value;
  }
  return options;
}

// Acquire on `address`; sets *leader from NOT_LEADER's metadata.
bool TryAcquire(const std::string& address, const std::string& client,
                const std::string& lock, int64_t ttl_ms, std::string* leader,
                uint64_t* token = nullptr) {
  auto stub =
      pb::LockService::NewStub(leasekeeper::testing::NewChannel(address));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + milliseconds(1000));
  pb::AcquireRequest request;
  request.set_client_id(client);
  request.set_lock(lock);
  request.set_ttl_ms(ttl_ms);
  pb::AcquireResponse response;
  const grpc::Status status = stub->Acquire(&context, request, &response);
  if (leader != nullptr)
    *leader = leasekeeper::testing::LeaderMetadata(context);
  if (token != nullptr && response.has_granted()) {
    *token = response.granted().token();
  }
  return status.ok() && response.has_granted();
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t index =
      std::min(values.size() - 1,
               static_cast<size_t>(p * static_cast<double>(values.size())));
  return values[index];
}

// Starts `threads` threads, each running Acquire+Release pairs on a lock
// of its own (client "<name><i>", lock "<name>-lock-<i>", 10 s ttl) on
// `address` until `stop`, counting the pairs whose Release succeeded in
// *pairs. The caller joins the threads.
std::vector<std::thread> StartPairLoops(const std::string& address, int threads,
                                        const std::string& name,
                                        const std::atomic<bool>& stop,
                                        std::atomic<uint64_t>* pairs) {
  std::vector<std::thread> started;
  for (int t = 0; t < threads; ++t) {
    started.emplace_back([address, name, &stop, pairs, t] {
      auto stub =
          pb::LockService::NewStub(leasekeeper::testing::NewChannel(address));
      const std::string client_id = absl::StrCat(name, t);
      const std::string lock = absl::StrCat(name, "-lock-", t);
      while (!stop.load()) {
        grpc::ClientContext acquire_context;
        pb::AcquireRequest acquire;
        acquire.set_client_id(client_id);
        acquire.set_lock(lock);
        acquire.set_ttl_ms(10'000);
        pb::AcquireResponse granted;
        if (!stub->Acquire(&acquire_context, acquire, &granted).ok()) continue;
        grpc::ClientContext release_context;
        pb::ReleaseRequest release;
        release.set_client_id(client_id);
        release.set_lock(lock);
        pb::ReleaseResponse released;
        if (stub->Release(&release_context, release, &released).ok()) {
          pairs->fetch_add(1);
        }
      }
    });
  }
  return started;
}

// One failover: SIGKILLs the leader, then tries Acquire on the other nodes
// (following NOT_LEADER's redirect) until one grants, and starts the killed
// node again. The milliseconds from the kill to the grant; nullopt if no
// leader, no grant within 30 s, or the restart failed.
std::optional<double> TimeOneFailover(LeasekeeperCluster& cluster, int round) {
  const int leader = cluster.WaitForLeader(milliseconds(20'000));
  if (leader < 0) {
    std::fprintf(stderr, "no leader in round %d\n", round);
    return std::nullopt;
  }
  const std::string lock = absl::StrCat("failover-", round);
  const auto killed = steady_clock::now();
  cluster.Kill(leader);
  std::string next;
  int rotate = leader;
  while (true) {
    if (next.empty() || next == cluster.address(leader)) {
      rotate = (rotate + 1) % 3;
      if (rotate == leader) rotate = (rotate + 1) % 3;
      next = cluster.address(rotate);
    }
    std::string redirect;
    if (TryAcquire(next, "probe", lock, 1000, &redirect)) break;
    next = redirect;
    std::this_thread::sleep_for(milliseconds(5));
    if (steady_clock::now() - killed > std::chrono::seconds(30)) {
      std::fprintf(stderr, "no grant 30 s after the kill\n");
      return std::nullopt;
    }
  }
  const double took_ms =
      std::chrono::duration<double, std::milli>(steady_clock::now() - killed)
          .count();
  std::printf("failover round %d: %.0f ms\n", round, took_ms);
  std::fflush(stdout);
  if (!cluster.Restart(leader)) return std::nullopt;
  return took_ms;
}

// 1.: --kills failovers, then their p50 and max. False if one failed.
bool MeasureFailover(LeasekeeperCluster& cluster, int kills) {
  std::vector<double> failovers_ms;
  for (int round = 0; round < kills; ++round) {
    const std::optional<double> took_ms = TimeOneFailover(cluster, round);
    if (!took_ms.has_value()) return false;
    failovers_ms.push_back(*took_ms);
  }
  if (!failovers_ms.empty()) {
    std::printf(
        "failover (SIGKILL leader -> first grant on the new leader), %zu "
        "kills: p50 %.0f ms, max %.0f ms\n",
        failovers_ms.size(), Percentile(failovers_ms, 0.5),
        *std::max_element(failovers_ms.begin(), failovers_ms.end()));
  }
  return true;
}

// etcd's current revision (0 if it cannot be read).
int64_t CurrentRevision(leasekeeper::storage::EtcdClient& client) {
  etcdserverpb::RangeRequest probe;
  probe.set_key("/");
  probe.set_limit(1);
  probe.set_keys_only(true);
  absl::StatusOr<etcdserverpb::RangeResponse> got = client.Range(probe);
  return got.ok() ? got->header().revision() : 0;
}

// 2.: --clients clients doing Acquire+Release pairs on `leader` for
// --seconds, then the etcd transactions per operation and the log records
// per transaction.
void MeasureBatching(const EtcdCluster& etcd, LeasekeeperCluster& cluster,
                     int leader, const Options& options) {
  leasekeeper::storage::EtcdClientOptions etcd_options;
  etcd_options.endpoints = etcd.endpoint_list();
  std::unique_ptr<leasekeeper::storage::EtcdClient> client =
      *leasekeeper::storage::EtcdClient::Connect(etcd_options);
  // The members' own reports (a put every 200 ms each) move the revision
  // too: measured idle first and taken off.
  const int64_t idle_start = CurrentRevision(*client);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double idle_per_second =
      static_cast<double>(CurrentRevision(*client) - idle_start) / 2.0;
  std::optional<pb::ClusterStatusResponse> status = cluster.Status(leader);
  const uint64_t records_before =
      status.has_value() ? status->last_position() : 0;
  const int64_t revision_before = CurrentRevision(*client);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> pairs{0};
  std::vector<std::thread> threads = StartPairLoops(
      cluster.address(leader), options.clients, "load", stop, &pairs);
  std::this_thread::sleep_for(std::chrono::seconds(options.seconds));
  stop.store(true);
  for (std::thread& thread : threads) thread.join();
  const int64_t raw_revisions = CurrentRevision(*client) - revision_before;
  const int64_t revisions = std::max<int64_t>(
      1, raw_revisions -
             static_cast<int64_t>(idle_per_second * options.seconds));
  std::optional<pb::ClusterStatusResponse> after = cluster.Status(leader);
  const uint64_t records =
      after.has_value() ? after->last_position() - records_before : 0;
  const double operations = 2.0 * static_cast<double>(pairs.load());
  std::printf(
      "batching at %d clients for %d s: %.0f pairs/s, %llu log records, "
      "%lld etcd revisions (%lld less %.1f/s of member reports): %.3f "
      "etcd transactions per operation, %.1f records per transaction\n",
      options.clients, options.seconds,
      static_cast<double>(pairs.load()) / options.seconds,
      static_cast<unsigned long long>(records),
      static_cast<long long>(revisions),
      static_cast<long long>(raw_revisions), idle_per_second,
      operations > 0 ? static_cast<double>(revisions) / operations : 0,
      revisions > 0
          ? static_cast<double>(records) / static_cast<double>(revisions)
          : 0);
  std::fflush(stdout);
}

// 1. and 2.: failover and batching, on one etcd and cluster. False if a
// figure could not be taken.
bool MeasureFailoverAndBatching(const Options& options) {
  TempDir dir;
  std::unique_ptr<EtcdCluster> etcd = EtcdCluster::Start(dir.path());
  if (etcd == nullptr) return false;
  std::unique_ptr<LeasekeeperCluster> cluster =
      LeasekeeperCluster::Start(dir.path(), etcd->endpoints(), 3);
  if (cluster == nullptr) return false;
  if (!MeasureFailover(*cluster, options.kills)) return false;
  const int leader = cluster->WaitForLeader(milliseconds(20'000));
  if (leader < 0) return false;
  if (options.clients > 0 && options.seconds > 0) {
    MeasureBatching(*etcd, *cluster, leader, options);
  }
  return true;
}

// What the log takes in etcd: its batches' keys and values, and how many
// batches; `first`: the position of the oldest batch left (0: none).
struct LogSpace {
  uint64_t bytes = 0;
  uint64_t batches = 0;
  uint64_t first = 0;
};

LogSpace ReadLogSpace(leasekeeper::storage::EtcdClient& client,
                      const leasekeeper::storage::ClusterKeys& keys) {
  LogSpace space;
  std::string start = keys.log_prefix();
  const std::string end = leasekeeper::storage::PrefixRangeEnd(start);
  while (true) {
    etcdserverpb::RangeRequest page;
    page.set_key(start);
    page.set_range_end(end);
    page.set_limit(500);
    absl::StatusOr<etcdserverpb::RangeResponse> got = client.Range(page);
    if (!got.ok()) {
      std::fprintf(stderr, "reading the log: %s\n",
                   std::string(got.status().message()).c_str());
      return space;
    }
    for (const mvccpb::KeyValue& kv : got->kvs()) {
      if (space.batches++ == 0)
        space.first = keys.LogPositionOf(kv.key()).value_or(0);
      space.bytes += kv.key().size() + kv.value().size();
      start = kv.key() + std::string(1, '\0');
    }
    if (!got->more()) return space;
  }
}

// The position of the oldest batch in the log (0: none or unreadable).
uint64_t OldestBatch(leasekeeper::storage::EtcdClient& client,
                     const leasekeeper::storage::ClusterKeys& keys) {
  etcdserverpb::RangeRequest first;
  first.set_key(keys.log_prefix());
  first.set_range_end(leasekeeper::storage::PrefixRangeEnd(keys.log_prefix()));
  first.set_limit(1);
  first.set_keys_only(true);
  absl::StatusOr<etcdserverpb::RangeResponse> got = client.Range(first);
  if (!got.ok() || got->kvs_size() == 0) return 0;
  return keys.LogPositionOf(got->kvs(0).key()).value_or(0);
}

// Each etcd member's Maintenance stub, in endpoint order.
std::vector<std::unique_ptr<etcdserverpb::Maintenance::Stub>> MaintenanceStubs(
    const EtcdCluster& etcd) {
  std::vector<std::unique_ptr<etcdserverpb::Maintenance::Stub>> stubs;
  for (const std::string& endpoint : etcd.endpoint_list()) {
    stubs.push_back(etcdserverpb::Maintenance::NewStub(
        grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials())));
  }
  return stubs;
}

// The largest dbSize (bytes allocated) and dbSizeInUse over the members.
struct DbSize {
  int64_t allocated = -1;
  int64_t in_use = -1;
};

DbSize ReadDbSize(
    const std::vector<std::unique_ptr<etcdserverpb::Maintenance::Stub>>&
        stubs) {
  DbSize size;
  for (const auto& stub : stubs) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + milliseconds(5000));
    etcdserverpb::StatusResponse response;
    if (!stub->Status(&context, etcdserverpb::StatusRequest(), &response)
             .ok()) {
      continue;
    }
    size.allocated = std::max(size.allocated, response.dbsize());
    size.in_use = std::max(size.in_use, response.dbsizeinuse());
  }
  return size;
}

// Compacts etcd's history up to its current revision (physically: the old
// revisions' space is free when this returns), then defragments every
// member so that the file gives that space back. False on a failure.
bool CompactAndDefragment(
    leasekeeper::storage::EtcdClient& client, const EtcdCluster& etcd,
    const std::vector<std::unique_ptr<etcdserverpb::Maintenance::Stub>>&
        stubs) {
  etcdserverpb::RangeRequest probe;
  probe.set_key("/");
  probe.set_limit(1);
  probe.set_keys_only(true);
  absl::StatusOr<etcdserverpb::RangeResponse> now = client.Range(probe);
  if (!now.ok()) return false;
  auto kv = etcdserverpb::KV::NewStub(grpc::CreateChannel(
      etcd.endpoint_list().front(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext compact_context;
  compact_context.set_deadline(std::chrono::system_clock::now() +
                               milliseconds(60'000));
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(now->header().revision());
  compact.set_physical(true);
  etcdserverpb::CompactionResponse compacted;
  const grpc::Status status =
      kv->Compact(&compact_context, compact, &compacted);
  if (!status.ok()) {
    std::fprintf(stderr, "etcd Compact: %s\n", status.error_message().c_str());
    return false;
  }
  for (const auto& stub : stubs) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         milliseconds(120'000));
    etcdserverpb::DefragmentResponse response;
    const grpc::Status defrag = stub->Defragment(
        &context, etcdserverpb::DefragmentRequest(), &response);
    if (!defrag.ok()) {
      std::fprintf(stderr, "etcd Defragment: %s\n",
                   defrag.error_message().c_str());
      return false;
    }
  }
  return true;
}

// The "<field>:  <n> kB" line of a /proc file (status, meminfo) in MiB, or
// 0 if the file or the field cannot be read.
double ProcFieldMiB(const std::string& path, absl::string_view field) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, field) ||
        !absl::ConsumePrefix(&rest, ":")) {
      continue;
    }
    int64_t kib = 0;
    if (absl::SimpleAtoi(
            absl::StripAsciiWhitespace(absl::StripSuffix(rest, "kB")), &kib)) {
      return static_cast<double>(kib) / 1024.0;
    }
  }
  return 0;
}

double RssMiB(pid_t pid) {
  return ProcFieldMiB(absl::StrCat("/proc/", pid, "/status"), "VmRSS");
}

void PrintSpace(const char* when, int held, const LogSpace& log,
                const DbSize& db) {
  std::printf(
      "space %s: log in etcd %llu bytes in %llu batches (%.1f bytes per held "
      "lock; oldest batch at position %llu); etcd dbSize %lld bytes (%.1f per "
      "held lock), dbSizeInUse %lld bytes (%.1f per held lock)\n",
      when, static_cast<unsigned long long>(log.bytes),
      static_cast<unsigned long long>(log.batches),
      static_cast<double>(log.bytes) / held,
      static_cast<unsigned long long>(log.first),
      static_cast<long long>(db.allocated),
      static_cast<double>(db.allocated) / held,
      static_cast<long long>(db.in_use), static_cast<double>(db.in_use) / held);
  std::fflush(stdout);
}

// Acquires --held locks on `leader_address` (from --clients threads, 1000
// locks per client id, 1 h ttl). The number not granted.
int FillHeldLocks(const std::string& leader_address, const Options& options) {
  std::atomic<int> next{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(options.clients, 1); ++t) {
    threads.emplace_back([&] {
      // One channel per thread, for the whole fill.
      auto stub = pb::LockService::NewStub(
          leasekeeper::testing::NewChannel(leader_address));
      while (true) {
        const int i = next.fetch_add(1);
        if (i >= options.held) return;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() +
                             milliseconds(30'000));
        pb::AcquireRequest acquire;
        acquire.set_client_id(absl::StrCat("holder", i / 1000));
        acquire.set_lock(absl::StrCat("held/", i));
        acquire.set_ttl_ms(3'600'000);
        pb::AcquireResponse granted;
        if (!stub->Acquire(&context, acquire, &granted).ok() ||
            !granted.has_granted()) {
          refused.fetch_add(1);
        }
        if (i > 0 && i % 100'000 == 0) {
          std::printf("space: %d locks acquired\n", i);
          std::fflush(stdout);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return refused.load();
}

// Drives more records (pairs on one lock from 8 threads) until every
// member's snapshot is due and written and the leader has deleted the
// batches up to `fill_end` (checked every second, for at most 600 s).
// When the drive began; nullopt if the log was not trimmed.
std::optional<steady_clock::time_point> DriveUntilTrimmed(
    leasekeeper::storage::EtcdClient& client,
    const leasekeeper::storage::ClusterKeys& keys,
    const std::string& leader_address, uint64_t fill_end) {
  const auto trim_start = steady_clock::now();
  std::atomic<bool> trimmed{false};
  std::atomic<uint64_t> trim_pairs{0};
  std::vector<std::thread> drivers =
      StartPairLoops(leader_address, 8, "trim", trimmed, &trim_pairs);
  uint64_t oldest = 0;
  while (steady_clock::now() - trim_start < std::chrono::seconds(600)) {
    std::this_thread::sleep_for(milliseconds(1000));
    oldest = OldestBatch(client, keys);
    if (oldest > fill_end) break;
  }
  trimmed.store(true);
  for (std::thread& thread : drivers) thread.join();
  if (oldest <= fill_end) {
    std::fprintf(stderr,
                 "the log was not trimmed past position %llu in 600 s\n",
                 static_cast<unsigned long long>(fill_end));
    return std::nullopt;
  }
  return trim_start;
}

// 3.: --held locks held, then what etcd holds for them: before trimming,
// after compaction and defragmentation, and once the log is trimmed. False
// if a figure could not be taken.
bool MeasureSpace(const Options& options) {
  TempDir dir;
  std::unique_ptr<EtcdCluster> etcd = EtcdCluster::Start(dir.path());
  if (etcd == nullptr) return false;
  // A snapshot is due every N records; N above the fill's records (the
  // held Acquires, the leadership's grace, the idle ticks) keeps the whole
  // log in etcd until the fill is measured.
  const int64_t snapshot_every = options.held + options.held / 50 + 1000;
  std::unique_ptr<LeasekeeperCluster> cluster = LeasekeeperCluster::Start(
      dir.path(), etcd->endpoints(), 3,
      {absl::StrCat("--snapshot-every=", snapshot_every)});
  if (cluster == nullptr) return false;
  const int leader = cluster->WaitForLeader(milliseconds(20'000));
  if (leader < 0) return false;
  const std::string leader_address = cluster->address(leader);

  leasekeeper::storage::EtcdClientOptions etcd_options;
  etcd_options.endpoints = etcd->endpoint_list();
  // Pages of 500 batches of a loaded etcd: more than the default second.
  etcd_options.call_timeout = milliseconds(30'000);
  std::unique_ptr<leasekeeper::storage::EtcdClient> client =
      *leasekeeper::storage::EtcdClient::Connect(etcd_options);
  const leasekeeper::storage::ClusterKeys keys("test");
  const auto stubs = MaintenanceStubs(*etcd);

  const LogSpace log_before = ReadLogSpace(*client, keys);
  const DbSize db_before = ReadDbSize(stubs);
  const double available_before = ProcFieldMiB("/proc/meminfo", "MemAvailable");
  const auto start = steady_clock::now();
  const int refused = FillHeldLocks(leader_address, options);
  const double took =
      std::chrono::duration<double>(steady_clock::now() - start).count();
  std::optional<pb::ClusterStatusResponse> filled = cluster->Status(leader);
  const uint64_t fill_end = filled.has_value() ? filled->last_position() : 0;
  std::printf(
      "space: %d held locks acquired in %.1f s (%.0f/s), %d not granted; log "
      "at position %llu (a snapshot is due every %lld records); leader RSS "
      "%.0f MiB, followers %.0f and %.0f MiB; machine MemAvailable %.0f -> "
      "%.0f MiB\n",
      options.held, took, options.held / took, refused,
      static_cast<unsigned long long>(fill_end),
      static_cast<long long>(snapshot_every),
      RssMiB(cluster->process(leader)->pid()),
      RssMiB(cluster->process((leader + 1) % 3)->pid()),
      RssMiB(cluster->process((leader + 2) % 3)->pid()), available_before,
      ProcFieldMiB("/proc/meminfo", "MemAvailable"));
  if (refused > 0) return false;
  PrintSpace("before the fill", options.held, log_before, db_before);
  const LogSpace log_filled = ReadLogSpace(*client, keys);
  PrintSpace("held, log untrimmed", options.held, log_filled,
             ReadDbSize(stubs));
  std::printf(
      "space: the held locks' log: %llu bytes, %.1f bytes per held lock\n",
      static_cast<unsigned long long>(log_filled.bytes - log_before.bytes),
      static_cast<double>(log_filled.bytes - log_before.bytes) / options.held);
  if (!CompactAndDefragment(*client, *etcd, stubs)) return false;
  PrintSpace("held, untrimmed, after compaction + defrag", options.held,
             ReadLogSpace(*client, keys), ReadDbSize(stubs));

  const std::optional<steady_clock::time_point> trim_start =
      DriveUntilTrimmed(*client, keys, leader_address, fill_end);
  if (!trim_start.has_value()) return false;
  std::optional<pb::ClusterStatusResponse> after = cluster->Status(leader);
  std::printf(
      "space: trimmed %.1f s after the drive began (log at position %llu)\n",
      std::chrono::duration<double>(steady_clock::now() - *trim_start).count(),
      static_cast<unsigned long long>(after.has_value() ? after->last_position()
                                                        : 0));
  PrintSpace("held, trimmed, before compaction", options.held,
             ReadLogSpace(*client, keys), ReadDbSize(stubs));
  if (!CompactAndDefragment(*client, *etcd, stubs)) return false;
  PrintSpace("held, trimmed, after compaction + defrag", options.held,
             ReadLogSpace(*client, keys), ReadDbSize(stubs));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = ParseOptions(argc, argv);
  if ((options.kills > 0 || (options.clients > 0 && options.seconds > 0)) &&
      !MeasureFailoverAndBatching(options)) {
    return 1;
  }

  // 3. Space at --held held locks, on an etcd and a cluster of their own:
  // the first phases' records stay out of the figure, and the nodes take
  // no snapshot (so the leader trims nothing) until the fill is over.
  if (options.held > 0 && !MeasureSpace(options)) return 1;
  return 0;
}
