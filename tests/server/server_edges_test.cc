// Input at the edges of a real leasekeeperd with its default limits
// (docs/errors.md, "Limits of every input"): each string a request carries
// is served at its maximum size and refused one byte over with the
// documented error, changing nothing; a Session client that writes 100,000
// calls without reading, and Watches of every lock that are never read,
// cost bounded memory while other clients are served within 1 s. Live
// (real time, 127.0.0.1 ports picked free).
#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "harness/local_cluster.h"
#include "metrics/testing/exposition_parser.h"
#include "metrics/testing/http_get.h"
#include "tests/server/session_stream.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

constexpr int64_t kTtlMs = 600'000;  // no lease lapses during the test

// What a call was answered: its status and the error's trailers.
struct Answer {
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
  std::string reason;
  pb::ErrorDetail detail;
};

// No answer came.
Answer Failed() {
  Answer answer;
  answer.code = grpc::StatusCode::UNKNOWN;
  return answer;
}

template <typename Response>
Answer Of(const Result<Response>& result) {
  return Answer{result.code(), result.status.error_message(), result.reason,
                result.detail};
}

Answer OfStream(const grpc::ClientContext& context,
                const grpc::Status& status) {
  Result<pb::WatchResponse> result;
  result.status = status;
  ReadErrorMetadata(context, result);
  return Of(result);
}

Answer OfCallError(const pb::SessionCallResult& result) {
  if (!result.has_error()) return Answer();
  return Answer{static_cast<grpc::StatusCode>(result.error().code()),
                result.error().message(),
                pb::ErrorReason_Name(result.error().detail().reason()),
                result.error().detail()};
}

std::string Bytes(size_t n, char c) { return std::string(n, c); }

// One input of the API: `call` sends a request whose input has `bytes`
// bytes (every other field valid); `prepare` (if set) runs before the call
// at the maximum, to make it servable.
struct Edge {
  Edge(std::string input, std::string flag, std::string field, size_t max,
       grpc::StatusCode at_max, std::function<Answer(size_t bytes)> call,
       std::function<void()> prepare = nullptr)
      : input(std::move(input)),
        flag(std::move(flag)),
        field(std::move(field)),
        max(max),
        at_max(at_max),
        call(std::move(call)),
        prepare(std::move(prepare)) {}

  std::string input;
  // The limit's flag; empty: the input is refused INVALID_ARGUMENT naming
  // `field` (a page token the server never issued).
  std::string flag;
  std::string field;
  size_t max = 0;
  // What the call at the maximum is answered: OK, or the lock rules'
  // answer (never the limit).
  grpc::StatusCode at_max = grpc::StatusCode::OK;
  std::function<Answer(size_t bytes)> call;
  std::function<void()> prepare;
};

class EdgesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    metrics_port_ = FreeLoopbackPort();
    ASSERT_GT(metrics_port_, 0);
    daemon_ = StartDaemon(
        {absl::StrCat("--metrics-listen=127.0.0.1:", metrics_port_)});
    ASSERT_FALSE(daemon_.address.empty());
    client_ = std::make_unique<TestClient>(daemon_.address);
  }

  // Everything a request can change, as the daemon's gauges and its log's
  // record count show it.
  std::map<std::string, double> State() {
    static const char* const kStateFamilies[] = {
        "leasekeeper_leases_held",     "leasekeeper_registered_clients",
        "leasekeeper_retry_cache_entries", "leasekeeper_sessions_open",
        "leasekeeper_store_bytes",     "leasekeeper_store_keys",
        "leasekeeper_waiters",         "leasekeeper_waiting_calls",
        "leasekeeper_watchers",        "leasekeeper_log_records_total"};
    std::map<std::string, double> state;
    absl::StatusOr<metrics::testing::HttpResponse> response =
        metrics::testing::HttpGet(metrics_port_, "/metrics");
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return state;
    absl::StatusOr<metrics::testing::Exposition> parsed =
        metrics::testing::Exposition::Parse(response->body);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    if (!parsed.ok()) return state;
    for (const metrics::testing::Sample& sample : parsed->samples()) {
      for (const char* family : kStateFamilies) {
        if (sample.name != family) continue;
        std::string key = sample.name;
        for (const auto& [label, value] : sample.labels) {
          absl::StrAppend(&key, ",", label, "=", value);
        }
        state[key] = sample.value;
      }
    }
    EXPECT_FALSE(state.empty());
    return state;
  }

  Answer Acquire(pb::AcquireRequest request) {
    return Of(client_->Acquire(request));
  }
  void MustAcquire(const std::string& client, const std::string& lock) {
    Result<pb::AcquireResponse> granted = client_->Acquire(client, lock, kTtlMs);
    ASSERT_TRUE(granted.ok()) << granted.status.error_message();
    ASSERT_TRUE(granted.response.has_granted()) << lock;
  }

  Answer ForceRelease(const std::string& lock, const std::string& client,
                      const std::string& reason) {
    pb::ForceReleaseRequest request;
    request.set_lock(lock);
    request.set_client_id(client);
    request.set_reason(reason);
    grpc::ClientContext context;
    Result<pb::ForceReleaseResponse> result;
    result.status =
        client_->stub().ForceRelease(&context, request, &result.response);
    ReadErrorMetadata(context, result);
    return Of(result);
  }

  // Opens a Watch and reads its first message: OK once the snapshot
  // arrived (the stream is then cancelled), else the stream's end.
  Answer Watch(const pb::WatchRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    auto reader = client_->stub().Watch(&context, request);
    pb::WatchResponse first;
    if (reader->Read(&first)) {
      context.TryCancel();
      while (reader->Read(&first)) {
      }
      reader->Finish();
      // The daemon forgets the watcher once it sees the cancellation.
      EXPECT_TRUE(
          Eventually([&] { return State()["leasekeeper_watchers"] == 0; }));
      return Answer();
    }
    return OfStream(context, reader->Finish());
  }

  // Opens a Session: OK once opened (the session is then closed), else the
  // stream's end.
  Answer Open(const std::string& client, const std::string& resume) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    auto stream = client_->stub().Session(&context);
    pb::SessionRequest open;
    open.mutable_open()->set_client_id(client);
    open.mutable_open()->set_resume_session_id(resume);
    stream->Write(open);
    pb::SessionResponse opened;
    if (stream->Read(&opened)) {
      pb::SessionRequest close;
      close.mutable_close();
      stream->Write(close);
      stream->WritesDone();
      while (stream->Read(&opened)) {
      }
      EXPECT_TRUE(stream->Finish().ok());
      return Answer();
    }
    return OfStream(context, stream->Finish());
  }

  // A call on the session of "edge-session" (opened by the first call and
  // kept: the stream outlives refused calls).
  Answer SessionCall(pb::SessionCall call) {
    if (session_ == nullptr) {
      session_ = std::make_unique<SessionStream>(client_->stub(),
                                                 std::chrono::seconds(60));
      std::optional<pb::SessionResponse> opened = session_->Open("edge-session");
      if (!opened.has_value() || !opened->has_opened()) {
        ADD_FAILURE() << "no session";
        return Failed();
      }
    }
    std::optional<pb::SessionCallResult> result =
        session_->Call(next_call_id_++, std::move(call));
    if (!result.has_value()) {
      ADD_FAILURE() << "no call result";
      return Failed();
    }
    return OfCallError(*result);
  }

  int metrics_port_ = 0;
  Daemon daemon_;
  std::unique_ptr<TestClient> client_;
  std::unique_ptr<SessionStream> session_;
  uint64_t next_call_id_ = 1;
};

pb::AcquireRequest Semaphore(const std::string& client,
                             const std::string& lock) {
  pb::AcquireRequest request = AcquireRequest(client, lock, kTtlMs);
  request.set_mode(pb::LOCK_MODE_SEMAPHORE);
  request.set_capacity(2);
  return request;
}

