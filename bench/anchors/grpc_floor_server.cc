// grpc-floor-server: the floor of a gRPC Session round trip on this machine.
// NOT a lock server: it keeps no lock table, no sessions and no storage, and
// grants every acquire.
//
// It serves leasekeeper's LockService with only the Session stream
// implemented (every other RPC is UNIMPLEMENTED), and answers just what
// leasekeeper-bench's leasekeeper client needs for W1: `open` with an
// `opened`, each `call` at once with a successful call_result of the same
// call_id (acquire: granted, a token from a per-server counter, the
// requested ttl_ms as the lease; release: released), and `close` by
// finishing the stream with OK. A renew call gets an UNIMPLEMENTED error
// result; any other message ends the stream with UNIMPLEMENTED. Nothing is
// checked: a call before `open` is answered all the same.
// bench/run-anchors runs W1 against it (configuration grpc-floor), so
// that leasekeeperd's W1 figure can be set against what gRPC alone costs:
// the server and the load generator do all of their gRPC work and nothing
// else.
//
// What it keeps of leasekeeperd, so that the lock service's work is the
// only difference:
//  - the server's channel arguments (server/transport_options.h, and the
//    largest message at its default) and absl::Mutex's deadlock detection
//    switched off as in server/main.cc (gRPC's locks are absl::Mutex too);
//  - the callback API and the read-then-write pattern of server/
//    lock_service.cc's SessionReactor: one read outstanding, the next read
//    started before a call's answer is sent, answers written one at a time
//    through an outbox, Finish once the outbox has drained.
// It does not register the health and reflection services leasekeeperd
// has; W1 never calls them.
//
//   grpc-floor-server --listen=127.0.0.1:47201
// Prints "grpc-floor-server listening on HOST:PORT" once it serves; runs
// until SIGTERM or SIGINT kills it (it has nothing to drain). Loopback
// addresses only.

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"
#include "server/transport_options.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0",
          "host:port to serve, loopback only (port 0 picks a free port)");

namespace leasekeeper::bench {
namespace {

namespace pb = ::leasekeeper::v1;

// leasekeeperd's largest message at its default (server/server.cc):
// max(4 MiB, --max-value-bytes 1 MiB + 64 KiB).
constexpr int kMaxReceiveMessageBytes = 4 << 20;

// All the state there is, shared by every stream: no lock is held and no
// session exists, so there is nothing to release or expire.
struct FloorState {
  std::atomic<uint64_t> next_token{1};
  std::atomic<uint64_t> next_session{1};
};

// True if `listen` is host:port with host a loopback address (127.0.0.0/8,
// [::1] or localhost): this server grants anything to anyone.
bool IsLoopback(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = listen.substr(0, colon);
  if (host == "localhost") return true;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    in6_addr v6;
    return inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(),
                     &v6) == 1 &&
           IN6_IS_ADDR_LOOPBACK(&v6);
  }
  in_addr v4;
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 &&
         (ntohl(v4.s_addr) >> 24) == 127;
}

