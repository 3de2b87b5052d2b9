// The server's domain requests and answers: what the gRPC layer hands to
// CoreOwner after validation, and what it gets back to convert into protos.
//
// Names: a request is ...Args (or ...Query for a paged view), the server's
// answer to it ...Answer (absl::StatusOr<...Answer> when it can fail; a
// request's Answer is what CoreOwner's grouped entries answer it with); the
// API's messages keep their proto names (...Request, ...Response), and the
// core's results theirs (...Outcome, core/lock_table.h).
//
// Protobuf messages never reach CoreOwner or the core; these plain structs
// do. Durations are milliseconds relative to the moment an answer was
// produced (the server never exposes absolute ticks).
//
// Thread-safety: plain values.
#ifndef LEASEKEEPER_SERVER_ANSWERS_H_
#define LEASEKEEPER_SERVER_ANSWERS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "core/lock_table.h"
#include "core/types.h"

namespace leasekeeper::server {

struct RenewAnswer;
struct ForcedRelease;
struct InspectAnswer;
struct StatusAnswer;
struct ListLocksAnswer;

struct AcquireArgs {
  std::string client{};
  std::string lock{};
  int64_t ttl_ms = 0;
  LockMode mode = LockMode::kExclusive;
  uint32_t capacity = 0;        // kSemaphore: the semaphore's N, else 0
  int64_t wait_timeout_ms = 0;  // 0: answer queued at once
  std::string request_id{};     // empty: not idempotent
  std::string session_id{};     // empty: no session
  std::string label{};          // holder_label
};

// Why a waiting Acquire ended without a grant and without an error.
enum class WithdrawCause { kReleasedByClient, kSessionEnded };

struct AcquireAnswer {
  enum class Kind { kGranted, kQueued, kWithdrawn };
  Kind kind = Kind::kGranted;
  FencingToken token = 0;  // kGranted
  int64_t ttl_ms = 0;      // kGranted: lease left when answered
  int64_t waited_ms = 0;   // kGranted: time spent queued
  int64_t position = 0;    // kQueued
  WithdrawCause withdraw_cause = WithdrawCause::kReleasedByClient;
  // Clients aborted as deadlock victims by this request, in abort order.
  std::vector<std::string> aborted{};
};

// An Acquire's answer comes as absl::StatusOr<AcquireAnswer>. Errors: the
// core's (server_errors.h), DeadlockVictim, WaitTimedOut, SessionEnded,
// LimitExceeded, ShuttingDown, SupersededByRetry, RequestIdReused,
// WaitCancelled.

struct RenewArgs {
  using Answer = absl::StatusOr<RenewAnswer>;
  std::string client{};
  std::string lock{};
  int64_t ttl_ms = 0;
  std::string request_id{};
  std::string session_id{};
};

struct RenewAnswer {
  FencingToken token = 0;
  int64_t ttl_ms = 0;
};

struct ReleaseArgs {
  using Answer = absl::StatusOr<ReleaseOutcome>;
  std::string client{};
  std::string lock{};
  std::string request_id{};
  std::string session_id{};
};

// A Release's answer: the core's ReleaseOutcome (kReleased: a lease ended;
// kWithdrawn: a wait was withdrawn).
using ReleaseAnswer = ReleaseOutcome;

// An operator's forced release of the lease `client` holds on `lock`, or
// (client empty) of every lease on it; the answer lists the leases ended.
struct ForceReleaseArgs {
  using Answer = absl::StatusOr<std::vector<ForcedRelease>>;
  std::string lock{};
  std::string client{};
};
struct ForcedRelease {
  std::string client;
  FencingToken token = 0;
  LockMode mode = LockMode::kExclusive;
};

struct WriteArgs {
  std::string lock{};
  std::string key{};
  std::string value{};
  FencingToken token = 0;
  std::string client{};  // required when require_held
  bool require_held = false;
};

// A delete from the fenced store: always holder-checked (op::Delete).
struct DeleteArgs {
  std::string lock{};
  std::string key{};
  FencingToken token = 0;
  std::string client{};  // required
};

// What CoreOwner::Write applies: a write or a delete of one key.
using StoreMutation = std::variant<WriteArgs, DeleteArgs>;

// An accepted store mutation: whether (lock, key) had a value before it
// (for a Delete: false means there was nothing to delete).
struct StoreAnswer {
  bool existed = false;
};

struct ReadArgs {
  using Answer = absl::StatusOr<std::optional<std::string>>;
  std::string lock{};
  std::string key{};
  FencingToken token = 0;  // 0: a plain read; else a fenced read
};

struct KeysAnswer {
  std::vector<std::string> keys{};  // ascending
  // The last key of this page when more follow; nullopt at the end.
  std::optional<std::string> next_after{};
};

// A page of a lock's key names in the fenced store (ListKeys).
struct KeysQuery {
  using Answer = absl::StatusOr<KeysAnswer>;
  std::string lock{};
  std::string after{};  // empty: from the first key
  size_t limit = 0;     // >= 1
};

// The paged views (Inspect, Status, ListLocks), as parsed (convert.h).
struct InspectQuery {
  using Answer = absl::StatusOr<InspectAnswer>;
  std::string lock{};
  InspectCursor from{};  // decoded page token; the start for the first page
  size_t limit = 0;
};
struct StatusQuery {
  using Answer = absl::StatusOr<StatusAnswer>;
  std::string client{};
  std::string after{};  // decoded page token; empty for the first page
  size_t limit = 0;
};
struct ListLocksQuery {
  using Answer = absl::StatusOr<ListLocksAnswer>;
  std::string prefix{};
  std::string after{};  // decoded page token; empty for the first page
  size_t limit = 0;
};

struct HolderInfo {
  HolderView view{};
  int64_t expires_in_ms = 0;
  std::string label{};
};

struct WaiterInfo {
  WaiterView view{};
  int64_t position = 0;  // 1 = next in line
  std::string label{};
};

struct InspectAnswer {
  std::vector<HolderInfo> holders{};  // by token
  std::vector<WaiterInfo> queue{};    // oldest first
  uint32_t capacity = 0;  // LockView::capacity
  // Where the next page resumes; nullopt on the last page.
  std::optional<InspectCursor> next{};
};

enum class SessionState { kNone, kOpen, kGrace };

struct StatusAnswer {
  std::optional<uint64_t> age{};
  std::vector<HolderInfo> holds{};  // by lock name
  std::optional<std::string> waiting{};
  SessionState session = SessionState::kNone;
  // The last lock name of this page when more holds follow; nullopt at the
  // end.
  std::optional<std::string> next_after{};
};

struct LockSummary {
  std::string name{};
  std::vector<HolderInfo> holders{};
  int64_t queue_length = 0;
  uint32_t capacity = 0;  // LockView::capacity
};

struct ListLocksAnswer {
  std::vector<LockSummary> locks{};
  // The last name of this page when more may follow; nullopt at the end.
  std::optional<std::string> next_after{};
};

// Pushed to a client's session stream.
struct SessionNotice {
  enum class Kind { kGrantedFromQueue, kLeaseLapsed, kAbortedDeadlockVictim };
  Kind kind = Kind::kGrantedFromQueue;
  std::string lock{};
  FencingToken token = 0;
  int64_t ttl_ms = 0;  // kGrantedFromQueue
};

struct SessionOpenedAnswer {
  std::string session_id{};
  int64_t grace_ms = 0;
  bool resumed = false;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_ANSWERS_H_
