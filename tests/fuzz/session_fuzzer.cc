// libFuzzer target over the Session stream's message handling: bytes become
// client messages on three stream slots (open, keepalive, close, Acquire /
// Renew / Release calls, now and then raw bytes parsed as a SessionRequest),
// streams the client drops, and clock steps with the timer's
// RunDueTimers, all applied to a real CoreOwner (no log) on a FakeClock.
// Each stream does with a message what SessionReactor does
// (server/session_reactor.cc), without gRPC: `open` first and once; calls
// bound to the session (empty ids filled in, other ids refused) and parsed
// with the server's Parse* functions; a parked Acquire withdrawn when its
// stream is done; the stream's end reported once.
//
// Checked after every step (a violation aborts, printing the steps so far):
//  - CoreOwner::CheckConsistency (the core's invariants, the parked calls,
//    sessions, holder labels, the watch hub);
//  - no lock has two exclusive holders or an exclusive holder beside
//    another, and a semaphore has at most its capacity;
//  - fencing tokens only rise per lock: a token seen for the first time
//    (in an answer, a notice, or Inspect) is above every token seen for
//    that lock before, and a token seen again is the same client's;
//  - every answer comes exactly once: a call that cannot wait before
//    CoreOwner returns (there is no log to wait for), a parked Acquire by
//    the end of the input, after BeginShutdown.
//
// LEASEKEEPER_FUZZ_TRACE=1 prints the steps an input makes.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/types.h"
#include "leasekeeper/v1/lock_service.pb.h"
#include "server/clock.h"
#include "server/convert.h"
#include "server/core_owner.h"
#include "server/server_config.h"

namespace leasekeeper::server {
namespace {

namespace pb = ::leasekeeper::v1;

constexpr int kStreams = 3;
constexpr int kMaxSteps = 400;
const char* const kClients[] = {"c0", "c1", "c2", "c3"};
const char* const kLocks[] = {"L0", "L1", "S"};  // S: mostly a semaphore

// Small limits and short times, so that limits, graces, retry-cache expiry
// and idle-client forgetting all happen within a few hundred steps.
ServerConfig FuzzConfig() {
  ServerConfig config;
  config.session_grace_ms = 40;
  config.limits.max_waiters_per_lock = 3;
  config.limits.max_locks_per_client = 2;
  config.retry_cache.ttl_ms = 200;
  config.retry_cache.max_entries = 8;
  config.forget_idle_clients_after_ms = 300;
  return config;
}

class Harness;

// One Session stream as SessionReactor holds it.
class Stream final : public SessionSink,
                     public std::enable_shared_from_this<Stream> {
 public:
  explicit Stream(Harness& harness) : harness_(harness) {}
  void Notify(const SessionNotice& notice) override;
  // The server ends the stream (as the reactor's FinishOnce); its OnDone
  // comes later, outside CoreOwner's call (Harness::FinishDone).
  void End(const absl::Status& status) override;

  Harness& harness_;
  std::optional<std::string> session_id;
  std::string client;
  bool finished = false;
  bool end_reported = false;
};

// An Acquire parked by CoreOwner, as the reactor's ParkedAcquire.
class Parked final : public PendingAcquire {
 public:
  Parked(Harness& harness, std::shared_ptr<Stream> stream, AcquireArgs args)
      : harness_(harness), stream_(std::move(stream)), args_(std::move(args)) {}
  void Complete(AcquireCallAnswer reply) override;
  const AcquireArgs& args() const { return args_; }
  const std::shared_ptr<Stream>& stream() const { return stream_; }

 private:
  Harness& harness_;
  const std::shared_ptr<Stream> stream_;
  const AcquireArgs args_;
};

class Harness {
 public:
  explicit Harness(FuzzedDataProvider& input)
      : input_(input),
        trace_(std::getenv("LEASEKEEPER_FUZZ_TRACE") != nullptr),
        owner_(config_, clock_) {}

