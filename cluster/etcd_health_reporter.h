// EtcdHealthReporter: when a node says that it cannot use etcd, and when
// that it can again. It is fed the outcome of every etcd call and asked,
// now and then, what to log; time is a parameter.
//
// The rule: 1. trouble starts with a failed call after a success (or after
// the start); a success ends it. 2. A warning is due `warn_after` into the
// trouble, then again after `first_repeat`, doubling up to `max_repeat`
// between warnings, while it lasts. 3. Once trouble that was warned about
// ends, one recovery notice is due (trouble never warned about ends
// silently). 4. At most one notice per Poll; a recovery comes before the
// first warning of a newer trouble.
//
// Thread-safety: none; one owner (EtcdClient, under its mutex).
#ifndef LEASEKEEPER_CLUSTER_ETCD_HEALTH_REPORTER_H_
#define LEASEKEEPER_CLUSTER_ETCD_HEALTH_REPORTER_H_

#include <chrono>
#include <optional>
#include <string>

namespace leasekeeper::storage {

class EtcdHealthReporter {
 public:
  using Clock = std::chrono::steady_clock;
  using Duration = std::chrono::milliseconds;

  struct Options {
    Duration warn_after{500};
    Duration first_repeat{2000};
    Duration max_repeat{10'000};
  };

  struct Notice {
    enum class Kind { kTrouble, kRecovered };
    Kind kind = Kind::kTrouble;
    // kTrouble: how long etcd has failed, and the last failure ("etcd
    // <method>: <gRPC code>: <message>"). kRecovered: how long it failed.
    Duration failing_for{0};
    std::string error;
  };

  explicit EtcdHealthReporter(Options options) : options_(options) {}
  EtcdHealthReporter() : EtcdHealthReporter(Options()) {}

  // One etcd call's outcome at `now`: `error` empty for a success.
  void Record(Clock::time_point now, const std::string& error);
  // The notice due at `now`, if any (see the rule above).
  std::optional<Notice> Poll(Clock::time_point now);
  // Whether etcd fails now (rule 1).
  bool in_trouble() const { return trouble_since_.has_value(); }

 private:
  const Options options_;
  std::optional<Clock::time_point> trouble_since_;
  std::string last_error_;
  bool warned_ = false;
  Clock::time_point next_warning_{};
  Duration repeat_{0};
  // A recovery not yet told: how long the trouble lasted.
  std::optional<Duration> recovered_after_;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_ETCD_HEALTH_REPORTER_H_
