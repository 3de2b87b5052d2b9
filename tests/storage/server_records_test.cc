#include "storage/server_records.h"

#include <string>

#include "gtest/gtest.h"

namespace leasekeeper::storage {
namespace {

ServerRecord Opened(Tick at, std::string id, std::string client) {
  return ServerRecord{at, srec::SessionOpened{std::move(id), std::move(client)}};
}
ServerRecord Ended(Tick at, std::string id) {
  return ServerRecord{at, srec::SessionEnded{std::move(id)}};
}
ServerRecord Answered(Tick at, std::string client, std::string request,
                      std::string entry) {
  return ServerRecord{at, srec::RetryAnswered{std::move(client),
                                              std::move(request),
                                              std::move(entry)}};
}
ServerRecord Forgotten(Tick at, std::string client, std::string request) {
  return ServerRecord{
      at, srec::RetryForgotten{std::move(client), std::move(request)}};
}
ServerRecord Labelled(Tick at, std::string client, std::string lock,
                      std::string label) {
  return ServerRecord{at, srec::LabelSet{std::move(client), std::move(lock),
                                         std::move(label)}};
}
ServerRecord Unlabelled(Tick at, std::string client, std::string lock) {
  return ServerRecord{at,
                      srec::LabelCleared{std::move(client), std::move(lock)}};
}

TEST(ServerStateReplay, SessionsAreKeptInOpenOrderUntilTheyEnd) {
  ServerStateReplay replay;
  replay.Apply(Opened(1, "s-b", "job-b"));
  replay.Apply(Opened(2, "s-a", "job-a"));
  replay.Apply(Opened(3, "s-c", "job-c"));
  replay.Apply(Ended(4, "s-a"));
  ServerState state = replay.Take();
  ASSERT_EQ(state.sessions.size(), 2u);
  EXPECT_EQ(state.sessions[0].session_id, "s-b");
  EXPECT_EQ(state.sessions[0].client, "job-b");
  EXPECT_EQ(state.sessions[1].session_id, "s-c");
  EXPECT_EQ(replay.session_count(), 0u);  // Take empties the replay
}

TEST(ServerStateReplay, EndingOrForgettingWhatIsAbsentChangesNothing) {
  ServerStateReplay replay;
  replay.Apply(Opened(1, "s-1", "job"));
  replay.Apply(Answered(2, "job", "r-1", "first"));
  replay.Apply(Ended(3, "s-unknown"));
  replay.Apply(Forgotten(4, "job", "r-unknown"));
  replay.Apply(Forgotten(5, "other", "r-1"));
  EXPECT_EQ(replay.session_count(), 1u);
  EXPECT_EQ(replay.retry_count(), 1u);
}

TEST(ServerStateReplay, ARetryAnsweredAgainKeepsItsPlaceAndTakesTheNewAnswer) {
  ServerStateReplay replay;
  replay.Apply(Answered(10, "job", "r-1", "queued at 3"));
  replay.Apply(Answered(11, "job", "r-2", "released"));
  replay.Apply(Answered(12, "job", "r-1", "queued at 2"));
  ServerState state = replay.Take();
  ASSERT_EQ(state.retries.size(), 2u);
  EXPECT_EQ(state.retries[0].request_id, "r-1");
  EXPECT_EQ(state.retries[0].entry, "queued at 2");
  EXPECT_EQ(state.retries[0].answered_at, 12);
  EXPECT_EQ(state.retries[1].request_id, "r-2");
  EXPECT_EQ(state.retries[1].answered_at, 11);
}

TEST(ServerStateReplay, AForgottenRetryIsGoneAndMayBeAnsweredAfresh) {
  ServerStateReplay replay;
  replay.Apply(Answered(1, "job", "r-1", "granted 4"));
  replay.Apply(Answered(2, "job", "r-2", "renewed"));
  replay.Apply(Forgotten(3, "job", "r-1"));
  replay.Apply(Answered(4, "job", "r-1", "granted 5"));
  ServerState state = replay.Take();
  ASSERT_EQ(state.retries.size(), 2u);
  // Answered afresh: it goes to the back.
  EXPECT_EQ(state.retries[0].request_id, "r-2");
  EXPECT_EQ(state.retries[1].request_id, "r-1");
  EXPECT_EQ(state.retries[1].entry, "granted 5");
}

TEST(ServerStateReplay, WithATtlAnAnswerOlderThanItLeavesWhenANewerOneIsRecorded) {
  ServerStateReplay replay(/*retry_ttl_ms=*/100);
  replay.Apply(Answered(0, "job", "r-1", "granted 1"));
  replay.Apply(Answered(50, "job", "r-2", "granted 2"));
  replay.Apply(Answered(99, "job", "r-3", "granted 3"));  // r-1 still in its ttl
  EXPECT_EQ(replay.retry_count(), 3u);
  replay.Apply(Answered(150, "job", "r-4", "granted 4"));  // r-1, r-2 expired
  EXPECT_EQ(replay.retry_count(), 2u);
  ServerState state = replay.Take();
  ASSERT_EQ(state.retries.size(), 2u);
  EXPECT_EQ(state.retries[0].request_id, "r-3");
  EXPECT_EQ(state.retries[1].request_id, "r-4");
}

TEST(ServerStateReplay, WithATtlAnAnswerInItsTtlHoldsBackTheExpiryOfNewerOnes) {
  ServerStateReplay replay(/*retry_ttl_ms=*/100);
  replay.Apply(Answered(0, "job", "r-1", "queued at 2"));
  replay.Apply(Answered(10, "job", "r-2", "released"));
  replay.Apply(Answered(90, "job", "r-1", "granted 7"));  // keeps its place
  replay.Apply(Answered(120, "job", "r-3", "renewed"));
  // r-2 is past its ttl, but r-1 in front of it is not: as RetryCache.
  EXPECT_EQ(replay.retry_count(), 3u);
  replay.Apply(Answered(190, "job", "r-4", "renewed"));
  EXPECT_EQ(replay.retry_count(), 2u);  // r-1 and r-2 gone
}

TEST(ServerStateReplay, WithATtlAForgottenAnswerAnsweredAfreshExpiresFromItsNewAnswer) {
  ServerStateReplay replay(/*retry_ttl_ms=*/100);
  replay.Apply(Answered(0, "job", "r-1", "granted 4"));
  replay.Apply(Forgotten(5, "job", "r-1"));
  replay.Apply(Answered(80, "job", "r-1", "granted 5"));
  replay.Apply(Answered(150, "job", "r-2", "renewed"));
  // The first answer's place in the expiry order is stale: r-1 answered at
  // 80 is still in its ttl at 150.
  ServerState state = replay.Take();
  ASSERT_EQ(state.retries.size(), 2u);
  EXPECT_EQ(state.retries[0].entry, "granted 5");
}

TEST(ServerStateReplay, WithATtlRestoredAnswersExpireInTheirOrder) {
  ServerStateReplay replay(/*retry_ttl_ms=*/100);
  ServerState snapshot;
  snapshot.retries.push_back({"job", "r-1", "granted 1", 0});
  snapshot.retries.push_back({"job", "r-2", "granted 2", 60});
  replay.Restore(std::move(snapshot));
  replay.Apply(Answered(130, "job", "r-3", "granted 3"));
  ServerState state = replay.Take();
  ASSERT_EQ(state.retries.size(), 2u);
  EXPECT_EQ(state.retries[0].request_id, "r-2");
}

TEST(ServerStateReplay, WithoutATtlEveryAnswerIsKept) {
  ServerStateReplay replay;
  replay.Apply(Answered(0, "job", "r-1", "granted 1"));
  replay.Apply(Answered(1'000'000, "job", "r-2", "granted 2"));
  EXPECT_EQ(replay.retry_count(), 2u);
}

TEST(ServerStateReplay, ALabelIsTheLastOneSetUntilItIsCleared) {
  ServerStateReplay replay;
  replay.Apply(Labelled(1, "a", "L", "first"));
  replay.Apply(Labelled(2, "b", "L", "waiting"));
  replay.Apply(Labelled(3, "a", "L", "second"));
  replay.Apply(Unlabelled(4, "b", "L"));
  replay.Apply(Unlabelled(5, "c", "L"));  // absent: nothing
  replay.Apply(Labelled(6, "a", "M", "gone"));
  replay.Apply(Labelled(7, "a", "M", ""));  // empty: a clear
  EXPECT_EQ(replay.label_count(), 1u);
  ServerState state = replay.Take();
  ASSERT_EQ(state.labels.size(), 1u);
  EXPECT_EQ(state.labels[0].client, "a");
  EXPECT_EQ(state.labels[0].lock, "L");
  EXPECT_EQ(state.labels[0].label, "second");
  EXPECT_EQ(replay.label_count(), 0u);
}

// A snapshot's state followed by the records after it gives what the whole
// stream gives.
TEST(ServerStateReplay, SnapshotPlusRecordsEqualsTheWholeStream) {
  const std::vector<ServerRecord> stream = {
      Opened(1, "s-1", "a"),          Answered(2, "a", "r-1", "x"),
      Opened(3, "s-2", "b"),          Answered(4, "b", "r-1", "y"),
      Ended(5, "s-1"),                Answered(6, "a", "r-2", "z"),
      Forgotten(7, "b", "r-1"),       Opened(8, "s-3", "a"),
      Answered(9, "a", "r-1", "x2"),  Labelled(10, "a", "L", "l1"),
      Labelled(11, "b", "L", "l2"),   Unlabelled(12, "a", "L"),
  };
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SCOPED_TRACE(cut);
    ServerStateReplay whole;
    for (const ServerRecord& r : stream) whole.Apply(r);
    ServerStateReplay first;
    for (size_t i = 0; i < cut; ++i) first.Apply(stream[i]);
    ServerStateReplay rest;
    rest.Restore(first.Take());
    for (size_t i = cut; i < stream.size(); ++i) rest.Apply(stream[i]);
    EXPECT_TRUE(SameServerState(rest.Take(), whole.Take()));
  }
}

}  // namespace
}  // namespace leasekeeper::storage
