// Every field's bad values give INVALID_ARGUMENT (with the contract's text,
// the reason and the field) and oversized values RESOURCE_EXHAUSTED naming
// the limit; neither changes anything. Also ListLocks paging.
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

struct Refusal {
  grpc::StatusCode code;
  std::string message;
  std::string reason;
  std::string field;  // ErrorDetail.field, or .limit for RESOURCE_EXHAUSTED
};

template <typename Response>
Refusal RefusalOf(const Result<Response>& r) {
  return {r.code(), r.status.error_message(), r.reason,
          r.code() == grpc::StatusCode::RESOURCE_EXHAUSTED ? r.detail.limit()
                                                           : r.detail.field()};
}

struct Case {
  std::string name;
  std::function<Refusal(TestClient&)> call;
  Refusal expected;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

Refusal BadArgument(const std::string& field) {
  return {grpc::StatusCode::INVALID_ARGUMENT, "invalid arguments",
          "INVALID_ARGUMENTS", field};
}
const Refusal kBadTtl{grpc::StatusCode::INVALID_ARGUMENT, "invalid ttl",
                      "INVALID_TTL", "ttl_ms"};
Refusal TooLong(const std::string& limit, int64_t value) {
  return {grpc::StatusCode::RESOURCE_EXHAUSTED,
          "limit exceeded: " + limit + "=" + std::to_string(value),
          "LIMIT_EXCEEDED", limit};
}

pb::AcquireRequest GoodAcquire() { return AcquireRequest("c", "L", 1'000); }
pb::RenewRequest GoodRenew() {
  pb::RenewRequest r;
  r.set_client_id("holder");
  r.set_lock("L");
  r.set_ttl_ms(1'000);
  return r;
}
pb::ReleaseRequest GoodRelease() {
  pb::ReleaseRequest r;
  r.set_client_id("holder");
  r.set_lock("L");
  return r;
}
pb::WriteRequest GoodWrite() {
  pb::WriteRequest r;
  r.set_lock("L");
  r.set_key("k");
  r.set_value("v2");
  r.set_token(1);
  return r;
}

template <typename Request, typename Mutate>
Request With(Request request, Mutate mutate) {
  mutate(request);
  return request;
}

std::vector<Case> Cases() {
  const std::string long_name(257, 'x');
  const std::string long_id(129, 'x');
  std::vector<Case> cases;
  auto acquire = [&](std::string name, pb::AcquireRequest request,
                     Refusal expected) {
    cases.push_back(
        {"Acquire/" + name,
         [request](TestClient& c) { return RefusalOf(c.Acquire(request)); },
         expected});
  };
  acquire("EmptyClient",
          With(GoodAcquire(), [](auto& r) { r.set_client_id(""); }),
          BadArgument("client_id"));
  acquire("EmptyLock", With(GoodAcquire(), [](auto& r) { r.set_lock(""); }),
          BadArgument("lock"));
  acquire("UnknownMode",
          With(GoodAcquire(),
               [](auto& r) { r.set_mode(static_cast<pb::LockMode>(7)); }),
          BadArgument("mode"));
  acquire("UnknownModeBeforeBadTtl",
          With(GoodAcquire(),
               [](auto& r) {
                 r.set_mode(static_cast<pb::LockMode>(7));
                 r.set_ttl_ms(0);
               }),
          BadArgument("mode"));
  acquire("EmptyLockBeforeBadTtl",
          With(GoodAcquire(),
               [](auto& r) {
                 r.set_lock("");
                 r.set_ttl_ms(0);
               }),
          BadArgument("lock"));
  acquire("NegativeWait",
          With(GoodAcquire(), [](auto& r) { r.set_wait_timeout_ms(-1); }),
          BadArgument("wait_timeout_ms"));
  acquire(
      "WaitOverADay",
      With(GoodAcquire(), [](auto& r) { r.set_wait_timeout_ms(86'400'001); }),
      BadArgument("wait_timeout_ms"));
  acquire("ZeroTtl", With(GoodAcquire(), [](auto& r) { r.set_ttl_ms(0); }),
          kBadTtl);
  acquire("NegativeTtl", With(GoodAcquire(), [](auto& r) { r.set_ttl_ms(-5); }),
          kBadTtl);
  acquire("TtlOverADay",
          With(GoodAcquire(), [](auto& r) { r.set_ttl_ms(86'400'001); }),
          kBadTtl);
  acquire("LongClient",
          With(GoodAcquire(), [&](auto& r) { r.set_client_id(long_name); }),
          TooLong("max-client-id-bytes", 256));
  acquire("LongLock",
          With(GoodAcquire(), [&](auto& r) { r.set_lock(long_name); }),
          TooLong("max-lock-name-bytes", 256));
  acquire("LongLabel",
          With(GoodAcquire(), [&](auto& r) { r.set_holder_label(long_name); }),
          TooLong("max-label-bytes", 256));
  acquire("LongRequestId",
          With(GoodAcquire(), [&](auto& r) { r.set_request_id(long_id); }),
          TooLong("max-request-id-bytes", 128));
  acquire("LongSessionId",
          With(GoodAcquire(), [&](auto& r) { r.set_session_id(long_name); }),
          TooLong("max-client-id-bytes", 256));

  auto renew = [&](std::string name, pb::RenewRequest request,
                   Refusal expected) {
    cases.push_back(
        {"Renew/" + name,
         [request](TestClient& c) { return RefusalOf(c.Renew(request)); },
         expected});
  };
  renew("EmptyClient", With(GoodRenew(), [](auto& r) { r.set_client_id(""); }),
        BadArgument("client_id"));
  renew("EmptyLock", With(GoodRenew(), [](auto& r) { r.set_lock(""); }),
        BadArgument("lock"));
  renew("ZeroTtl", With(GoodRenew(), [](auto& r) { r.set_ttl_ms(0); }),
        kBadTtl);
  renew("TtlOverADay",
        With(GoodRenew(), [](auto& r) { r.set_ttl_ms(86'400'001); }), kBadTtl);
  renew("LongLock", With(GoodRenew(), [&](auto& r) { r.set_lock(long_name); }),
        TooLong("max-lock-name-bytes", 256));
  renew("LongRequestId",
        With(GoodRenew(), [&](auto& r) { r.set_request_id(long_id); }),
        TooLong("max-request-id-bytes", 128));

  auto release = [&](std::string name, pb::ReleaseRequest request,
                     Refusal expected) {
    cases.push_back(
        {"Release/" + name,
         [request](TestClient& c) { return RefusalOf(c.Release(request)); },
         expected});
  };
  release("EmptyClient",
          With(GoodRelease(), [](auto& r) { r.set_client_id(""); }),
          BadArgument("client_id"));
  release("EmptyLock", With(GoodRelease(), [](auto& r) { r.set_lock(""); }),
          BadArgument("lock"));
  release("LongClient",
          With(GoodRelease(), [&](auto& r) { r.set_client_id(long_name); }),
          TooLong("max-client-id-bytes", 256));

  auto write = [&](std::string name, pb::WriteRequest request,
                   Refusal expected) {
    cases.push_back(
        {"Write/" + name,
         [request](TestClient& c) { return RefusalOf(c.Write(request)); },
         expected});
  };
  write("EmptyLock", With(GoodWrite(), [](auto& r) { r.set_lock(""); }),
        BadArgument("lock"));
  write("EmptyKey", With(GoodWrite(), [](auto& r) { r.set_key(""); }),
        BadArgument("key"));
  write("EmptyValue", With(GoodWrite(), [](auto& r) { r.set_value(""); }),
        BadArgument("value"));
  write("ZeroToken", With(GoodWrite(), [](auto& r) { r.set_token(0); }),
        BadArgument("token"));
  write("LongKey", With(GoodWrite(), [&](auto& r) { r.set_key(long_name); }),
        TooLong("max-key-bytes", 256));
  write("LongValue",
        With(GoodWrite(),
             [](auto& r) { r.set_value(std::string((1 << 20) + 1, 'v')); }),
        TooLong("max-value-bytes", 1 << 20));

  cases.push_back({"Read/EmptyLock",
                   [](TestClient& c) { return RefusalOf(c.Read("", "k")); },
                   BadArgument("lock")});
  cases.push_back({"Read/EmptyKey",
                   [](TestClient& c) { return RefusalOf(c.Read("L", "")); },
                   BadArgument("key")});
  cases.push_back(
      {"Read/LongKey",
       [=](TestClient& c) { return RefusalOf(c.Read("L", long_name)); },
       TooLong("max-key-bytes", 256)});
  cases.push_back({"Inspect/EmptyLock",
                   [](TestClient& c) { return RefusalOf(c.Inspect("")); },
                   BadArgument("lock")});
  cases.push_back(
      {"Inspect/LongLock",
       [=](TestClient& c) { return RefusalOf(c.Inspect(long_name)); },
       TooLong("max-lock-name-bytes", 256)});
  cases.push_back({"Status/EmptyClient",
                   [](TestClient& c) { return RefusalOf(c.Status("")); },
                   BadArgument("client_id")});

  auto list = [&](std::string name, pb::ListLocksRequest request,
                  Refusal expected) {
    cases.push_back(
        {"ListLocks/" + name,
         [request](TestClient& c) { return RefusalOf(c.ListLocks(request)); },
         expected});
  };
  list("NegativePageSize",
       With(pb::ListLocksRequest(), [](auto& r) { r.set_page_size(-1); }),
       BadArgument("page_size"));
  list("MalformedPageToken",
       With(pb::ListLocksRequest(), [](auto& r) { r.set_page_token("!!"); }),
       BadArgument("page_token"));
  list("PageTokenOfAnotherPrefix",
       With(pb::ListLocksRequest(),
            [](auto& r) {
              r.set_prefix("b");
              r.set_page_token("YTE");  // "a1"
            }),
       BadArgument("page_token"));
  list("LongPrefix",
       With(pb::ListLocksRequest(), [&](auto& r) { r.set_prefix(long_name); }),
       TooLong("max-lock-name-bytes", 256));
  return cases;
}

class ValidationTest : public ServerTest,
                       public ::testing::WithParamInterface<Case> {
 protected:
  // Everything a refused request could have touched, as text.
  // (Wall-clock renderings differ from call to call and are left out.)
  std::string Snapshot() {
    std::string text;
    for (const char* lock : {"L", "M"}) {
      pb::InspectResponse inspect = client_->Inspect(lock).response;
      for (pb::Holder& h : *inspect.mutable_holders()) h.clear_expires_at();
      text += inspect.ShortDebugString() + "\n";
    }
    for (const char* who : {"holder", "waiter", "c"}) {
      pb::StatusResponse status = client_->Status(who).response;
      for (pb::Holder& h : *status.mutable_holds()) h.clear_expires_at();
      text += status.ShortDebugString() + "\n";
    }
    text += client_->Read("L", "k").response.ShortDebugString() + "\n";
    pb::ListLocksResponse list =
        client_->ListLocks(pb::ListLocksRequest()).response;
    for (pb::LockSummary& lock : *list.mutable_locks()) {
      for (pb::Holder& h : *lock.mutable_holders()) h.clear_expires_at();
    }
    text += list.ShortDebugString();
    server::CoreOwner::Stats stats = owner().GetStats();
    text += " leases=" + std::to_string(stats.held_leases) +
            " waiters=" + std::to_string(stats.waiters) +
            " retry=" + std::to_string(stats.retry_entries);
    return text;
  }
};

TEST_P(ValidationTest, BadValueIsRefusedAndChangesNothing) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).ok());
  ASSERT_TRUE(client_->Acquire("waiter", "L", 60'000).response.has_queued());
  ASSERT_TRUE(client_->Write("L", "k", "v1", 1).ok());
  const std::string before = Snapshot();

  const Refusal got = GetParam().call(*client_);
  const Refusal& want = GetParam().expected;
  EXPECT_EQ(got.code, want.code);
  EXPECT_EQ(got.message, want.message);
  EXPECT_EQ(got.reason, want.reason);
  EXPECT_EQ(got.field, want.field);
  EXPECT_EQ(Snapshot(), before);
}

INSTANTIATE_TEST_SUITE_P(EveryField, ValidationTest,
                         ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.name;
                           for (char& c : name) {
                             if (c == '/') c = '_';
                           }
                           return name;
                         });

class ListLocksTest : public ServerTest {};

TEST_F(ListLocksTest, PagesThroughAPrefixInNameOrder) {
  for (const char* lock : {"a3", "a1", "b1", "a2", "a5", "a4"}) {
    ASSERT_TRUE(client_->Acquire(std::string("c-") + lock, lock, 60'000).ok());
  }
  ASSERT_TRUE(client_->Acquire("w", "a2", 60'000).response.has_queued());
  pb::ListLocksRequest request;
  request.set_prefix("a");
  request.set_page_size(2);
  std::vector<std::vector<std::string>> pages;
  while (true) {
    Result<pb::ListLocksResponse> page = client_->ListLocks(request);
    ASSERT_TRUE(page.ok()) << page.status.error_message();
    std::vector<std::string> names;
    for (const pb::LockSummary& lock : page.response.locks()) {
      names.push_back(lock.lock());
      EXPECT_EQ(lock.holders(0).client_id(), "c-" + lock.lock());
      EXPECT_EQ(lock.queue_length(), lock.lock() == "a2" ? 1 : 0);
    }
    pages.push_back(names);
    if (page.response.next_page_token().empty()) break;
    request.set_page_token(page.response.next_page_token());
  }
  EXPECT_EQ(pages, (std::vector<std::vector<std::string>>{
                       {"a1", "a2"}, {"a3", "a4"}, {"a5"}}));
}

TEST_F(ListLocksTest, InspectShowsLabelsAndHumanExpiry) {
  pb::AcquireRequest request = AcquireRequest("job", "L", 60'000);
  request.set_holder_label("host-7 pid 4242");
  ASSERT_TRUE(client_->Acquire(request).ok());
  Result<pb::InspectResponse> inspect = client_->Inspect("L");
  ASSERT_EQ(inspect.response.holders_size(), 1);
  const pb::Holder& holder = inspect.response.holders(0);
  EXPECT_EQ(holder.holder_label(), "host-7 pid 4242");
  EXPECT_EQ(holder.expires_in_ms(), 60'000);
  const int64_t wall_now =
      std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  EXPECT_NEAR(holder.expires_at().seconds(), wall_now + 60, 5);
}

TEST_F(ListLocksTest, LabelsFollowARequestFromTheQueueToItsLease) {
  pb::AcquireRequest holder = AcquireRequest("a", "L", 1'000);
  holder.set_holder_label("job a");
  pb::AcquireRequest waiter = AcquireRequest("b", "L", 5'000);
  waiter.set_holder_label("job b");
  ASSERT_TRUE(client_->Acquire(holder).ok());
  ASSERT_TRUE(client_->Acquire(waiter).response.has_queued());
  Result<pb::InspectResponse> before = client_->Inspect("L");
  EXPECT_EQ(before.response.holders(0).holder_label(), "job a");
  EXPECT_EQ(before.response.queue(0).holder_label(), "job b");
  At(1'000);  // a lapses, b takes over
  Result<pb::InspectResponse> after = client_->Inspect("L");
  ASSERT_EQ(after.response.holders_size(), 1);
  EXPECT_EQ(after.response.holders(0).client_id(), "b");
  EXPECT_EQ(after.response.holders(0).holder_label(), "job b");
  At(6'000);  // b lapses too (the timer does it): no label outlives its lease
  EXPECT_TRUE(Eventually([&] { return owner().GetStats().labels == 0; }));
}

}  // namespace
}  // namespace leasekeeper::testing