  void Run() {
    for (int step = 0; step < kMaxSteps && input_.remaining_bytes() > 0;
         ++step) {
      Step();
      FinishDone();
      Check();
    }
    Log("BeginShutdown");
    owner_.BeginShutdown();
    FinishDone();
    for (int s = 0; s < kStreams; ++s) Drop(s);
    FinishDone();
    Check();
    if (!parked_.empty()) {
      Fail(absl::StrCat(parked_.size(), " parked Acquires never answered"));
    }
  }

  // Called by Stream and Parked.
  void SawNotice(const Stream& stream, const SessionNotice& notice) {
    Log(absl::StrCat("  notice to ", stream.client, ": kind ",
                     static_cast<int>(notice.kind), " ", notice.lock, " ",
                     notice.token));
    if (notice.kind == SessionNotice::Kind::kGrantedFromQueue) {
      SawToken(notice.lock, notice.token, stream.client);
    }
  }
  void Finished(Stream& stream) {
    if (stream.finished) return;
    stream.finished = true;
    done_.push_back(stream.shared_from_this());
  }
  void Answered(Parked* call, AcquireCallAnswer reply) {
    auto it = parked_.find(call);
    if (it == parked_.end()) Fail("a parked Acquire answered twice");
    std::unique_ptr<Parked> done = std::move(it->second);
    parked_.erase(it);
    Log(absl::StrCat("  parked Acquire(", call->args().client, ", ",
                     call->args().lock, ") -> ", Describe(reply.result)));
    if (reply.result.ok() &&
        reply.result->kind == AcquireAnswer::Kind::kGranted) {
      SawToken(call->args().lock, reply.result->token, call->args().client);
    }
    // As the reactor: the answer reaches the client unless the stream
    // is finished, and the owner hears whether it did.
    owner_.ReportAcquireCall(AcquireCallFinished{
        call->args(), reply, /*cancelled=*/call->stream()->finished});
  }

 private:
  // A completion that must run exactly once, before the call returns.
  template <typename T>
  struct Once {
    std::optional<T> answer;
    int calls = 0;
  };
  template <typename T>
  Completion<T> Into(Once<T>& once) {
    return [&once](T answer) {
      once.answer = std::move(answer);
      ++once.calls;
    };
  }
  template <typename T>
  T Take(Once<T>& once, const char* call) {
    if (once.calls != 1) {
      Fail(absl::StrCat(call, " answered ", once.calls,
                        " times before returning"));
    }
    return *std::move(once.answer);
  }

  void Step() {
    const int choice = input_.ConsumeIntegralInRange<int>(0, 15);
    const int slot = input_.ConsumeIntegralInRange<int>(0, kStreams - 1);
    if (choice <= 2) {
      StepClock();
    } else if (choice == 3) {
      Open(StreamAt(slot));
    } else if (choice == 4) {
      Keepalive(StreamAt(slot));
    } else if (choice == 5) {
      Close(StreamAt(slot));
    } else if (choice <= 12) {
      Call(StreamAt(slot));
    } else if (choice == 13) {
      Raw(StreamAt(slot));
    } else {
      Log(absl::StrCat("stream ", slot, " dropped by its client"));
      Drop(slot);
    }
  }

  void StepClock() {
    const uint8_t pick = input_.ConsumeIntegral<uint8_t>();
    Tick by = pick % 8;
    if (pick >= 200) by = config_.session_grace_ms + pick % 3 - 1;
    if (pick >= 240) by = 100 + (pick - 240) * 20;
    if (input_.ConsumeBool()) {
      clock_.SetInside(clock_.Now() + by);
    } else {
      clock_.Advance(by);
    }
    Log(absl::StrCat("clock ", clock_.Now(), "; RunDueTimers"));
    owner_.RunDueTimers();
  }

