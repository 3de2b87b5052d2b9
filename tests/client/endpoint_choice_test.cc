// The endpoint choice's rules (client/internal/endpoint_choice.h), on a fake
// time, and the parsing and expansion of endpoint lists.
#include "client/internal/endpoint_choice.h"

#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/time/time.h"
#include "client/channel.h"
#include "client/errors.h"
#include "client/internal/channel_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "leasekeeper/v1/lock_service.pb.h"
#include "tests/client/server_refusals.h"

namespace leasekeeper::client::internal {
namespace {

using ::leasekeeper::client::testing::NotLeader;
using ::leasekeeper::client::testing::WithReason;
using ::testing::ElementsAre;

absl::Status Unreachable() {
  return absl::UnavailableError("failed to connect to all addresses");
}

const MonotonicTime kT0 = absl::Seconds(100);

TEST(EndpointChoiceTest, TheFirstAttemptGoesToTheFirstEndpoint) {
  EndpointChoice choice({"a:1", "b:1", "c:1"}, kT0);
  EXPECT_EQ(choice.current(), "a:1");
  EXPECT_EQ(choice.not_before(), kT0);
}

TEST(EndpointChoiceTest, NotLeaderNamingALeaderMovesThereAtOnce) {
  EndpointChoice choice({"a:1", "b:1", "c:1"}, kT0);
  EXPECT_TRUE(choice.Report(choice.generation(), NotLeader("c:1"), kT0));
  EXPECT_EQ(choice.current(), "c:1");
  EXPECT_EQ(choice.not_before(), kT0);
}

TEST(EndpointChoiceTest, ALeaderOutsideTheListIsFollowedToo) {
  EndpointChoice choice({"seed:1"}, kT0);
  EXPECT_TRUE(
      choice.Report(choice.generation(), NotLeader("node-2.svc:7233"), kT0));
  EXPECT_EQ(choice.current(), "node-2.svc:7233");
  // The leader dies: back to the list.
  EXPECT_TRUE(choice.Report(choice.generation(), Unreachable(), kT0));
  EXPECT_EQ(choice.current(), "seed:1");
}

TEST(EndpointChoiceTest, AFailureMovesToTheNextEndpointInListOrderWrapping) {
  EndpointChoice choice({"a:1", "b:1", "c:1"}, kT0);
  std::vector<std::string> visited;
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(choice.Report(choice.generation(), Unreachable(), kT0));
    visited.push_back(choice.current());
  }
  EXPECT_THAT(visited, ElementsAre("b:1", "c:1", "a:1", "b:1"));
}

TEST(EndpointChoiceTest, EveryKindOfEndpointFailureMoves) {
  const absl::Status failures[] = {
      Unreachable(),
      NotLeader(),
      absl::DeadlineExceededError("Deadline Exceeded"),
      WithReason(absl::StatusCode::kUnavailable, "server shutting down",
                 leasekeeper::v1::SHUTTING_DOWN),
  };
  for (const absl::Status& failure : failures) {
    EndpointChoice choice({"a:1", "b:1"}, kT0);
    EXPECT_EQ(VerdictOf(failure), EndpointVerdict::kFailed) << failure;
    EXPECT_TRUE(choice.Report(choice.generation(), failure, kT0)) << failure;
    EXPECT_EQ(choice.current(), "b:1") << failure;
  }
}

TEST(EndpointChoiceTest, AnswersAndCancellationsNeverMove) {
  const absl::Status stays[] = {
      absl::OkStatus(),
      WithReason(absl::StatusCode::kFailedPrecondition, "not holder",
                 leasekeeper::v1::NOT_HOLDER),
      WithReason(absl::StatusCode::kDeadlineExceeded, "wait timed out",
                 leasekeeper::v1::WAIT_TIMEOUT),
      WithReason(absl::StatusCode::kCancelled, "superseded by retry",
                 leasekeeper::v1::SUPERSEDED_BY_RETRY),
      absl::CancelledError("cancelled by the caller"),
      absl::InvalidArgumentError("invalid arguments"),
  };
  for (const absl::Status& status : stays) {
    EndpointChoice choice({"a:1", "b:1"}, kT0);
    EXPECT_FALSE(choice.Report(choice.generation(), status, kT0)) << status;
    EXPECT_EQ(choice.current(), "a:1") << status;
  }
}

TEST(EndpointChoiceTest, AfterARedirectTheNextFailureGoesToTheListsNext) {
  EndpointChoice choice({"a:1", "b:1", "c:1"}, kT0);
  ASSERT_TRUE(choice.Report(choice.generation(), NotLeader("c:1"), kT0));
  ASSERT_TRUE(choice.Report(choice.generation(), Unreachable(), kT0));
  // "a" redirected; the list's next after "a" is "b".
  EXPECT_EQ(choice.current(), "b:1");
}

TEST(EndpointChoiceTest, ANodeNamingItselfAsLeaderCountsAsItsFailure) {
  EndpointChoice choice({"a:1", "b:1"}, kT0);
  EXPECT_TRUE(choice.Report(choice.generation(), NotLeader("a:1"), kT0));
  EXPECT_EQ(choice.current(), "b:1");
}

TEST(EndpointChoiceTest, OneEndpointWithNowhereElseToGoStays) {
  EndpointChoice choice({"only:1"}, kT0);
  const uint64_t generation = choice.generation();
  EXPECT_FALSE(choice.Report(generation, Unreachable(), kT0));
  EXPECT_FALSE(choice.Report(generation, NotLeader(), kT0));
  EXPECT_EQ(choice.current(), "only:1");
  EXPECT_EQ(choice.generation(), generation);
}

TEST(EndpointChoiceTest, AFailureOfAnOlderAttemptChangesNothing) {
  EndpointChoice choice({"a:1", "b:1", "c:1"}, kT0);
  const uint64_t first = choice.generation();
  ASSERT_TRUE(choice.Report(first, Unreachable(), kT0));  // now at b
  // A second call that also went to "a" fails late: "b" is untried.
  EXPECT_FALSE(choice.Report(first, Unreachable(), kT0));
  EXPECT_EQ(choice.current(), "b:1");
}

TEST(EndpointChoiceTest, MovesAreImmediateForOneRoundThenBackOff) {
  EndpointChoice choice({"a:1", "b:1", "c:1"}, kT0);
  MonotonicTime now = kT0;
  // Three endpoints plus one redirect: four moves at once.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(choice.Report(choice.generation(), Unreachable(), now));
    EXPECT_EQ(choice.not_before(), now) << "move " << i;
  }
  // Then each move waits a jittered delay in [nominal / 2, nominal],
  // nominal 100 ms doubling to 1 s.
  absl::Duration nominal = absl::Milliseconds(100);
  for (int i = 0; i < 6; ++i) {
    now += absl::Milliseconds(1);
    ASSERT_TRUE(choice.Report(choice.generation(), Unreachable(), now));
    const absl::Duration delay = choice.not_before() - now;
    EXPECT_GE(delay, nominal / 2) << "move " << i;
    EXPECT_LE(delay, nominal) << "move " << i;
    nominal = std::min(nominal * 2, absl::Seconds(1));
  }
}

