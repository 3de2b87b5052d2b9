// CoreSnapshot: the whole state of a StateMachine as plain data.
//
// Durability writes it periodically so the operation log can be cut, and a
// restart restores it and replays only the log after it. Restoring a
// snapshot and applying the operations that followed it gives exactly the
// state the original reached (the core is deterministic), so every field
// that influences a later decision is here: the time, the age and grant
// sequence counters, every lock's fencing counter (also for locks nobody
// holds: a counter never goes back), holders with their expiry tie-break
// sequence, queues in order, semaphore capacities, registered clients and
// the fenced store.
//
// Thread-safety: a plain value.
#ifndef LEASEKEEPER_CORE_SNAPSHOT_H_
#define LEASEKEEPER_CORE_SNAPSHOT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace leasekeeper {

struct CoreSnapshot {
  struct Holder {
    std::string client;
    LockMode mode = LockMode::kExclusive;
    FencingToken token = 0;
    Tick expires_at = 0;
    int64_t ttl = 0;
    uint64_t sequence = 0;
  };
  struct Waiter {
    std::string client;
    LockMode mode = LockMode::kExclusive;
    int64_t ttl = 0;
  };
  struct Lock {
    std::string name;
    FencingToken last_token = 0;
    // A semaphore's capacity while it has holders or waiters, else 0.
    uint32_t capacity = 0;
    std::vector<Holder> holders;  // by token
    std::vector<Waiter> queue;    // oldest first
  };
  struct Client {
    std::string name;
    uint64_t age = 0;
  };
  struct StoreValue {
    std::string key;
    std::string value;
  };
  struct StoreLock {
    std::string lock;
    FencingToken high_water = 0;
    std::vector<StoreValue> values;
  };

  Tick now = kMinTick;
  uint64_t last_age = 0;
  uint64_t last_sequence = 0;
  std::vector<Lock> locks;
  std::vector<Client> clients;  // every registered client
  std::vector<StoreLock> store;
};

}  // namespace leasekeeper

#endif  // LEASEKEEPER_CORE_SNAPSHOT_H_
