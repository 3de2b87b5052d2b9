#include "leasekeeper_memory.h"

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/synchronization/notification.h"
#include "grpc_channel.h"
#include "grpc_loop.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"
#include "process_stats.h"

namespace leasekeeper::bench {
namespace {

constexpr int64_t kHourMs = 3'600'000;
constexpr int64_t kClientsForHeld = 1'000;
constexpr int64_t kWaitersPerLock = 1'000;
// RSS is read once it has settled: every kSettle, until two reads in a row
// differ by less than 1% (at most kMaxSettle). A durable server may be
// writing a snapshot when the fill ends (one is due every 200,000 records),
// and a snapshot holds a copy of the table until it is written: reading
// RSS then measures the snapshot, not what the locks cost.
constexpr absl::Duration kSettle = absl::Milliseconds(500);
constexpr absl::Duration kMaxSettle = absl::Seconds(30);

enum class Expect { kGranted, kQueued };

// Sends `count` Acquires, request(i) each, at most kMemoryWindow at a time;
// returns the number of answers that were not `expect`, and the first one.
struct PumpResult {
  int64_t unexpected = 0;
  std::string first;
  double seconds = 0;
};

PumpResult Pump(const Target& target, int64_t count,
                std::function<v1::AcquireRequest(int64_t)> request,
                Expect expect) {
  GrpcLoop loop;
  std::vector<std::unique_ptr<v1::LockService::Stub>> stubs;
  for (int i = 0; i < kMemoryConnections; ++i) {
    stubs.push_back(v1::LockService::NewStub(OwnConnection(target.address)));
  }
  PumpResult result;
  int64_t next = 0, answered = 0;
  absl::Notification done;
  std::function<void()> send_more = [&] {
    while (next < count && next - answered < kMemoryWindow) {
      int64_t i = next++;
      v1::LockService::Stub* stub = stubs[i % stubs.size()].get();
      StartUnary<v1::AcquireResponse>(
          loop,
          [stub](grpc::ClientContext* c, const v1::AcquireRequest& r,
                 grpc::CompletionQueue* cq) {
            return stub->PrepareAsyncAcquire(c, r, cq);
          },
          request(i), absl::Seconds(30),
          [&](const grpc::Status& status, v1::AcquireResponse& response) {
            bool ok = status.ok() &&
                      (expect == Expect::kGranted ? response.has_granted()
                                                  : response.has_queued());
            if (!ok && result.unexpected++ == 0) {
              result.first = status.ok() ? response.ShortDebugString()
                                         : StatusText(status);
            }
            if (++answered == count) {
              done.Notify();
            } else {
              send_more();
            }
          });
    }
  };
  int64_t start = NowNs();
  if (count == 0) {
    done.Notify();
  } else {
    loop.Post([&] { send_more(); });
  }
  done.WaitForNotification();
  result.seconds = (NowNs() - start) / 1e9;
  return result;
}

nlohmann::json Measure(const Target& target, const char* workload,
                       int64_t count, const std::vector<PumpResult>& pumps,
                       int64_t rss_before) {
  nlohmann::json out = {
      {"system", "leasekeeper"}, {"workload", workload}, {"count", count}};
  std::this_thread::sleep_for(absl::ToChronoMilliseconds(kSettle));
  auto after = ReadProcessStats(target.main_pid());
  const absl::Time give_up = absl::Now() + kMaxSettle;
  while (after && absl::Now() < give_up) {
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(kSettle));
    auto next = ReadProcessStats(target.main_pid());
    if (!next) break;
    const bool settled =
        std::abs(next->rss_bytes - after->rss_bytes) * 100 < after->rss_bytes;
    after = next;
    if (settled) break;
  }
  int64_t unexpected = 0;
  double seconds = 0;
  for (const PumpResult& pump : pumps) {
    if (pump.unexpected > 0 && unexpected == 0) out["first_error"] = pump.first;
    unexpected += pump.unexpected;
    seconds += pump.seconds;
  }
  out["errors"] = unexpected;
  out["fill_seconds"] = seconds;
  if (!after || rss_before == 0) {
    out["errors"] = unexpected + 1;
    out["first_error"] = "no server pid to read RSS from";
    return out;
  }
  out["rss_before_mib"] = rss_before / 1048576.0;
  out["rss_after_mib"] = after->rss_bytes / 1048576.0;
  out["bytes_per_item"] =
      static_cast<double>(after->rss_bytes - rss_before) / count;
  return out;
}

int64_t RssNow(const Target& target) {
  auto stats = ReadProcessStats(target.main_pid());
  return stats ? stats->rss_bytes : 0;
}

}  // namespace

nlohmann::json RunMemoryHeld(const Target& target, int64_t count) {
  int64_t before = RssNow(target);
  PumpResult pump = Pump(
      target, count,
      [&](int64_t i) {
        v1::AcquireRequest r;
        r.set_client_id(absl::StrCat(target.prefix, "-c", i % kClientsForHeld));
        r.set_lock(absl::StrCat(target.prefix, "/", i));
        r.set_ttl_ms(kHourMs);
        return r;
      },
      Expect::kGranted);
  nlohmann::json out = Measure(target, "mem_held", count, {pump}, before);
  out["lock_name_example"] = absl::StrCat(target.prefix, "/", count - 1);
  return out;
}

nlohmann::json RunMemoryWaiters(const Target& target, int64_t count) {
  int64_t locks =
      std::max<int64_t>(1, (count + kWaitersPerLock - 1) / kWaitersPerLock);
  int64_t before = RssNow(target);
  PumpResult holders = Pump(
      target, locks,
      [&](int64_t j) {
        v1::AcquireRequest r;
        r.set_client_id(absl::StrCat(target.prefix, "-h", j));
        r.set_lock(absl::StrCat(target.prefix, "/", j));
        r.set_ttl_ms(kHourMs);
        return r;
      },
      Expect::kGranted);
  PumpResult waiters = Pump(
      target, count,
      [&](int64_t i) {
        v1::AcquireRequest r;
        r.set_client_id(absl::StrCat(target.prefix, "-w", i));
        r.set_lock(absl::StrCat(target.prefix, "/", i % locks));
        r.set_ttl_ms(kHourMs);
        return r;
      },
      Expect::kQueued);
  nlohmann::json out =
      Measure(target, "mem_waiters", count, {holders, waiters}, before);
  out["locks"] = locks;
  return out;
}

}  // namespace leasekeeper::bench
