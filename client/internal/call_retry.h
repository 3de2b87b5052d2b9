// CallRetry: whether a one-shot call goes again after an attempt, and when.
// Pure logic over a caller-given time, internal to the client library:
// RpcClient runs each unary call under one, while its ChannelSet's
// EndpointChoice says where each attempt goes (the named leader, or the next
// endpoint after a backoff). Why: docs/design/clients.md ("One-shot calls
// over a failover").
//
// Rules:
//  1. An answer ends the call (EndpointVerdict kServed: OK, or the server's
//     refusal of the request), and so do the caller's cancellation and a
//     failed TLS handshake (a setup mistake no retry mends).
//  2. A failure that shows nothing was applied goes again whatever the call:
//     NOT_LEADER (a node that is not the leader applies nothing), and a
//     connection that could not be made (the request never left).
//  3. Any other failure of an endpoint (UNAVAILABLE, a bare
//     DEADLINE_EXCEEDED) goes again only for a repeatable call: a read, a
//     mutation with a request id (the server answers its replay with the
//     first answer), or one that repeats to the same effect.
//  4. The next attempt starts when the endpoint choice allows, if it moved
//     (its not_before); if it could not move (one endpoint, a caller's
//     channel), after this call's own Backoff, to the same endpoint.
//  5. No attempt starts at or after the deadline: the call ends with the
//     last attempt's status, naming the endpoint that gave it and the
//     number of attempts when there were several.
//
// Thread-safety: thread-compatible (a value per call).
#ifndef LEASEKEEPER_CLIENT_INTERNAL_CALL_RETRY_H_
#define LEASEKEEPER_CLIENT_INTERNAL_CALL_RETRY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "client/internal/backoff.h"
#include "client/lease_timer.h"

namespace leasekeeper::client::internal {

// Rule 2's "could not be made": UNAVAILABLE without a server's reason whose
// message is gRPC's for a failed connection attempt ("failed to connect",
// "Connection refused").
bool NeverSent(const absl::Status& status);

// Rule 1's failed TLS handshake: UNAVAILABLE without a server's reason
// whose message is gRPC's for one (TLS against a plaintext port, an
// unknown certificate authority).
bool HandshakeFailed(const absl::Status& status);

class CallRetry {
 public:
  // REQUIRES: deadline is in the future or infinite (an infinite deadline
  // retries until cancelled).
  CallRetry(MonotonicTime deadline, bool repeatable);

  // After an attempt to `target` that ended with `status` at `now`. `moved`:
  // the endpoint choice moved because of it; `not_before`: when the choice
  // allows the next attempt. True: make the next attempt, not before at();
  // false: the call ends with status().
  bool After(const absl::Status& status, absl::string_view target, bool moved,
             MonotonicTime not_before, MonotonicTime now);

  // After After() said true: when the next attempt may start.
  MonotonicTime at() const { return at_; }
  // After After() said false: what the call returns (rule 5's wording added
  // when it gave up at the deadline after several attempts).
  const absl::Status& status() const { return status_; }
  int attempts() const { return attempts_; }
  // When the call must be over (every attempt's transport deadline).
  MonotonicTime deadline() const { return deadline_; }

  static constexpr absl::Duration kFirstDelay = absl::Milliseconds(50);
  static constexpr absl::Duration kMaxDelay = absl::Milliseconds(500);

 private:
  const MonotonicTime deadline_;
  const bool repeatable_;
  int attempts_ = 0;
  MonotonicTime at_;
  absl::Status status_;
  Backoff backoff_{kFirstDelay, kMaxDelay};
};

}  // namespace leasekeeper::client::internal

#endif  // LEASEKEEPER_CLIENT_INTERNAL_CALL_RETRY_H_
