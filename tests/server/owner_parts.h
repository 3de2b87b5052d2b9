// The rules beside the core (OwnerRules) as CoreOwner holds them, without
// the owner, for tests of one rule at a time: ticks are plain parameters
// (the OwnerClock reads a FakeClock), there is no log, and effects are
// inspected instead of performed.
// Thread-safety: none; a test's own thread.
#ifndef LEASEKEEPER_TESTS_SERVER_OWNER_PARTS_H_
#define LEASEKEEPER_TESTS_SERVER_OWNER_PARTS_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "server/clock.h"
#include "server/core_owner.h"
#include "server/durable_state_machine.h"
#include "server/owner_clock.h"
#include "server/owner_rules.h"
#include "server/server_config.h"
#include "server/session_table.h"
#include "server/watch_hub.h"

namespace leasekeeper::testing {

// A session stream that only counts what it was sent.
class CountingSink final : public server::SessionSink {
 public:
  void Notify(const server::SessionNotice& notice) override {
    last_notice = notice;
    ++notices;
  }
  void End(const absl::Status& status) override {
    ended = status;
    ++ends;
  }
  server::SessionNotice last_notice{};
  int notices = 0;
  absl::Status ended;
  int ends = 0;
};

struct OwnerParts {
  explicit OwnerParts(server::ServerConfig server_config = {})
      : config(std::move(server_config)),
        machine(server::CoreConfigOf(config),
                [] { return storage::ServerState{}; }) {}

  server::ServerConfig config;
  server::FakeClock clock;
  server::OwnerClock time{clock};
  server::WatchHub hub{server::WatchHub::Options{}};
  server::DurableStateMachine machine;
  server::OwnerRules rules{config, machine, time, hub};

  // Reads the clock as the owner does at the start of a call.
  Tick Read(Tick tick) {
    clock.Set(tick);
    return time.Read();
  }
};

}  // namespace leasekeeper::testing

#endif  // LEASEKEEPER_TESTS_SERVER_OWNER_PARTS_H_
