// Bad input at the gRPC edge: bytes that do not parse as a request (unary
// or Session message) are INVALID_ARGUMENT with a message and change
// nothing, a bad Session message does not cost the session its locks, and a
// Session stream that never sends `open` counts against --max-sessions and
// is ended after --session-open-timeout. In-process server, fake clock.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;

constexpr char kSessionMethod[] = "/leasekeeper.v1.LockService/Session";
// Field 1, length-delimited, 5 bytes announced and 2 sent: no message of
// the API parses from it.
const std::string kGarbage(
    "\x0a\x05"
    "ab",
    4);

void* Tag(intptr_t n) { return reinterpret_cast<void*>(n); }

grpc::ByteBuffer BufferOf(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string BytesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

// A unary call with `bytes` as its request, through gRPC's generic stub.
grpc::Status RawUnary(const std::shared_ptr<grpc::Channel>& channel,
                      const std::string& method, const std::string& bytes,
                      grpc::ClientContext& context) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  auto call = stub.PrepareUnaryCall(&context, method, BufferOf(bytes), &cq);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, Tag(1));
  void* got = nullptr;
  bool ok = false;
  EXPECT_TRUE(cq.Next(&got, &ok));
  cq.Shutdown();
  while (cq.Next(&got, &ok)) {
  }
  return status;
}

// A Session stream of raw bytes (gRPC's generic stub, a completion queue).
class RawSession {
 public:
  explicit RawSession(const std::shared_ptr<grpc::Channel>& channel)
      : stub_(channel) {
    context_.set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(20));
    call_ = stub_.PrepareCall(&context_, kSessionMethod, &cq_);
    call_->StartCall(Tag(1));
    Await(1);
  }
  ~RawSession() {
    if (!finished_) {
      context_.TryCancel();
      Finish();
    }
    cq_.Shutdown();
    void* got = nullptr;
    bool ok = false;
    while (cq_.Next(&got, &ok)) {
    }
  }

  bool WriteBytes(const std::string& bytes) {
    call_->Write(BufferOf(bytes), Tag(2));
    return Await(2);
  }
  bool Write(const pb::SessionRequest& request) {
    return WriteBytes(request.SerializeAsString());
  }
  // The next message; nullopt once the stream has ended.
  std::optional<pb::SessionResponse> Read() {
    grpc::ByteBuffer buffer;
    call_->Read(&buffer, Tag(3));
    if (!Await(3)) return std::nullopt;
    pb::SessionResponse response;
    EXPECT_TRUE(response.ParseFromString(BytesOf(buffer)));
    return response;
  }
  grpc::Status Finish() {
    grpc::Status status;
    call_->Finish(&status, Tag(4));
    Await(4);
    finished_ = true;
    return status;
  }
  const grpc::ClientContext& context() const { return context_; }

 private:
  bool Await(intptr_t tag) {
    void* got = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq_.Next(&got, &ok));
    EXPECT_EQ(got, Tag(tag));
    return ok;
  }

  grpc::GenericStub stub_;
  grpc::CompletionQueue cq_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  bool finished_ = false;
};

std::string Trailer(const grpc::ClientContext& context,
                    const std::string& key) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(key);
  return it == trailers.end()
             ? std::string()
             : std::string(it->second.data(), it->second.size());
}

pb::SessionRequest OpenRequest(const std::string& client,
                               const std::string& resume = "") {
  pb::SessionRequest request;
  request.mutable_open()->set_client_id(client);
  request.mutable_open()->set_resume_session_id(resume);
  return request;
}

pb::SessionRequest AcquireCall(uint64_t call_id, const std::string& client,
                               const std::string& lock, int64_t ttl_ms) {
  pb::SessionRequest request;
  request.mutable_call()->set_call_id(call_id);
  *request.mutable_call()->mutable_acquire() =
      AcquireRequest(client, lock, ttl_ms);
  return request;
}

class BadInputTest : public ServerTest {};

