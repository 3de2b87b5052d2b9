// The timing every call of the client library shares: a call's transport
// deadline on its grpc::ClientContext, and the wait between attempts that a
// stop request cuts short. Internal to the client library (and to
// leasekeeper-ctl's calls outside LockService).
//
// Thread-safety: pure functions over the caller's objects.
#ifndef LEASEKEEPER_CLIENT_INTERNAL_CALL_TIMING_H_
#define LEASEKEEPER_CLIENT_INTERNAL_CALL_TIMING_H_

#include <grpcpp/client_context.h>

#include <stop_token>

#include "absl/time/time.h"

namespace leasekeeper::client::internal {

// Sets `context`'s deadline `budget` from now: none when `budget` is
// infinite; now (the call fails DEADLINE_EXCEEDED at once) when it is not
// positive.
void SetDeadlineAfter(absl::Duration budget, grpc::ClientContext& context);

// Sleeps for `duration` or until `stop` is requested; false if stopped.
bool SleepUnlessStopped(absl::Duration duration, std::stop_token stop);

}  // namespace leasekeeper::client::internal

#endif  // LEASEKEEPER_CLIENT_INTERNAL_CALL_TIMING_H_
