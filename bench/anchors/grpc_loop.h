// GrpcLoop: a gRPC CompletionQueue and the one thread that drains it. The
// leasekeeper and etcd clients start their asynchronous calls on it; each
// call's tag is a callback that runs on the loop thread when the call
// completes.
//
// Thread-safety: cq(), NewTag() and After() may be used from any thread.
// Invariant: the destructor shuts the queue down and joins the thread, so
// every call and timer started on the loop must have completed by then.

#ifndef LEASEKEEPER_BENCH_ANCHORS_GRPC_LOOP_H_
#define LEASEKEEPER_BENCH_ANCHORS_GRPC_LOOP_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"
#include "loop.h"

namespace leasekeeper::bench {

class GrpcLoop final : public Loop {
 public:
  GrpcLoop();
  // REQUIRES: no call or timer of this loop is outstanding.
  ~GrpcLoop() override;
  GrpcLoop(const GrpcLoop&) = delete;
  GrpcLoop& operator=(const GrpcLoop&) = delete;

  grpc::CompletionQueue* cq() { return &cq_; }

  // A tag for an operation on cq(): when the operation completes, fn(ok)
  // runs on the loop thread, once, and the tag is freed.
  void* NewTag(absl::AnyInvocable<void(bool ok)> fn);

  void After(absl::Duration delay, absl::AnyInvocable<void()> fn) override;

 private:
  void Run();

  grpc::CompletionQueue cq_;
  std::thread thread_;
};

// Starts one unary call on `loop`: prepare(context, request, cq) is the
// stub's PrepareAsyncX. done(status, response) runs on the loop thread.
template <typename Response, typename Request, typename Prepare>
void StartUnary(GrpcLoop& loop, Prepare prepare, const Request& request,
                absl::Duration timeout,
                absl::AnyInvocable<void(const grpc::Status&, Response&)> done) {
  struct Call {
    grpc::ClientContext context;
    Response response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> reader;
  };
  auto call = std::make_unique<Call>();
  call->context.set_deadline(std::chrono::system_clock::now() +
                             absl::ToChronoMicroseconds(timeout));
  call->reader = prepare(&call->context, request, loop.cq());
  call->reader->StartCall();
  Call* raw = call.get();
  raw->reader->Finish(
      &raw->response, &raw->status,
      loop.NewTag([call = std::move(call), done = std::move(done)](
                      bool) mutable { done(call->status, call->response); }));
}

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_GRPC_LOOP_H_