TEST_F(EdgesTest, EveryStringInputIsServedAtItsMaximumAndRefusedOneByteOver) {
  // The default limits, as docs/errors.md lists them.
  constexpr size_t kId = 256;        // --max-client-id-bytes
  constexpr size_t kName = 256;      // --max-lock-name-bytes
  constexpr size_t kKey = 256;       // --max-key-bytes
  constexpr size_t kValue = 1 << 20;  // --max-value-bytes
  constexpr size_t kLabel = 256;     // --max-label-bytes
  constexpr size_t kRequestId = 128;  // --max-request-id-bytes
  constexpr size_t kInspectToken = 21;  // "h" and a 20-digit token

  // A holder with the longest client id, of the store's locks.
  const std::string holder = Bytes(kId, 'h');
  const std::string store = "edge/store";
  const std::string long_store = Bytes(kName, 'w');
  MustAcquire(holder, store);
  MustAcquire(holder, long_store);
  ASSERT_TRUE(client_->Write(WriteRequest(store, "k", "v", 1, holder, true)).ok());
  ASSERT_TRUE(
      client_->Write(WriteRequest(long_store, "k", "v", 1, holder, true)).ok());
  // A lease whose renewals and release the client-id edges use.
  const std::string renewed = "edge/renewed";

  auto acquire = [&](auto fill) {
    return [&, fill](size_t n) {
      pb::AcquireRequest request = AcquireRequest("edge-a", "edge/a", kTtlMs);
      fill(request, n);
      return Acquire(request);
    };
  };
  auto renew = [&](auto fill) {
    return [&, fill](size_t n) {
      pb::RenewRequest request = RenewRequest("edge-r", renewed, kTtlMs);
      fill(request, n);
      return Of(client_->Renew(request));
    };
  };
  auto release = [&](auto fill) {
    return [&, fill](size_t n) {
      pb::ReleaseRequest request = ReleaseRequest("edge-r", renewed);
      fill(request, n);
      return Of(client_->Release(request));
    };
  };
  auto write = [&](auto fill) {
    return [&, fill](size_t n) {
      pb::WriteRequest request = WriteRequest(store, "k", "v", 1, holder, true);
      fill(request, n);
      return Of(client_->Write(request));
    };
  };
  auto del = [&](auto fill) {
    return [&, fill](size_t n) {
      pb::DeleteRequest request = DeleteRequest(store, "gone", 1, holder);
      fill(request, n);
      return Of(client_->Delete(request));
    };
  };
  auto watch = [&](bool prefix) {
    return [&, prefix](size_t n) {
      pb::WatchRequest request;
      if (prefix) {
        request.set_prefix(Bytes(n, 'p'));
      } else {
        request.set_lock(Bytes(n, 'l'));
      }
      return Watch(request);
    };
  };
  using grpc::StatusCode;
  const std::vector<Edge> edges = {
      {"Acquire.client_id", "max-client-id-bytes", "", kId, StatusCode::OK,
       acquire([](auto& r, size_t n) { r.set_client_id(Bytes(n, 'c')); })},
      {"Acquire.lock", "max-lock-name-bytes", "", kName, StatusCode::OK,
       acquire([](auto& r, size_t n) { r.set_lock(Bytes(n, 'l')); })},
      {"Acquire.lock of a semaphore", "max-lock-name-bytes", "", kName,
       StatusCode::OK,
       [&](size_t n) { return Acquire(Semaphore("edge-s", Bytes(n, 's'))); }},
      {"Acquire.holder_label", "max-label-bytes", "", kLabel, StatusCode::OK,
       acquire([](auto& r, size_t n) {
         r.set_client_id("edge-label");
         r.set_lock("edge/label");
         r.set_holder_label(Bytes(n, 'b'));
       })},
      {"Acquire.request_id", "max-request-id-bytes", "", kRequestId,
       StatusCode::OK, acquire([](auto& r, size_t n) {
         r.set_client_id("edge-rid");
         r.set_lock("edge/rid");
         r.set_request_id(Bytes(n, 'q'));
       })},
      // An unknown session: answered by the session rules.
      {"Acquire.session_id", "max-client-id-bytes", "", kId,
       StatusCode::FAILED_PRECONDITION,
       acquire([](auto& r, size_t n) { r.set_session_id(Bytes(n, 's')); })},
      {"Renew.client_id", "max-client-id-bytes", "", kId, StatusCode::OK,
       renew([](auto& r, size_t n) { r.set_client_id(Bytes(n, 'r')); }),
       [&] { MustAcquire(Bytes(kId, 'r'), renewed); }},
      {"Renew.lock", "max-lock-name-bytes", "", kName, StatusCode::OK,
       renew([](auto& r, size_t n) { r.set_lock(Bytes(n, 'r')); }),
       [&] { MustAcquire("edge-r", Bytes(kName, 'r')); }},
      {"Renew.request_id", "max-request-id-bytes", "", kRequestId,
       StatusCode::OK,
       renew([](auto& r, size_t n) {
         r.set_lock(Bytes(kName, 'r'));
         r.set_request_id(Bytes(n, 'q'));
       })},
      {"Renew.session_id", "max-client-id-bytes", "", kId,
       StatusCode::FAILED_PRECONDITION,
       renew([](auto& r, size_t n) { r.set_session_id(Bytes(n, 's')); })},
      {"Release.request_id", "max-request-id-bytes", "", kRequestId,
       StatusCode::OK,
       release([](auto& r, size_t n) {
         r.set_lock(Bytes(kName, 'r'));
         r.set_request_id(Bytes(n, 'u'));
       })},
      {"Release.session_id", "max-client-id-bytes", "", kId,
       StatusCode::FAILED_PRECONDITION,
       release([](auto& r, size_t n) { r.set_session_id(Bytes(n, 's')); })},
      {"Release.lock", "max-lock-name-bytes", "", kName, StatusCode::OK,
       release([](auto& r, size_t n) { r.set_lock(Bytes(n, 'r')); }),
       [&] { MustAcquire("edge-r", Bytes(kName, 'r')); }},
      {"Release.client_id", "max-client-id-bytes", "", kId, StatusCode::OK,
       release([](auto& r, size_t n) { r.set_client_id(Bytes(n, 'r')); })},
      {"Write.lock", "max-lock-name-bytes", "", kName, StatusCode::OK,
       write([](auto& r, size_t n) { r.set_lock(Bytes(n, 'w')); })},
      {"Write.key", "max-key-bytes", "", kKey, StatusCode::OK,
       write([](auto& r, size_t n) { r.set_key(Bytes(n, 'k')); })},
      {"Write.value", "max-value-bytes", "", kValue, StatusCode::OK,
       write([](auto& r, size_t n) { r.set_value(Bytes(n, 'v')); })},
      {"Write.client_id", "max-client-id-bytes", "", kId, StatusCode::OK,
       write([](auto& r, size_t n) { r.set_client_id(Bytes(n, 'h')); })},
      {"Read.lock", "max-lock-name-bytes", "", kName, StatusCode::OK,
       [&](size_t n) { return Of(client_->Read(Bytes(n, 'w'), "k")); }},
      {"Read.key", "max-key-bytes", "", kKey, StatusCode::OK,
       [&](size_t n) { return Of(client_->Read(store, Bytes(n, 'k'))); }},
      {"Delete.lock", "max-lock-name-bytes", "", kName, StatusCode::OK,
       del([](auto& r, size_t n) { r.set_lock(Bytes(n, 'w')); })},
      {"Delete.key", "max-key-bytes", "", kKey, StatusCode::OK,
       del([](auto& r, size_t n) { r.set_key(Bytes(n, 'k')); })},
      {"Delete.client_id", "max-client-id-bytes", "", kId, StatusCode::OK,
       del([](auto& r, size_t n) { r.set_client_id(Bytes(n, 'h')); })},
      {"ListKeys.lock", "max-lock-name-bytes", "", kName, StatusCode::OK,
       [&](size_t n) {
         return Of(client_->ListKeys(ListKeysRequest(Bytes(n, 'w'))));
       }},
      {"ListKeys.after", "max-key-bytes", "", kKey, StatusCode::OK,
       [&](size_t n) {
         return Of(client_->ListKeys(ListKeysRequest(store, Bytes(n, 'k'))));
       }},
      {"Inspect.lock", "max-lock-name-bytes", "", kName, StatusCode::OK,
       [&](size_t n) { return Of(client_->Inspect(Bytes(n, 'w'))); }},
      {"Inspect.page_token", "", "page_token", kInspectToken, StatusCode::OK,
       [&](size_t n) {
         pb::InspectRequest request;
         request.set_lock(store);
         // "h", then a token of n - 1 digits (zeros first).
         const std::string digits = "18446744073709551615";
         request.set_page_token(absl::WebSafeBase64Escape(
             absl::StrCat("h", Bytes(n - 1 - digits.size(), '0'), digits)));
         return Of(client_->Inspect(request));
       }},
      {"Status.client_id", "max-client-id-bytes", "", kId, StatusCode::OK,
       [&](size_t n) { return Of(client_->Status(Bytes(n, 'h'))); }},
      {"Status.page_token", "", "page_token", kId, StatusCode::OK,
       [&](size_t n) {
         pb::StatusRequest request;
         request.set_client_id(holder);
         request.set_page_token(absl::WebSafeBase64Escape(Bytes(n, 'a')));
         return Of(client_->Status(request));
       }},
      {"ListLocks.prefix", "max-lock-name-bytes", "", kName, StatusCode::OK,
       [&](size_t n) {
         pb::ListLocksRequest request;
         request.set_prefix(Bytes(n, 'w'));
         return Of(client_->ListLocks(request));
       }},
      {"ListLocks.page_token", "", "page_token", kName, StatusCode::OK,
       [&](size_t n) {
         pb::ListLocksRequest request;
         request.set_page_token(absl::WebSafeBase64Escape(Bytes(n, 'a')));
         return Of(client_->ListLocks(request));
       }},
      {"ForceRelease.lock", "max-lock-name-bytes", "", kName, StatusCode::OK,
       [&](size_t n) { return ForceRelease(Bytes(n, 'f'), "", ""); },
       [&] { MustAcquire("edge-f", Bytes(kName, 'f')); }},
      {"ForceRelease.client_id", "max-client-id-bytes", "", kId, StatusCode::OK,
       [&](size_t n) { return ForceRelease("edge/f", Bytes(n, 'f'), ""); },
       [&] { MustAcquire(Bytes(kId, 'f'), "edge/f"); }},
      {"ForceRelease.reason", "max-label-bytes", "", kLabel, StatusCode::OK,
       [&](size_t n) { return ForceRelease("edge/g", "", Bytes(n, 'y')); },
       [&] { MustAcquire("edge-g", "edge/g"); }},
      {"Watch.lock", "max-lock-name-bytes", "", kName, StatusCode::OK,
       watch(false)},
      {"Watch.prefix", "max-lock-name-bytes", "", kName, StatusCode::OK,
       watch(true)},
      {"OpenSession.client_id", "max-client-id-bytes", "", kId, StatusCode::OK,
       [&](size_t n) { return Open(Bytes(n, 'o'), ""); }},
      // Nothing to resume: answered by the session rules.
      {"OpenSession.resume_session_id", "max-client-id-bytes", "", kId,
       StatusCode::FAILED_PRECONDITION,
       [&](size_t n) { return Open("edge-o", Bytes(n, 's')); }},
      {"SessionCall Acquire.lock", "max-lock-name-bytes", "", kName,
       StatusCode::OK,
       [&](size_t n) { return SessionCall(AcquireCall(Bytes(n, 'z'), kTtlMs)); }},
      {"SessionCall Acquire.holder_label", "max-label-bytes", "", kLabel,
       StatusCode::OK,
       [&](size_t n) {
         pb::SessionCall call = AcquireCall("edge/session-label", kTtlMs);
         call.mutable_acquire()->set_holder_label(Bytes(n, 'b'));
         return SessionCall(call);
       }},
  };

  for (const Edge& edge : edges) {
    SCOPED_TRACE(edge.input);
    if (edge.prepare) edge.prepare();
    const Answer at_max = edge.call(edge.max);
    EXPECT_EQ(at_max.code, edge.at_max) << at_max.message;
    EXPECT_NE(at_max.reason, "LIMIT_EXCEEDED") << at_max.message;

    const std::map<std::string, double> before = State();
    const Answer over = edge.call(edge.max + 1);
    if (!edge.flag.empty()) {
      EXPECT_EQ(over.code, StatusCode::RESOURCE_EXHAUSTED) << over.message;
      EXPECT_EQ(over.message, absl::StrCat("limit exceeded: ", edge.flag, "=",
                                           edge.max));
      EXPECT_EQ(over.reason, "LIMIT_EXCEEDED");
      EXPECT_EQ(over.detail.limit(), edge.flag);
      EXPECT_EQ(over.detail.limit_value(), static_cast<int64_t>(edge.max));
    } else {
      EXPECT_EQ(over.code, StatusCode::INVALID_ARGUMENT) << over.message;
      EXPECT_EQ(over.reason, "INVALID_ARGUMENTS");
      EXPECT_EQ(over.detail.field(), edge.field);
    }
    EXPECT_EQ(State(), before) << "the refused request changed something";
  }
  // The session's refused calls did not end its stream.
  ASSERT_NE(session_, nullptr);
  EXPECT_TRUE(session_->Keepalive(1).has_value());
  EXPECT_TRUE(session_->Close().ok());
}