TEST_F(BadInputTest, UnparseableUnaryRequestIsInvalidArgumentWithAMessage) {
  for (const char* method :
       {"Acquire", "Renew", "Release", "Write", "Read", "Inspect", "Status",
        "ListLocks", "ForceRelease"}) {
    const std::string path =
        absl::StrCat("/leasekeeper.v1.LockService/", method);
    grpc::ClientContext context;
    const grpc::Status status =
        RawUnary(client_->channel(), path, kGarbage, context);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << path << ": " << status.error_message();
    EXPECT_EQ(status.error_message(),
              absl::StrCat("invalid arguments: the request of ", path,
                           " cannot be parsed"));
    EXPECT_EQ(Trailer(context, "leasekeeper-reason"), "INVALID_ARGUMENTS")
        << path;
  }
  // A well-formed request on the same path still works, and nothing above
  // changed any state.
  grpc::ClientContext context;
  EXPECT_TRUE(
      RawUnary(client_->channel(), "/leasekeeper.v1.LockService/Acquire",
               AcquireRequest("a", "L", 1'000).SerializeAsString(), context)
          .ok());
  Result<pb::InspectResponse> view = client_->Inspect("L");
  ASSERT_EQ(view.response.holders_size(), 1);
  EXPECT_EQ(view.response.holders(0).token(), 1u);
}

TEST_F(BadInputTest, UnparseableSessionMessageEndsTheStreamKeepingTheSession) {
  std::string session_id;
  {
    RawSession stream(client_->channel());
    ASSERT_TRUE(stream.Write(OpenRequest("c")));
    std::optional<pb::SessionResponse> opened = stream.Read();
    ASSERT_TRUE(opened.has_value() && opened->has_opened());
    session_id = opened->opened().session_id();
    ASSERT_TRUE(stream.Write(AcquireCall(1, "c", "L", 600'000)));
    std::optional<pb::SessionResponse> granted = stream.Read();
    ASSERT_TRUE(granted.has_value() && granted->has_call_result());
    ASSERT_TRUE(granted->call_result().acquire().has_granted());

    ASSERT_TRUE(stream.WriteBytes(kGarbage));
    EXPECT_FALSE(stream.Read().has_value());
    const grpc::Status status = stream.Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(status.error_message(),
              "invalid arguments: Session message cannot be parsed");
    EXPECT_EQ(Trailer(stream.context(), "leasekeeper-reason"),
              "INVALID_ARGUMENTS");
  }
  // The session is in its grace (2 s), its lock kept; the client resumes it.
  At(1'500);
  EXPECT_EQ(client_->Status("c").response.session(), pb::SESSION_STATE_GRACE);
  RawSession resumed(client_->channel());
  ASSERT_TRUE(resumed.Write(OpenRequest("c", session_id)));
  std::optional<pb::SessionResponse> opened = resumed.Read();
  ASSERT_TRUE(opened.has_value() && opened->has_opened());
  EXPECT_TRUE(opened->opened().resumed());
  EXPECT_EQ(opened->opened().session_id(), session_id);
  At(10'000);  // long past the old grace
  Result<pb::InspectResponse> view = client_->Inspect("L");
  ASSERT_EQ(view.response.holders_size(), 1);
  EXPECT_EQ(view.response.holders(0).client_id(), "c");
}

class UnopenedSessionTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    server::ServerConfig config = DefaultConfig();
    config.limits.max_sessions = 2;
    config.limits.session_open_timeout_ms = 300;
    Restart(config);
  }
};

TEST_F(UnopenedSessionTest, StreamWithoutOpenCountsAgainstMaxSessions) {
  // Three streams that never send open: the server admits two (and ends
  // them after the open timeout) and refuses one at once.
  int refused = 0;
  {
    std::vector<std::unique_ptr<RawSession>> streams;
    for (int i = 0; i < 3; ++i) {
      streams.push_back(std::make_unique<RawSession>(client_->channel()));
    }
    for (auto& stream : streams) {
      EXPECT_FALSE(stream->Read().has_value());
      const grpc::Status status = stream->Finish();
      if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        ++refused;
        EXPECT_EQ(status.error_message(), "limit exceeded: max-sessions=2");
      } else {
        EXPECT_EQ(status.error_message(),
                  "no open within --session-open-timeout=300ms");
      }
    }
  }
  EXPECT_EQ(refused, 1);
  // Once they are gone they no longer count: a session opens.
  EXPECT_TRUE(Eventually([&] {
    RawSession stream(client_->channel());
    if (!stream.Write(OpenRequest("c"))) return false;
    std::optional<pb::SessionResponse> opened = stream.Read();
    return opened.has_value() && opened->has_opened();
  }));
}

TEST_F(UnopenedSessionTest, StreamWithoutOpenIsEndedAfterTheOpenTimeout) {
  const auto started = std::chrono::steady_clock::now();
  RawSession idle(client_->channel());
  EXPECT_FALSE(idle.Read().has_value());
  const grpc::Status status = idle.Finish();
  EXPECT_GE(std::chrono::steady_clock::now() - started, milliseconds(300));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(status.error_message(),
            "no open within --session-open-timeout=300ms");
}

TEST_F(UnopenedSessionTest, OpenedStreamOutlivesTheOpenTimeout) {
  RawSession stream(client_->channel());
  ASSERT_TRUE(stream.Write(OpenRequest("c")));
  std::optional<pb::SessionResponse> opened = stream.Read();
  ASSERT_TRUE(opened.has_value() && opened->has_opened());
  // Twice the open timeout on the real clock (the timeout's own clock).
  std::this_thread::sleep_for(milliseconds(600));
  pb::SessionRequest keepalive;
  keepalive.mutable_keepalive()->set_sequence(7);
  ASSERT_TRUE(stream.Write(keepalive));
  std::optional<pb::SessionResponse> ack = stream.Read();
  ASSERT_TRUE(ack.has_value() && ack->has_keepalive_ack());
  EXPECT_EQ(ack->keepalive_ack().sequence(), 7u);
}

}  // namespace
}  // namespace leasekeeper::testing
