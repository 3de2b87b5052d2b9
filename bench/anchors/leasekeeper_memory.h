// What leasekeeperd's memory grows by per held lock and per waiting client.
// Each function reads the server's RSS (/proc) before and after filling it,
// 500 ms after the last answer, and reports (after - before) / count.
// Run each on a freshly started server: the figures include what malloc
// keeps, and nothing is released afterwards.
//
//  RunMemoryHeld:    `count` locks "<prefix>/<i>", each held (1 h lease, so
//                    nothing lapses while measuring) by one of 1,000 clients.
//  RunMemoryWaiters: count / 1,000 locks, each held by one client, and
//                    `count` more clients each queued (wait_timeout_ms = 0,
//                    so the request stays queued with no call open) on one
//                    of them, 1,000 per lock (the default per-lock limit is
//                    10,000).
// Calls go over kConnections connections with kWindow calls in flight.

#ifndef LEASEKEEPER_BENCH_ANCHORS_LEASEKEEPER_MEMORY_H_
#define LEASEKEEPER_BENCH_ANCHORS_LEASEKEEPER_MEMORY_H_

#include <cstdint>

#include "nlohmann/json.hpp"
#include "workloads.h"

namespace leasekeeper::bench {

inline constexpr int kMemoryConnections = 4;
inline constexpr int kMemoryWindow = 256;

nlohmann::json RunMemoryHeld(const Target& target, int64_t count);
nlohmann::json RunMemoryWaiters(const Target& target, int64_t count);

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_LEASEKEEPER_MEMORY_H_