  // The stream in `slot`, a new one if the last is done.
  std::shared_ptr<Stream>& StreamAt(int slot) {
    std::shared_ptr<Stream>& stream = streams_[slot];
    if (stream == nullptr || stream->finished) {
      FinishDone();
      stream = std::make_shared<Stream>(*this);
      Log(absl::StrCat("stream ", slot, " starts"));
    }
    return stream;
  }

  // The client drops the stream (cancel, disconnect): the reactor's
  // OnCancel, then OnDone.
  void Drop(int slot) {
    std::shared_ptr<Stream> stream = std::move(streams_[slot]);
    if (stream == nullptr) return;
    ReportEnded(*stream);
    Finished(*stream);
    FinishDone();
  }

  // The reactor's OnDone for every stream finished since the last call:
  // its end reported, its parked Acquires withdrawn.
  void FinishDone() {
    while (!done_.empty()) {
      const std::shared_ptr<Stream> stream = std::move(done_.back());
      done_.pop_back();
      ReportEnded(*stream);
      std::vector<std::pair<AcquireArgs, Parked*>> withdraw;
      for (const auto& [call, parked] : parked_) {
        if (parked->stream() == stream) {
          withdraw.emplace_back(parked->args(), call);
        }
      }
      for (const auto& [args, call] : withdraw) {
        owner_.ReportAcquireCall(
            AcquireWaitCancelled{args.client, args.lock, call});
      }
    }
  }

  void ReportEnded(Stream& stream) {
    if (stream.end_reported) return;
    stream.end_reported = true;
    if (!stream.session_id.has_value()) return;
    owner_.Session(SessionStreamEnded{*stream.session_id, &stream});
  }

  // EndStream: the end reported, then the stream finished.
  void EndStream(Stream& stream, const absl::Status& status) {
    Log(absl::StrCat("  stream ends: ", status.ToString()));
    ReportEnded(stream);
    Finished(stream);
  }

  void Open(std::shared_ptr<Stream>& stream) {
    pb::OpenSession open;
    open.set_client_id(PickClient());
    if (input_.ConsumeBool()) open.set_resume_session_id(PickSessionId());
    HandleOpen(stream, open);
  }

  void HandleOpen(std::shared_ptr<Stream>& stream, const pb::OpenSession& open) {
    Log(absl::StrCat("open(", open.client_id(), ", resume ",
                     open.resume_session_id(), ")"));
    if (stream->session_id.has_value()) {
      return EndStream(*stream, absl::InvalidArgumentError("open"));
    }
    absl::StatusOr<OpenArgs> args = ParseOpen(open, config_.limits);
    if (!args.ok()) return EndStream(*stream, args.status());
    Once<absl::StatusOr<SessionOpenedAnswer>> once;
    owner_.Session(Ask(OpenSessionArgs{.client = args->client,
                                       .resume_id = args->resume_session_id,
                                       .sink = stream},
                       Into(once)));
    absl::StatusOr<SessionOpenedAnswer> opened = Take(once, "open");
    if (!opened.ok()) {
      Log(absl::StrCat("  -> ", opened.status().ToString()));
      Finished(*stream);
      return;
    }
    Log(absl::StrCat("  -> session ", opened->session_id,
                     opened->resumed ? " resumed" : ""));
    stream->session_id = opened->session_id;
    stream->client = args->client;
    session_ids_.push_back(opened->session_id);
    if (stream->end_reported) {
      owner_.Session(SessionStreamEnded{opened->session_id, stream.get()});
    }
  }

  void Keepalive(std::shared_ptr<Stream>& stream) {
    Log("keepalive");
    if (!stream->session_id.has_value()) {
      return EndStream(*stream, absl::InvalidArgumentError("open"));
    }
    Once<absl::StatusOr<int>> once;
    owner_.Session(
        Ask(KeepaliveArgs{*stream->session_id, stream.get()}, Into(once)));
    absl::StatusOr<int> renewed = Take(once, "keepalive");
    Log(absl::StrCat("  -> ", renewed.ok() ? absl::StrCat(*renewed)
                                            : renewed.status().ToString()));
    if (!renewed.ok()) Finished(*stream);
  }

