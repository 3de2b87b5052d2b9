// Test helper: the events a watcher of a WatchHub can take now.
#ifndef LEASEKEEPER_TESTS_SERVER_WATCH_EVENTS_H_
#define LEASEKEEPER_TESTS_SERVER_WATCH_EVENTS_H_

#include <vector>

#include "server/watch_hub.h"

namespace leasekeeper::testing {

// Every event `id` can take now, in order.
inline std::vector<server::WatchEvent> DrainWatcher(server::WatchHub& hub,
    server::WatchHub::WatcherId id) {
  std::vector<server::WatchEvent> events;
  while (true) {
    server::WatchHub::Next next = hub.Take(id);
    if (!next.event.has_value()) return events;
    events.push_back(*next.event);
  }
}

}  // namespace leasekeeper::testing

#endif  // LEASEKEEPER_TESTS_SERVER_WATCH_EVENTS_H_