// A stub whose channel keeps HTTP/2's initial 64 KiB stream window (no BDP
// probing to widen it), for a client that does not read: one that buffers
// what it is sent in its own memory does not test the daemon's.
std::unique_ptr<pb::LockService::Stub> NarrowWindowStub(
    const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return pb::LockService::NewStub(grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args));
}

// Each of `clients` clients takes `per_client` locks named PREFIX/C/I with
// unary Acquires, the clients in parallel.
void AcquireMany(const std::string& address, const std::string& prefix,
                 int clients, int per_client) {
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      TestClient client(address);
      const std::string id = absl::StrCat(prefix, "-", c);
      for (int i = 0; i < per_client; ++i) {
        Result<pb::AcquireResponse> granted =
            client.Acquire(id, absl::StrCat(prefix, "/", c, "/", i), kTtlMs);
        if (!granted.ok() || !granted.response.has_granted()) {
          ADD_FAILURE() << granted.status.error_message();
          return;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
}

// Another client's calls are answered within 1 s each.
void ExpectOthersServed(const std::string& address, const std::string& who) {
  TestClient other(address);
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const std::string lock = absl::StrCat("edge/other/", who, "/", i);
    Result<pb::AcquireResponse> granted = other.Acquire(who, lock, kTtlMs);
    EXPECT_TRUE(granted.ok()) << granted.status.error_message();
    EXPECT_TRUE(other.Inspect(lock).ok());
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1))
        << who << " waited";
  }
}