  void Close(std::shared_ptr<Stream>& stream) {
    Log("close");
    if (!stream->session_id.has_value()) {
      Finished(*stream);
      return;
    }
    Once<absl::Status> once;
    owner_.Session(
        Ask(CloseSessionArgs{*stream->session_id, stream.get()}, Into(once)));
    Log(absl::StrCat("  -> ", Take(once, "close").ToString()));
    Finished(*stream);
  }

  void Call(std::shared_ptr<Stream>& stream) {
    pb::SessionCall call;
    const int kind = input_.ConsumeIntegralInRange<int>(0, 6);
    if (kind <= 3) {
      pb::AcquireRequest& r = *call.mutable_acquire();
      FillIds(r);
      r.set_lock(PickLock());
      r.set_ttl_ms(PickTtl());
      const int mode = input_.ConsumeIntegralInRange<int>(0, 7);
      if (r.lock() == "S" ? mode < 6 : mode == 0) {
        r.set_mode(pb::LOCK_MODE_SEMAPHORE);
        r.set_capacity(input_.ConsumeIntegralInRange<uint32_t>(0, 3));
      } else {
        r.set_mode(mode % 2 == 0 ? pb::LOCK_MODE_SHARED
                                 : pb::LOCK_MODE_EXCLUSIVE);
      }
      const uint8_t wait = input_.ConsumeIntegral<uint8_t>();
      r.set_wait_timeout_ms(wait < 128 ? 0 : wait < 250 ? wait % 50 : -1);
      if (input_.ConsumeIntegralInRange<int>(0, 3) == 0) {
        r.set_holder_label(absl::StrCat("label", input_.ConsumeBool()));
      }
    } else if (kind <= 5) {
      pb::RenewRequest& r = *call.mutable_renew();
      FillIds(r);
      r.set_lock(PickLock());
      r.set_ttl_ms(PickTtl());
    } else {
      pb::ReleaseRequest& r = *call.mutable_release();
      FillIds(r);
      r.set_lock(PickLock());
    }
    HandleCall(stream, call);
  }

  // Client and session ids as a client library sends them (empty: the
  // stream's), now and then another's; a request id now and then (retries).
  template <typename Request>
  void FillIds(Request& r) {
    const int pick = input_.ConsumeIntegralInRange<int>(0, 15);
    if (pick == 0) r.set_client_id(PickClient());
    if (pick == 1) r.set_session_id(PickSessionId());
    if (input_.ConsumeIntegralInRange<int>(0, 3) == 0) {
      r.set_request_id(absl::StrCat("r", input_.ConsumeIntegralInRange(0, 3)));
    }
  }

  // A message from raw bytes, as the reactor parses what it reads.
  void Raw(std::shared_ptr<Stream>& stream) {
    pb::SessionRequest request;
    if (!request.ParseFromString(input_.ConsumeRandomLengthString(64))) {
      Log("raw: undecodable");
      return EndStream(*stream, absl::InvalidArgumentError("undecodable"));
    }
    Log("raw:");
    switch (request.kind_case()) {
      case pb::SessionRequest::kOpen:
        return HandleOpen(stream, request.open());
      case pb::SessionRequest::kKeepalive:
        return Keepalive(stream);
      case pb::SessionRequest::kClose:
        return Close(stream);
      case pb::SessionRequest::kCall:
        return HandleCall(stream, request.call());
      case pb::SessionRequest::KIND_NOT_SET:
        return EndStream(*stream, absl::InvalidArgumentError("kind"));
    }
  }

