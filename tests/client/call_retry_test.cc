// The one-shot call's retry rule (client/internal/call_retry.h) with the
// endpoint choice it runs beside, on a fake time with fake attempts: a
// failover as the nodes show it (the dead leader refuses connections, the
// others still name it, then one of them leads).
#include "client/internal/call_retry.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "client/errors.h"
#include "client/internal/endpoint_choice.h"
#include "gtest/gtest.h"
#include "leasekeeper/v1/lock_service.pb.h"
#include "tests/client/server_refusals.h"

namespace leasekeeper::client::internal {
namespace {

using ::leasekeeper::client::testing::NotLeader;
using ::leasekeeper::client::testing::WithReason;

absl::Status Refused() {
  return absl::UnavailableError(
      "failed to connect to all addresses; last error: UNKNOWN: "
      "ipv4:127.0.0.1:7001: Failed to connect to remote host: Connection "
      "refused");
}

// The connection broke after the request was sent: it may have applied.
absl::Status Dropped() { return absl::UnavailableError("Socket closed"); }

const MonotonicTime kT0 = absl::Seconds(100);

struct CallRun {
  absl::Status status;
  std::vector<std::string> targets;  // one per attempt
  MonotonicTime ended;
};

// A call over `endpoints` as RpcClient runs it, with `timeout`: each
// attempt to `target` at `now` gets answer(target, now) after `cost`, and
// the waits CallRetry asks for pass on the fake clock.
CallRun RunCall(const std::vector<std::string>& endpoints, absl::Duration timeout,
            bool repeatable,
            const std::function<absl::Status(const std::string&,
                                             MonotonicTime)>& answer,
            absl::Duration cost = absl::Milliseconds(1)) {
  MonotonicTime now = kT0;
  EndpointChoice choice(endpoints, now);
  CallRetry retry(now + timeout, repeatable);
  CallRun run;
  for (;;) {
    const std::string target = choice.current();
    const uint64_t generation = choice.generation();
    run.targets.push_back(target);
    const absl::Status status = answer(target, now);
    now += cost;
    const bool moved = choice.Report(generation, status, now);
    if (!retry.After(status, target, moved, choice.not_before(), now)) {
      run.status = retry.status();
      run.ended = now;
      return run;
    }
    now = std::max(now, retry.at());
  }
}

const std::vector<std::string> kNodes = {"a:1", "b:1", "c:1"};

// a led and was killed at kT0; b and c name it until b leads at kT0 + 2.2 s.
absl::Status Failover(const std::string& target, MonotonicTime now) {
  const bool elected = now >= kT0 + absl::Milliseconds(2200);
  if (target == "a:1") return Refused();
  if (target == "b:1") return elected ? absl::OkStatus() : NotLeader("a:1");
  return NotLeader(elected ? "b:1" : "a:1");
}

TEST(CallRetryTest, ACallStartedAtTheLeadersDeathSucceedsOnceANewLeaderServes) {
  const CallRun run = RunCall(kNodes, absl::Seconds(10), /*repeatable=*/true,
                          Failover);
  EXPECT_TRUE(run.status.ok()) << run.status;
  EXPECT_EQ(run.targets.back(), "b:1");
  // Within a backoff of the election, not at the deadline.
  EXPECT_LE(run.ended, kT0 + absl::Milliseconds(2200) + 2 * CallRetry::kMaxDelay +
                           EndpointChoice::kMaxDelay);
}

TEST(CallRetryTest, ACallThatCannotBeRepeatedStillRidesOverRefusals) {
  // Refused connections and NOT_LEADER applied nothing.
  const CallRun run = RunCall(kNodes, absl::Seconds(10), /*repeatable=*/false,
                          Failover);
  EXPECT_TRUE(run.status.ok()) << run.status;
}

TEST(CallRetryTest, ADroppedCallIsRepeatedOnlyWhenRepeatable) {
  auto dropped_once = [](const std::string& target, MonotonicTime) {
    return target == "a:1" ? Dropped() : absl::OkStatus();
  };
  const CallRun once = RunCall(kNodes, absl::Seconds(10), /*repeatable=*/false,
                           dropped_once);
  EXPECT_EQ(once.status.message(), "Socket closed");
  EXPECT_EQ(once.targets.size(), 1u);
  const CallRun repeated = RunCall(kNodes, absl::Seconds(10), /*repeatable=*/true,
                               dropped_once);
  EXPECT_TRUE(repeated.status.ok()) << repeated.status;
  EXPECT_EQ(repeated.targets.size(), 2u);
}

TEST(CallRetryTest, TheServersAnswerEndsTheCallAtOnce) {
  const absl::Status not_holder = WithReason(
      absl::StatusCode::kFailedPrecondition, "not holder",
      leasekeeper::v1::NOT_HOLDER);
  const CallRun run = RunCall(kNodes, absl::Seconds(10), /*repeatable=*/true,
                          [&](const std::string&, MonotonicTime) {
                            return not_holder;
                          });
  EXPECT_EQ(run.status, not_holder);
  EXPECT_EQ(run.targets.size(), 1u);
}

TEST(CallRetryTest, AtTheDeadlineTheCallFailsWithTheLastAnswerNamingItsEndpoint) {
  const CallRun run = RunCall(kNodes, absl::Seconds(3), /*repeatable=*/true,
                          [](const std::string& target, MonotonicTime) {
                            return target == "a:1" ? Refused() : NotLeader();
                          });
  EXPECT_TRUE(HasErrorReason(run.status, ErrorReason::kNotLeader) ||
              absl::StrContains(run.status.message(), "Connection refused"))
      << run.status;
  EXPECT_TRUE(absl::StrContains(
      run.status.message(), absl::StrCat("(from ", run.targets.back(),
                                         ", the last of ",
                                         run.targets.size(), " attempts")))
      << run.status;
  EXPECT_LE(run.ended, kT0 + absl::Seconds(3));
  EXPECT_GE(run.ended, kT0 + absl::Seconds(3) - EndpointChoice::kMaxDelay -
                           absl::Milliseconds(2));
}

TEST(CallRetryTest, OneEndpointIsTriedAgainWithBackoffUntilItServes) {
  // A single node that restarts: refused for 1 s, then serving.
  const CallRun run = RunCall({"a:1"}, absl::Seconds(5), /*repeatable=*/false,
                          [](const std::string&, MonotonicTime now) {
                            return now < kT0 + absl::Seconds(1)
                                       ? Refused()
                                       : absl::OkStatus();
                          });
  EXPECT_TRUE(run.status.ok()) << run.status;
  EXPECT_LE(run.ended, kT0 + absl::Seconds(1) + CallRetry::kMaxDelay +
                           absl::Milliseconds(2));
  // Backed off: not one attempt per millisecond.
  EXPECT_LT(run.targets.size(), 20u);
}

TEST(CallRetryTest, TheCallersCancellationEndsTheCall) {
  const CallRun run = RunCall(kNodes, absl::Seconds(10), /*repeatable=*/true,
                          [](const std::string&, MonotonicTime) {
                            return absl::CancelledError("cancelled");
                          });
  EXPECT_EQ(run.status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(run.targets.size(), 1u);
}

TEST(CallRetryTest, AFailedTlsHandshakeEndsTheCallAtOnce) {
  const absl::Status handshake = absl::UnavailableError(
      "failed to connect to all addresses; last error: UNKNOWN: "
      "ipv4:127.0.0.1:7001: Ssl handshake failed: SSL_ERROR_SSL: "
      "WRONG_VERSION_NUMBER");
  const CallRun run = RunCall(kNodes, absl::Seconds(10), /*repeatable=*/true,
                              [&](const std::string&, MonotonicTime) {
                                return handshake;
                              });
  EXPECT_EQ(run.status, handshake);
  EXPECT_EQ(run.targets.size(), 1u);
}

TEST(CallRetryTest, OnlyAFailedConnectionCountsAsNeverSent) {
  EXPECT_TRUE(NeverSent(Refused()));
  EXPECT_TRUE(NeverSent(absl::UnavailableError(
      "connections to all backends failing; last error: UNAVAILABLE")));
  EXPECT_FALSE(NeverSent(Dropped()));
  EXPECT_FALSE(NeverSent(NotLeader()));
  EXPECT_FALSE(NeverSent(absl::DeadlineExceededError("Deadline Exceeded")));
}

}  // namespace
}  // namespace leasekeeper::client::internal
