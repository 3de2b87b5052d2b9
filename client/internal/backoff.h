// Backoff: the delays between retries of a failed attempt (a session resume,
// a background release, an Acquire or Release that could not reach the
// server). Internal to the client library.
//
// Rules:
//  1. Bounded: the nominal delay starts at `first` and doubles after each
//     retry, never beyond `max`; Reset() starts over at `first`.
//  2. Jittered: each delay handed out is drawn uniformly from [nominal / 2,
//     nominal], so that the clients a server restart cut off at the same
//     instant do not all come back in the same instant, and never waits
//     longer than the nominal delay.
//
// Thread-safety: thread-compatible (a value; its owner synchronizes).
#ifndef LEASEKEEPER_CLIENT_INTERNAL_BACKOFF_H_
#define LEASEKEEPER_CLIENT_INTERNAL_BACKOFF_H_

#include "absl/time/time.h"

namespace leasekeeper::client::internal {

class Backoff {
 public:
  // REQUIRES: absl::ZeroDuration() < first <= max.
  Backoff(absl::Duration first, absl::Duration max);

  // The delay before the next retry (rule 2); the nominal delay then
  // doubles (rule 1).
  absl::Duration Next();
  // The nominal delay Next() draws from now.
  absl::Duration nominal() const { return nominal_; }
  // Back to `first` (after a success).
  void Reset() { nominal_ = first_; }

 private:
  absl::Duration first_;
  absl::Duration max_;
  absl::Duration nominal_;
};

}  // namespace leasekeeper::client::internal

#endif  // LEASEKEEPER_CLIENT_INTERNAL_BACKOFF_H_