  void HandleCall(std::shared_ptr<Stream>& stream, const pb::SessionCall& call) {
    if (!stream->session_id.has_value()) {
      Log("call before open");
      return EndStream(*stream, absl::InvalidArgumentError("open"));
    }
    switch (call.request_case()) {
      case pb::SessionCall::kAcquire:
        return Acquire(stream, call.acquire());
      case pb::SessionCall::kRenew:
        return Lease(*stream, call.renew(), &ParseRenew, "Renew");
      case pb::SessionCall::kRelease:
        return Lease(*stream, call.release(), &ParseRelease, "Release");
      case pb::SessionCall::REQUEST_NOT_SET:
        Log("call without a request -> refused");
        return;
    }
  }

  // The reactor's BindToSession (without an authorizer: no policy).
  template <typename Request>
  absl::Status Bind(const Stream& stream, Request& request) {
    if (request.client_id().empty()) request.set_client_id(stream.client);
    if (request.client_id() != stream.client) {
      return absl::InvalidArgumentError("client_id");
    }
    if (request.session_id().empty()) {
      request.set_session_id(*stream.session_id);
    }
    if (request.session_id() != *stream.session_id) {
      return absl::InvalidArgumentError("session_id");
    }
    return absl::OkStatus();
  }

  void Acquire(std::shared_ptr<Stream>& stream, pb::AcquireRequest request) {
    Log(absl::StrCat("Acquire ", request.ShortDebugString()));
    if (absl::Status s = Bind(*stream, request); !s.ok()) {
      return Log(absl::StrCat("  -> refused: ", s.ToString()));
    }
    absl::StatusOr<AcquireArgs> args = ParseAcquire(request, config_.limits);
    if (!args.ok()) {
      return Log(absl::StrCat("  -> refused: ", args.status().ToString()));
    }
    auto parked = std::make_unique<Parked>(*this, stream, *std::move(args));
    Parked* call = parked.get();
    parked_.emplace(call, std::move(parked));
    owner_.Acquire(call->args(), call);
  }

  template <typename Request, typename Parse>
  void Lease(Stream& stream, Request request, Parse parse, const char* name) {
    Log(absl::StrCat(name, " ", request.ShortDebugString()));
    if (absl::Status s = Bind(stream, request); !s.ok()) {
      return Log(absl::StrCat("  -> refused: ", s.ToString()));
    }
    auto args = parse(request, config_.limits);
    if (!args.ok()) {
      return Log(absl::StrCat("  -> refused: ", args.status().ToString()));
    }
    using Answer = typename std::decay_t<decltype(*args)>::Answer;
    Once<Answer> once;
    owner_.Lease(Ask(*args, Into(once)));
    const Answer answer = Take(once, name);
    Log(absl::StrCat("  -> ", answer.ok() ? "ok" : answer.status().ToString()));
  }

  // The invariants of the file comment.
  void Check() {
    if (absl::Status s = owner_.CheckConsistency(); !s.ok()) {
      Fail(absl::StrCat("CheckConsistency: ", s.ToString()));
    }
    for (const char* lock : kLocks) {
      Once<absl::StatusOr<InspectAnswer>> once;
      owner_.Query(Ask(InspectQuery{.lock = lock, .from = {}, .limit = 1000},
                       Into(once)));
      absl::StatusOr<InspectAnswer> answer = Take(once, "Inspect");
      if (!answer.ok()) Fail(absl::StrCat("Inspect: ", answer.status().ToString()));
      int exclusive = 0;
      for (const HolderInfo& holder : answer->holders) {
        SawToken(lock, holder.view.token, holder.view.client);
        if (holder.view.mode == LockMode::kExclusive) ++exclusive;
      }
      if (exclusive > 0 && answer->holders.size() > 1) {
        Fail(absl::StrCat(lock, ": an exclusive holder among ",
                          answer->holders.size()));
      }
      if (answer->capacity > 0 && answer->holders.size() > answer->capacity) {
        Fail(absl::StrCat(lock, ": ", answer->holders.size(),
                          " holders of a semaphore of ", answer->capacity));
      }
    }
    for (const auto& [lock, seen] : tokens_) {
      if (!seen.empty()) floors_[lock] = seen.rbegin()->first;
    }
  }

