// The calls that CoreOwner's grouped entries take: a completion (the one
// answer of a call), a request paired with the completion its answer goes
// to (Ask), and the variants of the lease calls (CoreOwner::Lease), the
// query calls (CoreOwner::Query), the session calls (CoreOwner::Session)
// and an Acquire call's reports (CoreOwner::ReportAcquireCall).
// Thread-safety: plain values. An Asked refers to its request: it is made
// for the owner call it is passed to and lives no longer than that call.
#ifndef LEASEKEEPER_SERVER_OWNER_CALLS_H_
#define LEASEKEEPER_SERVER_OWNER_CALLS_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/answers.h"
#include "server/parked_calls.h"

namespace leasekeeper::server {

class SessionSink;

// A call's answer: called exactly once, once every record the answer may
// reflect is durable, after the call's effects; UNAVAILABLE (with the
// reason) if the log failed.
template <typename T>
using Completion = absl::AnyInvocable<void(T) &&>;

// Opens a session for `client`, or resumes `resume_id`.
struct OpenSessionArgs {
  using Answer = absl::StatusOr<SessionOpenedAnswer>;
  std::string client{};
  std::string resume_id{};
  std::shared_ptr<SessionSink> sink{};
};
// A call on the session `session_id` that `sink` says it carries.
struct KeepaliveArgs {
  using Answer = absl::StatusOr<int>;
  std::string session_id{};
  const SessionSink* sink = nullptr;
};
struct CloseSessionArgs {
  using Answer = absl::Status;
  std::string session_id{};
  const SessionSink* sink = nullptr;
};
// The stream ended without close; nobody waits for an answer.
struct SessionStreamEnded {
  std::string session_id{};
  const SessionSink* sink = nullptr;
};

// What the gRPC side reports about an Acquire call handed to
// CoreOwner::Acquire: its wait was cancelled (client cancel, deadline,
// disconnect), or it finished (`cancelled`: its answer did not reach the
// client).
struct AcquireWaitCancelled {
  const std::string& client;
  const std::string& lock;
  PendingAcquire* call = nullptr;
};
struct AcquireCallFinished {
  const AcquireArgs& args;
  const AcquireCallAnswer& reply;
  bool cancelled = false;
};
using AcquireCallReport =
    std::variant<AcquireWaitCancelled, AcquireCallFinished>;

// A request and the completion its answer goes to.
template <typename Request>
struct Asked {
  using Result = typename Request::Answer;  // what the request is answered with
  const Request& request;
  Completion<Result> done;
};
template <typename Request, typename Done>
Asked<Request> Ask(const Request& request, Done&& done) {
  return Asked<Request>{request, Completion<typename Asked<Request>::Result>(
                                     std::forward<Done>(done))};
}

// Renew, Release, ForceRelease.
using LeaseCall =
    std::variant<Asked<RenewArgs>, Asked<ReleaseArgs>, Asked<ForceReleaseArgs>>;
// Read: the value, or nullopt; with a token a fenced read. Keys: a page of
// a lock's key names. Inspect, Status, ListLocks: QueryAnswers' pages.
using QueryCall =
    std::variant<Asked<ReadArgs>, Asked<KeysQuery>, Asked<InspectQuery>,
                 Asked<StatusQuery>, Asked<ListLocksQuery>>;
using SessionCall = std::variant<Asked<OpenSessionArgs>, Asked<KeepaliveArgs>,
                                 Asked<CloseSessionArgs>, SessionStreamEnded>;

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_OWNER_CALLS_H_
