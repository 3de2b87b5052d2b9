// A session stream for tests (blocking client API): open or resume, send
// keepalives and calls, read their answers (notices are kept aside), close
// or abandon the stream. Plus builders of session calls whose client_id and
// session_id are left empty (the stream fills them in).
//
// Thread-safety: one test thread per stream.
#ifndef LEASEKEEPER_TESTS_SERVER_SESSION_STREAM_H_
#define LEASEKEEPER_TESTS_SERVER_SESSION_STREAM_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"

namespace leasekeeper::testing {

namespace pb = ::leasekeeper::v1;

class SessionStream {
 public:
  explicit SessionStream(pb::LockService::Stub& stub,
                         std::chrono::seconds deadline = std::chrono::seconds(20)) {
    context_.set_deadline(std::chrono::system_clock::now() + deadline);
    stream_ = stub.Session(&context_);
  }

  // Sends open and returns the first answer (nullopt if the stream ended).
  std::optional<pb::SessionResponse> Open(const std::string& client,
                                          const std::string& resume = "") {
    pb::SessionRequest request;
    request.mutable_open()->set_client_id(client);
    request.mutable_open()->set_resume_session_id(resume);
    if (!stream_->Write(request)) return std::nullopt;
    return Next();
  }

  // Sends a keepalive and returns its ack, skipping notices (kept).
  std::optional<pb::KeepaliveAck> Keepalive(uint64_t sequence) {
    pb::SessionRequest request;
    request.mutable_keepalive()->set_sequence(sequence);
    if (!stream_->Write(request)) return std::nullopt;
    while (std::optional<pb::SessionResponse> message = Next()) {
      if (message->has_keepalive_ack()) return message->keepalive_ack();
      notices_.push_back(message->notice());
    }
    return std::nullopt;
  }

  // Sends `call` with `call_id`; false if the stream is broken.
  bool SendCall(uint64_t call_id, pb::SessionCall call) {
    call.set_call_id(call_id);
    pb::SessionRequest request;
    *request.mutable_call() = std::move(call);
    return stream_->Write(request);
  }

  // The next call result, skipping notices (kept); nullopt at the end.
  std::optional<pb::SessionCallResult> NextResult() {
    while (std::optional<pb::SessionResponse> message = Next()) {
      if (message->has_call_result()) return message->call_result();
      notices_.push_back(message->notice());
    }
    return std::nullopt;
  }

  // Sends `call` and returns its result (nothing else may be in flight).
  std::optional<pb::SessionCallResult> Call(uint64_t call_id,
                                            pb::SessionCall call) {
    if (!SendCall(call_id, std::move(call))) return std::nullopt;
    std::optional<pb::SessionCallResult> result = NextResult();
    if (result.has_value()) {
      EXPECT_EQ(result->call_id(), call_id);
    }
    return result;
  }

  // Sends close and returns the stream's final status.
  grpc::Status Close() {
    pb::SessionRequest request;
    request.mutable_close();
    stream_->Write(request);
    stream_->WritesDone();
    return Finish();
  }

  std::optional<pb::SessionResponse> Next() {
    pb::SessionResponse message;
    if (!stream_->Read(&message)) return std::nullopt;
    return message;
  }

  grpc::Status Finish() {
    while (Next().has_value()) {
    }
    return stream_->Finish();
  }

  // Drops the stream as a crashed process would.
  void Abandon() { context_.TryCancel(); }

  std::vector<pb::LockNotice>& notices() { return notices_; }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<pb::SessionRequest, pb::SessionResponse>>
      stream_;
  std::vector<pb::LockNotice> notices_;
};

// Calls for the session's client, with client_id and session_id left empty
// (the stream fills them in).
inline pb::SessionCall AcquireCall(const std::string& lock, int64_t ttl_ms,
                                   int64_t wait_timeout_ms = 0) {
  pb::SessionCall call;
  pb::AcquireRequest* request = call.mutable_acquire();
  request->set_lock(lock);
  request->set_ttl_ms(ttl_ms);
  request->set_wait_timeout_ms(wait_timeout_ms);
  return call;
}
inline pb::SessionCall RenewCall(const std::string& lock, int64_t ttl_ms) {
  pb::SessionCall call;
  call.mutable_renew()->set_lock(lock);
  call.mutable_renew()->set_ttl_ms(ttl_ms);
  return call;
}
inline pb::SessionCall ReleaseCall(const std::string& lock) {
  pb::SessionCall call;
  call.mutable_release()->set_lock(lock);
  return call;
}

}  // namespace leasekeeper::testing

#endif  // LEASEKEEPER_TESTS_SERVER_SESSION_STREAM_H_