  void SawToken(const std::string& lock, FencingToken token,
                const std::string& client) {
    std::map<FencingToken, std::string>& seen = tokens_[lock];
    if (auto it = seen.find(token); it != seen.end()) {
      if (it->second != client) {
        Fail(absl::StrCat(lock, ": token ", token, " of ", it->second,
                          " seen again for ", client));
      }
      return;
    }
    // One step's effects may arrive in any order: a new token is checked
    // against the tokens of the steps before.
    const FencingToken floor = floors_[lock];
    if (token <= floor) {
      Fail(absl::StrCat(lock, ": new token ", token, " for ", client,
                        " not above ", floor, ", seen before"));
    }
    seen.emplace(token, client);
  }

  std::string PickClient() {
    return kClients[input_.ConsumeIntegralInRange<size_t>(0, 3)];
  }
  std::string PickLock() {
    const int pick = input_.ConsumeIntegralInRange<int>(0, 31);
    if (pick == 31) return "";
    return kLocks[pick % 3];
  }
  // A session id seen before (of any stream, open or not), or one that
  // never existed.
  std::string PickSessionId() {
    if (session_ids_.empty() || input_.ConsumeIntegralInRange(0, 7) == 0) {
      return "no-such-session";
    }
    return session_ids_[input_.ConsumeIntegralInRange<size_t>(
        0, session_ids_.size() - 1)];
  }
  int64_t PickTtl() {
    const uint8_t pick = input_.ConsumeIntegral<uint8_t>();
    if (pick < 250) return 1 + pick % 60;
    if (pick == 250) return 0;
    if (pick == 251) return -1;
    return kMaxTtlMs + pick - 253;
  }

  static std::string Describe(const absl::StatusOr<AcquireAnswer>& result) {
    if (!result.ok()) return result.status().ToString();
    switch (result->kind) {
      case AcquireAnswer::Kind::kGranted:
        return absl::StrCat("granted ", result->token);
      case AcquireAnswer::Kind::kQueued:
        return absl::StrCat("queued ", result->position);
      case AcquireAnswer::Kind::kWithdrawn:
        return "withdrawn";
    }
    return "?";
  }

  void Log(const std::string& line) {
    if (trace_) std::fprintf(stderr, "%s\n", line.c_str());
    absl::StrAppend(&log_, line, "\n");
  }

  [[noreturn]] void Fail(const std::string& what) {
    std::fprintf(stderr, "\n=== session_fuzzer: %s\n=== steps:\n%s",
                 what.c_str(), log_.c_str());
    std::abort();
  }

  FuzzedDataProvider& input_;
  const bool trace_;
  const ServerConfig config_ = FuzzConfig();
  FakeClock clock_{1'000};
  // Declared before owner_: sinks and parked calls outlive CoreOwner's
  // references to them.
  std::shared_ptr<Stream> streams_[kStreams];
  std::map<Parked*, std::unique_ptr<Parked>> parked_;
  // Finished streams whose OnDone is still to run.
  std::vector<std::shared_ptr<Stream>> done_;
  std::vector<std::string> session_ids_;
  // Per lock: every token seen and whose it is; the highest one seen by
  // the end of the last step.
  std::map<std::string, std::map<FencingToken, std::string>> tokens_;
  std::map<std::string, FencingToken> floors_;
  std::string log_;
  CoreOwner owner_;
};

void Stream::Notify(const SessionNotice& notice) {
  if (!finished) harness_.SawNotice(*this, notice);
}

void Stream::End(const absl::Status&) { harness_.Finished(*this); }

void Parked::Complete(AcquireCallAnswer reply) {
  // The last statement: it destroys this object.
  harness_.Answered(this, std::move(reply));
}

}  // namespace
}  // namespace leasekeeper::server

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  leasekeeper::server::Harness harness(input);
  harness.Run();
  return 0;
}