// One Session stream; deletes itself in OnDone. OnReadDone and OnWriteDone
// may run at once on gRPC's threads: mu_ guards the write side; the read
// side is one chain (request_ belongs to the outstanding read).
// Invariant: outbox_'s front is being written whenever outbox_ is not empty
// (a deque keeps it in place while answers are queued behind it).
class FloorSession final
    : public grpc::ServerBidiReactor<pb::SessionRequest, pb::SessionResponse> {
 public:
  explicit FloorSession(FloorState& state) : state_(state) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client half-closed or the stream broke
      FinishOnce(grpc::Status::OK);
      return;
    }
    switch (request_.kind_case()) {
      case pb::SessionRequest::kOpen:
        return AnswerOpen();
      case pb::SessionRequest::kCall:
        return AnswerCall();
      case pb::SessionRequest::kClose:
        return FinishOnce(grpc::Status::OK);
      default:
        return FinishOnce(grpc::Status(
            grpc::StatusCode::UNIMPLEMENTED,
            "grpc-floor-server answers only open, acquire, release and close"));
    }
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    outbox_.pop_front();
    if (!ok) outbox_.clear();  // broken stream: OnReadDone(false) follows
    if (!outbox_.empty()) {
      StartWrite(&outbox_.front());
      return;
    }
    if (pending_finish_.has_value()) {
      Finish(*pending_finish_);
      pending_finish_.reset();
    }
  }

  void OnDone() override { delete this; }

 private:
  void AnswerOpen() {
    pb::SessionResponse message;
    message.mutable_opened()->set_session_id(
        absl::StrCat("floor-", state_.next_session.fetch_add(1)));
    StartRead(&request_);
    Send(std::move(message));
  }

  // As SessionReactor::HandleCall: what the answer needs is taken from
  // request_ and the next read is started before the answer is sent.
  void AnswerCall() {
    const pb::SessionCall& call = request_.call();
    pb::SessionResponse message;
    pb::SessionCallResult* result = message.mutable_call_result();
    result->set_call_id(call.call_id());
    switch (call.request_case()) {
      case pb::SessionCall::kAcquire: {
        pb::Granted* granted = result->mutable_acquire()->mutable_granted();
        granted->set_token(state_.next_token.fetch_add(1));
        granted->set_ttl_ms(call.acquire().ttl_ms());
        break;
      }
      case pb::SessionCall::kRelease:
        result->mutable_release()->set_result(pb::RELEASE_RESULT_RELEASED);
        break;
      default:
        result->mutable_error()->set_code(grpc::StatusCode::UNIMPLEMENTED);
        result->mutable_error()->set_message(
            "grpc-floor-server answers only acquire and release");
        break;
    }
    StartRead(&request_);
    Send(std::move(message));
  }

  void Send(pb::SessionResponse message) {
    absl::MutexLock lock(&mu_);
    if (finish_called_) return;
    outbox_.push_back(std::move(message));
    if (outbox_.size() == 1) StartWrite(&outbox_.front());
  }

  // No read is started after this: OnDone follows once Finish completes.
  void FinishOnce(grpc::Status status) {
    absl::MutexLock lock(&mu_);
    if (finish_called_) return;
    finish_called_ = true;
    if (outbox_.empty()) {
      Finish(status);
    } else {
      pending_finish_ = std::move(status);
    }
  }

  FloorState& state_;
  pb::SessionRequest request_;  // owned by the read chain

  absl::Mutex mu_;
  std::deque<pb::SessionResponse> outbox_ ABSL_GUARDED_BY(mu_);
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> pending_finish_ ABSL_GUARDED_BY(mu_);
};

class FloorService final : public pb::LockService::CallbackService {
 public:
  grpc::ServerBidiReactor<pb::SessionRequest, pb::SessionResponse>* Session(
      grpc::CallbackServerContext*) override {
    return new FloorSession(state_);
  }

 private:
  FloorState state_;
};

int Main() {
  const std::string listen = absl::GetFlag(FLAGS_listen);
  if (!IsLoopback(listen)) {
    std::fprintf(stderr,
                 "grpc-floor-server: --listen=%s is not a loopback address "
                 "(it grants every lock to anyone)\n",
                 listen.c_str());
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);  // as leasekeeperd

  FloorService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  server::AddTransportOptions(builder);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "grpc-floor-server: cannot listen on %s\n",
                 listen.c_str());
    return 1;
  }
  std::printf("grpc-floor-server listening on %s:%d\n",
              listen.substr(0, listen.rfind(':')).c_str(), port);
  std::fflush(stdout);
  // Until SIGTERM or SIGINT ends the process: nothing here needs draining.
  server->Wait();
  return 0;
}

}  // namespace
}  // namespace leasekeeper::bench

int main(int argc, char** argv) {
  // As leasekeeperd (server/main.cc): Debian's Abseil checks every
  // absl::Mutex, gRPC's included, for deadlock cycles unless told not to.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::SetProgramUsageMessage(
      "the floor of a gRPC Session round trip (not a lock server):\n"
      "  grpc-floor-server --listen=127.0.0.1:PORT");
  absl::ParseCommandLine(argc, argv);
  return leasekeeper::bench::Main();
}
