// SnapshotChunks' contract, case by case: what a follower accepts from a
// snapshot transfer's chunks, and what ends it with DataLoss.
#include "cluster/snapshot_chunks.h"

#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace leasekeeper::storage {
namespace {

SnapshotChunk First(uint64_t file_bytes, absl::string_view data) {
  return SnapshotChunk{.covered_position = 42,
                       .file_bytes = file_bytes,
                       .payload_crc32c = 7,
                       .offset = 0,
                       .data = data};
}

SnapshotChunk Next(uint64_t offset, absl::string_view data) {
  return SnapshotChunk{.covered_position = 0,
                       .file_bytes = 0,
                       .payload_crc32c = 0,
                       .offset = offset,
                       .data = data};
}

TEST(SnapshotChunksTest, ChunksInOrderMakeTheFileTheFirstChunkAnnounced) {
  SnapshotChunks chunks;
  ASSERT_TRUE(chunks.Add(First(6, "abc")).ok());
  ASSERT_TRUE(chunks.Add(Next(3, "")).ok());
  ASSERT_TRUE(chunks.Add(Next(3, "def")).ok());
  absl::StatusOr<FetchedSnapshot> fetched = chunks.Finish();
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(fetched->bytes, "abcdef");
  EXPECT_EQ(fetched->covered, 42u);
  EXPECT_EQ(fetched->payload_crc32c, 7u);
}

TEST(SnapshotChunksTest, LaterChunksHeaderFieldsAreIgnored) {
  SnapshotChunks chunks;
  ASSERT_TRUE(chunks.Add(First(2, "a")).ok());
  SnapshotChunk second = Next(1, "b");
  second.covered_position = 99;
  second.file_bytes = 1000;
  ASSERT_TRUE(chunks.Add(second).ok());
  absl::StatusOr<FetchedSnapshot> fetched = chunks.Finish();
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(fetched->covered, 42u);
  EXPECT_EQ(fetched->bytes, "ab");
}

TEST(SnapshotChunksTest, AnAnnouncementOverTheTransferLimitIsDataLoss) {
  SnapshotChunks chunks;
  EXPECT_EQ(chunks.Add(First(kMaxSnapshotTransferBytes + 1, "")).code(),
            absl::StatusCode::kDataLoss);
}

TEST(SnapshotChunksTest, AnAnnouncementAtTheLimitIsAccepted) {
  SnapshotChunks chunks;
  EXPECT_TRUE(chunks.Add(First(kMaxSnapshotTransferBytes, "x")).ok());
  EXPECT_EQ(chunks.Finish().status().code(), absl::StatusCode::kDataLoss);
}

TEST(SnapshotChunksTest, AGapOrAnOverlapIsDataLoss) {
  for (uint64_t offset : {uint64_t{2}, uint64_t{4}, uint64_t{0}}) {
    SnapshotChunks chunks;
    ASSERT_TRUE(chunks.Add(First(6, "abc")).ok());
    EXPECT_EQ(chunks.Add(Next(offset, "def")).code(),
              absl::StatusCode::kDataLoss)
        << offset;
  }
}

TEST(SnapshotChunksTest, AFirstChunkNotAtOffsetZeroIsDataLoss) {
  SnapshotChunk first = First(6, "abc");
  first.offset = 1;
  SnapshotChunks chunks;
  EXPECT_EQ(chunks.Add(first).code(), absl::StatusCode::kDataLoss);
}

TEST(SnapshotChunksTest, BytesPastTheAnnouncedSizeAreDataLoss) {
  SnapshotChunks chunks;
  ASSERT_TRUE(chunks.Add(First(4, "abc")).ok());
  EXPECT_EQ(chunks.Add(Next(3, "de")).code(), absl::StatusCode::kDataLoss);
}

TEST(SnapshotChunksTest, FewerBytesThanAnnouncedAreDataLoss) {
  SnapshotChunks chunks;
  ASSERT_TRUE(chunks.Add(First(4, "abc")).ok());
  EXPECT_EQ(chunks.Finish().status().code(), absl::StatusCode::kDataLoss);
}

TEST(SnapshotChunksTest, NoChunkAtAllIsDataLoss) {
  SnapshotChunks chunks;
  EXPECT_EQ(chunks.Finish().status().code(), absl::StatusCode::kDataLoss);
}

TEST(SnapshotChunksTest, AfterAnErrorEveryCallReturnsIt) {
  SnapshotChunks chunks;
  ASSERT_TRUE(chunks.Add(First(4, "ab")).ok());
  const absl::Status broken = chunks.Add(Next(9, "cd"));
  ASSERT_EQ(broken.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(chunks.Add(Next(2, "cd")), broken);
  EXPECT_EQ(chunks.Finish().status(), broken);
}

}  // namespace
}  // namespace leasekeeper::storage