// 100,000 calls written on one Session stream by a client that does not
// read: the daemon stops reading the stream once its unsent answers reach
// SessionReactor::kMaxUnsent, so gRPC's flow control stops the writer, the
// daemon's memory stays bounded and other clients are served; once the
// client reads, every call is answered.
TEST_F(EdgesTest, SessionWriterThatNeverReadsIsHeldByFlowControlNotBuffered) {
  constexpr int kCalls = 100'000;
  // What the stalled stream may cost: at most 256 calls and 256 answers of
  // its own, gRPC's flow-control windows of the stream (a few MiB at
  // most), and allocator slack. Buffering every answer instead costs far
  // more: 100,000 answers of ~300 bytes each in the outbox.
  constexpr int64_t kMaxExtraRssKib = 16 * 1024;
  const pid_t pid = daemon_.process->pid();
  ExpectOthersServed(daemon_.address, "edge-warm");  // warms gRPC's buffers
  const int64_t rss_before = ProcStatusField(pid, "VmRSS");

  auto writer_stub = NarrowWindowStub(daemon_.address);
  SessionStream stream(*writer_stub, std::chrono::seconds(120));
  std::optional<pb::SessionResponse> opened = stream.Open("edge-writer");
  ASSERT_TRUE(opened.has_value() && opened->has_opened());
  // Renewals of a lock the client does not hold (answered NOT_HOLDER),
  // each with a 256-byte name, so that the stream's calls are far more
  // than its flow-control windows hold.
  const std::string lock = Bytes(256, 'n');
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int i = 1; i <= kCalls; ++i) {
      if (!stream.SendCall(i, RenewCall(lock, kTtlMs))) return;
      written.store(i);
    }
  });
  // However the test ends, the writer is stopped and joined.
  absl::Cleanup stop_writer = [&] {
    if (written.load() < kCalls) stream.Abandon();
    writer.join();
  };
  // The writer stalls: nothing moves for a second.
  int last = -1;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (written.load() != last && written.load() < kCalls &&
         std::chrono::steady_clock::now() < give_up) {
    last = written.load();
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  const int64_t rss_stalled = ProcStatusField(pid, "VmRSS");
  const int stalled_at = written.load();
  EXPECT_LT(stalled_at, kCalls)
      << "the daemon read every call although no answer was read";
  EXPECT_LT(rss_stalled - rss_before, kMaxExtraRssKib)
      << "VmRSS KiB " << rss_before << " -> " << rss_stalled;
  ExpectOthersServed(daemon_.address, "edge-during");

  // The client reads: every call is answered, once.
  std::vector<bool> answered(kCalls + 1, false);
  int answers = 0;
  while (answers < kCalls) {
    std::optional<pb::SessionCallResult> result = stream.NextResult();
    ASSERT_TRUE(result.has_value()) << "the stream ended after " << answers;
    ASSERT_GE(result->call_id(), 1u);
    ASSERT_LE(result->call_id(), static_cast<uint64_t>(kCalls));
    EXPECT_FALSE(answered[result->call_id()]) << result->call_id();
    answered[result->call_id()] = true;
    EXPECT_EQ(result->error().detail().reason(), pb::NOT_HOLDER);
    ++answers;
  }
  std::move(stop_writer).Invoke();
  EXPECT_TRUE(stream.Close().ok());
  std::cout << "[ figures ] " << stalled_at << " of " << kCalls
            << " calls written before the writer stalled; VmRSS "
            << rss_before << " -> " << rss_stalled << " KiB\n";
}

