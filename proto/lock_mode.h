// LockModeToProto: a lock mode as the protocol's v1::LockMode, for the
// client's enum and the core's alike (each has kExclusive, kShared and
// kSemaphore; neither may depend on the other). Header only.
//
// Thread-safety: a pure function.
#ifndef LEASEKEEPER_PROTO_LOCK_MODE_H_
#define LEASEKEEPER_PROTO_LOCK_MODE_H_

#include "leasekeeper/v1/lock_service.pb.h"

namespace leasekeeper {

template <typename Mode>
constexpr v1::LockMode LockModeToProto(Mode mode) {
  switch (mode) {
    case Mode::kExclusive:
      return v1::LOCK_MODE_EXCLUSIVE;
    case Mode::kShared:
      return v1::LOCK_MODE_SHARED;
    case Mode::kSemaphore:
      return v1::LOCK_MODE_SEMAPHORE;
  }
  return v1::LOCK_MODE_EXCLUSIVE;
}

}  // namespace leasekeeper

#endif  // LEASEKEEPER_PROTO_LOCK_MODE_H_
