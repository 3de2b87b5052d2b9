// EndpointChoice: which of a service's endpoints the next call goes to, and
// from when. Pure logic over a caller-given time, internal to the client
// library (ChannelSet wraps it with channels and a mutex). Why:
// docs/design/clients.md ("Finding the leader").
//
// Rules:
//  1. The first attempt goes to the first endpoint of the list.
//  2. NOT_LEADER naming a leader moves to that address at once (one outside
//     the list is fine); naming the current endpoint, it is a failure (3).
//  3. Any other failure of the endpoint moves to the next one of the list,
//     wrapping; after a redirect, "next" counts from the last one so chosen.
//  4. Moves are immediate until as many as there are endpoints (plus one)
//     have failed since the last success; then each waits Backoff::Next().
//  5. A success resets the count and the backoff; the choice stays.
//  6. A failure reported for an older generation changes nothing.
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
