// EndpointChoice: which of a service's endpoints the next call goes to, and
// from when. Pure logic over a caller-given time, internal to the client
// library (ChannelSet wraps it with channels and a mutex).
//
// A leasekeeper service is one daemon or a cluster of them, of which only
// the leader serves lock calls: the others refuse with UNAVAILABLE
// NOT_LEADER, naming the leader when they know it. The rule:
//  1. The first attempt goes to the first endpoint of the list.
//  2. A refusal NOT_LEADER that names a leader moves to that address (an
//     address outside the list is fine: it is the cluster's own advertised
//     address), at once. A refusal that names the endpoint already current
//     counts as a failure of it (rule 3).
//  3. Any other failure of the endpoint (NOT_LEADER without a leader, the
//     server unreachable or shutting down, no answer within the call's
//     deadline) moves to the next endpoint of the list, in list order,
//     wrapping around; after a redirect, "next" counts from the endpoint of
//     the list last chosen by this rule.
//  4. Moves are immediate until as many moves as there are endpoints (plus
//     one, for a redirect) have failed since the last success; after that
//     each move waits Backoff::Next() (100 ms doubling to 1 s, jittered), so
//     a service that is down, or two nodes naming each other during an
//     election, cost a bounded rate of attempts and never a busy loop.
//  5. A success (any answer from the server that is not one of the
//     failures above) resets the count and the backoff; the choice stays.
//  6. A failure reported for an attempt made before the choice last moved
//     (its generation is older) changes nothing: a concurrent call already
//     moved on, and moving again would skip a good endpoint.
//
// Thread-safety: thread-compatible (a value; its owner synchronizes).
#ifndef LEASEKEEPER_CLIENT_INTERNAL_ENDPOINT_CHOICE_H_
#define LEASEKEEPER_CLIENT_INTERNAL_ENDPOINT_CHOICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/internal/backoff.h"
#include "client/lease_timer.h"

namespace leasekeeper::client::internal {

// What a call's outcome says about the endpoint that gave it.
enum class EndpointVerdict {
  kServed,      // an answer (success or the server's refusal of the request)
  kRedirected,  // NOT_LEADER naming a leader
  kFailed,      // rule 3: try another endpoint
  kNoVerdict,   // the caller cancelled: says nothing about the endpoint
};

// The verdict on `status`. NOT_LEADER (redirected or failed), plain
// UNAVAILABLE, SHUTTING_DOWN and DEADLINE_EXCEEDED without WAIT_TIMEOUT are
// failures of the endpoint; CANCELLED says nothing; everything else (OK
// included) is an answer.
EndpointVerdict VerdictOf(const absl::Status& status);

class EndpointChoice {
 public:
  static constexpr absl::Duration kFirstDelay = absl::Milliseconds(100);
  static constexpr absl::Duration kMaxDelay = absl::Seconds(1);

  // REQUIRES: !endpoints.empty().
  EndpointChoice(std::vector<std::string> endpoints, MonotonicTime now);

  // Where the next attempt goes, and not before when.
  const std::string& current() const { return current_; }
  MonotonicTime not_before() const { return not_before_; }
  // Grows with every move; an attempt records it (rule 6).
  uint64_t generation() const { return generation_; }
  const std::vector<std::string>& endpoints() const { return endpoints_; }

  // The outcome of an attempt made at `generation`, at `now`. Returns true
  // if the choice moved (the caller may retry at once, at not_before()).
  bool Report(uint64_t generation, const absl::Status& status,
              MonotonicTime now);

 private:
  void MoveTo(std::string target, MonotonicTime now);

  const std::vector<std::string> endpoints_;
  std::string current_;
  // Index in endpoints_ of the last endpoint chosen from the list.
  size_t list_index_ = 0;
  uint64_t generation_ = 1;
  // Moves since the last success (rule 4).
  size_t failed_moves_ = 0;
  MonotonicTime not_before_;
  Backoff backoff_{kFirstDelay, kMaxDelay};
};

}  // namespace leasekeeper::client::internal

#endif  // LEASEKEEPER_CLIENT_INTERNAL_ENDPOINT_CHOICE_H_
