// Records the answers CoreOwner hands to its completions and to Acquire
// calls, for tests that drive CoreOwner directly (no gRPC): how often a
// completion ran (a completion runs exactly once) and with what.
//
// Thread-safety: none; a test reads it after the thread that answers (its
// own, or the one it made durable on) is done.
#ifndef LEASEKEEPER_TESTS_SERVER_COMPLETION_RECORDER_H_
#define LEASEKEEPER_TESTS_SERVER_COMPLETION_RECORDER_H_

#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "server/core_owner.h"

namespace leasekeeper::testing {

template <typename T>
class CompletionRecorder {
 public:
  // A completion that records into this object (which must outlive it).
  server::CoreOwner::Completion<T> Callback() {
    return [this](T answer) {
      answer_ = std::move(answer);
      ++calls_;
    };
  }
  bool answered() const { return calls_ > 0; }
  int calls() const { return calls_; }
  // REQUIRES: answered().
  const T& answer() const { return *answer_; }

 private:
  std::optional<T> answer_;
  int calls_ = 0;
};

// An Acquire call that records its answer, and how often it got one.
class RecordingCall final : public server::PendingAcquire {
 public:
  void Complete(server::AcquireCallAnswer reply) override {
    reply_ = std::move(reply);
    ++completions_;
  }
  const std::optional<server::AcquireCallAnswer>& reply() const {
    return reply_;
  }
  int completions() const { return completions_; }

 private:
  std::optional<server::AcquireCallAnswer> reply_;
  int completions_ = 0;
};

// Runs `call` with a completion and returns the answer it got before
// returning (no log, or nothing to wait for); a test failure and an
// UNKNOWN error if it did not get one.
template <typename T, typename Call>
T AnswerNow(Call&& call) {
  CompletionRecorder<T> recorder;
  call(recorder.Callback());
  EXPECT_EQ(recorder.calls(), 1);
  if (!recorder.answered()) return T(absl::UnknownError("not answered"));
  return recorder.answer();
}

}  // namespace leasekeeper::testing

#endif  // LEASEKEEPER_TESTS_SERVER_COMPLETION_RECORDER_H_
