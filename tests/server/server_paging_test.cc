// Inspect and Status answer one page at a time: a lock with more holders
// than one 4 MiB message can carry is inspected page by page, every holder
// exactly once and in token order; a bad page token or size is refused with
// INVALID_ARGUMENT; a client's holds come in pages by lock name.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

constexpr size_t kMaxMessageBytes = 4 << 20;  // gRPC's default receive cap

class ServerPagingTest : public ServerTest {
 protected:
  Result<pb::InspectResponse> InspectPage(const std::string& lock,
                                          int32_t page_size,
                                          const std::string& token) {
    pb::InspectRequest request;
    request.set_lock(lock);
    request.set_page_size(page_size);
    request.set_page_token(token);
    return client_->Inspect(request);
  }
  Result<pb::StatusResponse> StatusPage(const std::string& client,
                                        int32_t page_size,
                                        const std::string& token) {
    pb::StatusRequest request;
    request.set_client_id(client);
    request.set_page_size(page_size);
    request.set_page_token(token);
    return client_->Status(request);
  }
};

TEST_F(ServerPagingTest, TwentyThousandLabelledHoldersAreInspectedInPages) {
  constexpr int kHolders = 20'000;
  const std::string label(250, 'l');
  for (int i = 0; i < kHolders; ++i) {
    pb::AcquireRequest request =
        AcquireRequest(absl::StrCat("reader-", i), "crowded", 600'000);
    request.set_mode(pb::LOCK_MODE_SHARED);
    request.set_holder_label(label);
    ASSERT_TRUE(client_->Acquire(request).ok()) << i;
  }
  ASSERT_TRUE(client_->Acquire("writer", "crowded", 1'000).ok());

  // A request with no page fields gets the first page, not an error.
  Result<pb::InspectResponse> first = client_->Inspect("crowded");
  ASSERT_TRUE(first.ok()) << first.status.error_message();
  EXPECT_EQ(first.response.holders_size(), 1'000);
  EXPECT_FALSE(first.response.next_page_token().empty());

  std::vector<uint64_t> tokens;
  std::vector<std::string> waiters;
  std::string token;
  int pages = 0;
  do {
    Result<pb::InspectResponse> page = InspectPage("crowded", 0, token);
    ASSERT_TRUE(page.ok()) << page.status.error_message();
    EXPECT_LT(page.response.ByteSizeLong(), kMaxMessageBytes);
    for (const pb::Holder& holder : page.response.holders()) {
      EXPECT_EQ(holder.client_id(), absl::StrCat("reader-", tokens.size()));
      EXPECT_EQ(holder.holder_label(), label);
      tokens.push_back(holder.token());
    }
    for (const pb::Waiter& waiter : page.response.queue()) {
      EXPECT_EQ(waiter.position(), static_cast<int64_t>(waiters.size()) + 1);
      waiters.push_back(waiter.client_id());
    }
    token = page.response.next_page_token();
    ASSERT_LT(++pages, 100);
  } while (!token.empty());
  ASSERT_EQ(tokens.size(), static_cast<size_t>(kHolders));
  for (size_t i = 1; i < tokens.size(); ++i) {
    ASSERT_LT(tokens[i - 1], tokens[i]) << "by token, each holder once";
  }
  EXPECT_EQ(waiters, std::vector<std::string>{"writer"});
  EXPECT_EQ(pages, 21) << "20 pages of holders, then the queue";
}

TEST_F(ServerPagingTest, SmallPagesWalkHoldersThenQueueByPosition) {
  for (const char* reader : {"r1", "r2", "r3"}) {
    ASSERT_TRUE(client_->Acquire(reader, "L", 60'000, pb::LOCK_MODE_SHARED)
                    .ok());
  }
  for (const char* writer : {"w1", "w2", "w3"}) {
    ASSERT_TRUE(client_->Acquire(writer, "L", 60'000).ok());
  }
  std::vector<std::string> seen;
  std::string token;
  do {
    Result<pb::InspectResponse> page = InspectPage("L", 2, token);
    ASSERT_TRUE(page.ok()) << page.status.error_message();
    EXPECT_LE(page.response.holders_size() + page.response.queue_size(), 2);
    for (const pb::Holder& h : page.response.holders()) {
      seen.push_back(h.client_id());
    }
    for (const pb::Waiter& w : page.response.queue()) {
      seen.push_back(absl::StrCat(w.client_id(), "@", w.position()));
    }
    token = page.response.next_page_token();
  } while (!token.empty());
  EXPECT_EQ(seen, (std::vector<std::string>{"r1", "r2", "r3", "w1@1", "w2@2",
                                            "w3@3"}));
}

TEST_F(ServerPagingTest, BadPageTokenOrSizeIsRefusedAndChangesNothing) {
  ASSERT_TRUE(client_->Acquire("a", "L", 60'000).ok());
  for (const std::string bad : {"not base64!", "eA", "aDA", "cS0x"}) {
    Result<pb::InspectResponse> inspect = InspectPage("L", 0, bad);
    EXPECT_EQ(inspect.code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_EQ(inspect.detail.field(), "page_token") << bad;
  }
  EXPECT_EQ(InspectPage("L", -1, "").code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  Result<pb::StatusResponse> status = StatusPage("a", 0, "not base64!");
  EXPECT_EQ(status.code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.detail.field(), "page_token");
  EXPECT_EQ(StatusPage("a", -1, "").code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  Result<pb::InspectResponse> after = client_->Inspect("L");
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after.response.holders_size(), 1);
  EXPECT_EQ(after.response.holders(0).client_id(), "a");
}

TEST_F(ServerPagingTest, StatusHoldsComeInPagesByLockName) {
  for (const char* lock : {"e", "b", "d", "a", "c"}) {
    ASSERT_TRUE(client_->Acquire("x", lock, 60'000).ok());
  }
  Result<pb::StatusResponse> whole = client_->Status("x");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole.response.holds_size(), 5);
  EXPECT_TRUE(whole.response.next_page_token().empty());

  std::vector<std::string> locks;
  std::string token;
  int pages = 0;
  do {
    Result<pb::StatusResponse> page = StatusPage("x", 2, token);
    ASSERT_TRUE(page.ok()) << page.status.error_message();
    EXPECT_TRUE(page.response.registered());
    EXPECT_LE(page.response.holds_size(), 2);
    for (const pb::Holder& h : page.response.holds()) {
      locks.push_back(h.lock());
    }
    token = page.response.next_page_token();
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(locks, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(pages, 3);
}

}  // namespace
}  // namespace leasekeeper::testing