TEST(EndpointChoiceTest, TwoNodesNamingEachOtherCannotMakeABusyLoop) {
  EndpointChoice choice({"a:1", "b:1"}, kT0);
  int immediate = 0;
  for (int i = 0; i < 20; ++i) {
    const std::string other = choice.current() == "a:1" ? "b:1" : "a:1";
    ASSERT_TRUE(choice.Report(choice.generation(), NotLeader(other), kT0));
    if (choice.not_before() == kT0) ++immediate;
  }
  EXPECT_EQ(immediate, 3);  // two endpoints plus one redirect
}

TEST(EndpointChoiceTest, ASuccessResetsTheRoundAndTheBackoff) {
  EndpointChoice choice({"a:1", "b:1"}, kT0);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(choice.Report(choice.generation(), Unreachable(), kT0));
  }
  ASSERT_GT(choice.not_before(), kT0);
  const std::string served_by = choice.current();
  EXPECT_FALSE(choice.Report(choice.generation(), absl::OkStatus(), kT0));
  EXPECT_EQ(choice.current(), served_by);
  ASSERT_TRUE(choice.Report(choice.generation(), Unreachable(), kT0));
  EXPECT_EQ(choice.not_before(), kT0);
}

TEST(EndpointListTest, ParsesACommaSeparatedListInOrder) {
  absl::StatusOr<std::vector<std::string>> list =
      ParseEndpoints("a:1, b:2 ,c:3");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(*list, ElementsAre("a:1", "b:2", "c:3"));
  list = ParseEndpoints("localhost:7233");
  ASSERT_TRUE(list.ok());
  EXPECT_THAT(*list, ElementsAre("localhost:7233"));
}

TEST(EndpointListTest, RefusesAnEmptyListOrEntry) {
  for (absl::string_view bad : {"", "a:1,,b:1", "a:1,", " , "}) {
    EXPECT_EQ(ParseEndpoints(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

std::vector<std::string> FakeDns(absl::string_view host) {
  if (host == "locks.svc") return {"10.0.0.1", "10.0.0.2", "10.0.0.1", "fd00::3"};
  if (host == "single.svc") return {"10.0.0.9"};
  return {};
}

TEST(EndpointListTest, OneNameWithSeveralAddressesBecomesOneEndpointEach) {
  std::string server_name;
  EXPECT_THAT(ExpandEndpoints({"locks.svc:7233"}, FakeDns, &server_name),
              ElementsAre("10.0.0.1:7233", "10.0.0.2:7233", "[fd00::3]:7233"));
  EXPECT_EQ(server_name, "locks.svc");
}

TEST(EndpointListTest, ListsAddressesAndSingleAddressNamesStayAsGiven) {
  std::string server_name;
  EXPECT_THAT(ExpandEndpoints({"single.svc:7233"}, FakeDns, &server_name),
              ElementsAre("single.svc:7233"));
  EXPECT_THAT(ExpandEndpoints({"10.1.1.1:7233"}, FakeDns, &server_name),
              ElementsAre("10.1.1.1:7233"));
  EXPECT_THAT(ExpandEndpoints({"dns:///locks.svc:7233"}, FakeDns, &server_name),
              ElementsAre("dns:///locks.svc:7233"));
  EXPECT_THAT(
      ExpandEndpoints({"locks.svc:7233", "x:1"}, FakeDns, &server_name),
      ElementsAre("locks.svc:7233", "x:1"));
  EXPECT_THAT(ExpandEndpoints({"unknown.svc:7233"}, FakeDns, &server_name),
              ElementsAre("unknown.svc:7233"));
  EXPECT_EQ(server_name, "");
}

}  // namespace
}  // namespace leasekeeper::client::internal
