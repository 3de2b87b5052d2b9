// LockModeToProto / LockModeFromProto: a lock mode to and from the
// protocol's v1::LockMode, for the client's enum and the core's alike (each
// has kExclusive, kShared and kSemaphore; neither may depend on the other).
// Header only.
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

// A protocol mode as Mode; an unset or unknown value is kExclusive, as the
// server takes it.
template <typename Mode>
constexpr Mode LockModeFromProto(int mode) {
  switch (mode) {
    case v1::LOCK_MODE_SHARED:
      return Mode::kShared;
    case v1::LOCK_MODE_SEMAPHORE:
      return Mode::kSemaphore;
    default:
      return Mode::kExclusive;
  }
}

}  // namespace leasekeeper

#endif  // LEASEKEEPER_PROTO_LOCK_MODE_H_
