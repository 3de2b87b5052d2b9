// BidiStream: one client-side bidirectional gRPC stream driven on a
// GrpcLoop. Messages to send are queued and written one at a time (gRPC
// allows one outstanding write); reads run in a chain, each message handed
// to on_message; when the stream ends (the server finished it, it broke, or
// Cancel), on_finished runs once with its status. Used by the leasekeeper
// client (Session) and the etcd client (Watch).
//
// Thread-safety: like the lock clients: every method on the loop's thread;
// the callbacks run there.
// REQUIRES: the BidiStream outlives its stream (the owner waits for
// on_finished before destroying it).

#ifndef LEASEKEEPER_BENCH_ANCHORS_BIDI_STREAM_H_
#define LEASEKEEPER_BENCH_ANCHORS_BIDI_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "grpc_loop.h"

namespace leasekeeper::bench {

template <typename Request, typename Response>
class BidiStream {
 public:
  BidiStream(GrpcLoop& loop, absl::AnyInvocable<void(Response&)> on_message,
             absl::AnyInvocable<void(const grpc::Status&)> on_finished)
      : loop_(loop),
        on_message_(std::move(on_message)),
        on_finished_(std::move(on_finished)) {}

  // Opens the stream: prepare(context, cq) is the stub's PrepareAsyncX.
  // REQUIRES: called once.
  template <typename Prepare>
  void Start(Prepare prepare) {
    stream_ = prepare(&context_, loop_.cq());
    stream_->StartCall(loop_.NewTag([this](bool ok) {
      connected_ = ok;
      if (!ok) {
        FinishNow();
        return;
      }
      WriteNext();
      ReadNext();
    }));
  }

  // Queues `request`; dropped once the stream has finished.
  void Send(Request request) {
    to_write_.push_back(std::move(request));
    WriteNext();
  }

  void Cancel() { context_.TryCancel(); }

  bool started() const { return stream_ != nullptr; }
  bool finished() const { return finished_; }

 private:
  void WriteNext() {
    if (!connected_ || writing_ || to_write_.empty() || finish_seen_) return;
    writing_ = true;
    stream_->Write(to_write_.front(), loop_.NewTag([this](bool ok) {
      writing_ = false;
      to_write_.pop_front();
      if (ok) WriteNext();
      ReportFinishedIfDone();
    }));
  }

  void ReadNext() {
    stream_->Read(&read_, loop_.NewTag([this](bool ok) {
      if (!ok) {
        FinishNow();
        return;
      }
      on_message_(read_);
      ReadNext();
    }));
  }

  void FinishNow() {
    stream_->Finish(&status_, loop_.NewTag([this](bool) {
      finish_seen_ = true;
      ReportFinishedIfDone();
    }));
  }

  // on_finished runs only once no tag of this stream is outstanding, so
  // the owner may destroy the stream from it.
  void ReportFinishedIfDone() {
    if (!finish_seen_ || writing_ || finished_) return;
    finished_ = true;
    to_write_.clear();
    on_finished_(status_);
  }

  GrpcLoop& loop_;
  absl::AnyInvocable<void(Response&)> on_message_;
  absl::AnyInvocable<void(const grpc::Status&)> on_finished_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<Request, Response>> stream_;
  bool connected_ = false;
  bool writing_ = false;
  bool finish_seen_ = false;  // Finish's tag has completed
  bool finished_ = false;     // ... and no write is outstanding
  std::deque<Request> to_write_;
  Response read_;
  grpc::Status status_;
};

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_BIDI_STREAM_H_