// Watches of every lock (the empty prefix) whose clients never read, on a
// daemon holding 10,000 locks: each holds its snapshot until it is cut
// (--watch-buffer-events changes later, WATCH_FELL_BEHIND) and then
// cancelled kWatchCutGrace later; meanwhile other clients are served.
TEST_F(EdgesTest, UnreadWatchesOfEveryLockHoldOnlyTheirSerializedSnapshotsUntilCut) {
  constexpr int kLockClients = 10;
  constexpr int kLocksPerClient = 1'000;
  constexpr int kWatchers = 20;
  AcquireMany(daemon_.address, "edge/w", kLockClients, kLocksPerClient);
  const pid_t pid = daemon_.process->pid();
  const int64_t rss_before = ProcStatusField(pid, "VmRSS");

  struct Watcher {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<pb::WatchResponse>> reader;
  };
  std::vector<std::unique_ptr<Watcher>> watchers;
  auto watcher_stub = NarrowWindowStub(daemon_.address);
  pb::WatchRequest every_lock;
  every_lock.set_prefix("");
  for (int i = 0; i < kWatchers; ++i) {
    auto watcher = std::make_unique<Watcher>();
    watcher->context.set_deadline(std::chrono::system_clock::now() +
                                  std::chrono::seconds(120));
    watcher->reader = watcher_stub->Watch(&watcher->context, every_lock);
    watchers.push_back(std::move(watcher));
  }
  auto gauge = [&](const std::string& name) {
    const std::map<std::string, double> state = State();
    auto it = state.find(name);
    return it == state.end() ? -1.0 : it->second;
  };
  ASSERT_TRUE(Eventually(
      [&] { return gauge("leasekeeper_watchers") == kWatchers; },
      std::chrono::seconds(30)));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // snapshots built
  const int64_t rss_watched = ProcStatusField(pid, "VmRSS");
  // A watch holds its unsent snapshot serialized: a `current` message of
  // one holder is about 70 bytes, its string and queue slot about 50 more;
  // 300 bytes a lock leaves the allocator its slack. (As message objects
  // it was about 490 bytes a lock.)
  constexpr int64_t kMaxBytesPerLock = 300;
  EXPECT_LT((rss_watched - rss_before) * 1024,
            kWatchers * kLockClients * kLocksPerClient * kMaxBytesPerLock)
      << "VmRSS KiB " << rss_before << " -> " << rss_watched;
  ExpectOthersServed(daemon_.address, "edge-watched");

  // 1,100 changes of a watched lock: every watcher's buffer fills.
  TestClient changer(daemon_.address);
  for (int i = 0; i < 550; ++i) {
    ASSERT_TRUE(changer.Acquire("edge-changer", "edge/w/changed", kTtlMs).ok());
    ASSERT_TRUE(changer.Release("edge-changer", "edge/w/changed").ok());
  }
  ASSERT_TRUE(Eventually([&] { return gauge("leasekeeper_watchers") == 0; },
                         std::chrono::seconds(10)));
  // Cut, and (their writes hanging) cancelled kWatchCutGrace later.
  std::this_thread::sleep_for(std::chrono::seconds(7));
  const int64_t rss_after = ProcStatusField(pid, "VmRSS");
  ExpectOthersServed(daemon_.address, "edge-cut");
  for (const std::unique_ptr<Watcher>& watcher : watchers) {
    pb::WatchResponse message;
    while (watcher->reader->Read(&message)) {
    }
    const grpc::Status status = watcher->reader->Finish();
    EXPECT_TRUE(status.error_code() == grpc::StatusCode::CANCELLED ||
                status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED)
        << status.error_code() << " " << status.error_message();
  }
  std::cout << "[ figures ] " << kWatchers << " unread watches of "
            << kLockClients * kLocksPerClient << " locks: VmRSS "
            << rss_before << " -> " << rss_watched << " -> " << rss_after
            << " KiB after they were cancelled\n";
}

}  // namespace
}  // namespace leasekeeper::testing
