// ReactorAlarm: a timer of a stream's reactor that never keeps the reactor
// alive.
//
// grpc::Alarm keeps the callback it was Set with, and whatever the callback
// captured, until the Alarm itself is destroyed: running or cancelling it
// does not let the callback go (gRPC 1.51). A reactor that owns its Alarm
// and hands it a callback holding a shared_ptr to itself is a cycle: it is
// never destroyed, and every stream that armed the alarm leaks its reactor.
// ReactorAlarm's callback holds a weak_ptr instead.
//
// Guarantees:
//  1. The owner is destroyed once its last shared_ptr goes, whether the
//     alarm is armed, fired or cancelled.
//  2. (owner.*method)() runs at most once per Set, at the deadline, on a
//     gRPC thread, and only if the alarm was not cancelled and the owner
//     still lives then.
// Thread-safety: as grpc::Alarm's: Set once, Cancel from any thread.
#ifndef LEASEKEEPER_SERVER_REACTOR_ALARM_H_
#define LEASEKEEPER_SERVER_REACTOR_ALARM_H_

#include <chrono>
#include <memory>
#include <utility>

#include "grpcpp/alarm.h"

namespace leasekeeper::server {

template <typename Owner>
class ReactorAlarm {
 public:
  ReactorAlarm() = default;
  ReactorAlarm(const ReactorAlarm&) = delete;
  ReactorAlarm& operator=(const ReactorAlarm&) = delete;

  // Arms the alarm. REQUIRES: not armed before.
  void Set(std::chrono::system_clock::time_point deadline,
           std::weak_ptr<Owner> owner, void (Owner::*method)()) {
    alarm_.Set(deadline, [owner = std::move(owner), method](bool fired) {
      if (!fired) return;
      if (std::shared_ptr<Owner> alive = owner.lock()) ((*alive).*method)();
    });
  }

  // The callback will not call the owner (a no-op once it has).
  void Cancel() { alarm_.Cancel(); }

 private:
  grpc::Alarm alarm_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_REACTOR_ALARM_H_
