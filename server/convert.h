// Conversions between leasekeeper.v1 protos and the server's domain types,
// including request validation.
//
// Validation order follows the contract: first "invalid arguments" (an empty
// required field, an unknown mode, a negative or too long wait, a zero
// token, a bad page size or page token), then "invalid ttl" (ttl_ms outside
// 1..86,400,000), then the size limits (RESOURCE_EXHAUSTED naming the
// limit's flag). Every failure names the offending field (ErrorInfo.field)
// and is detected before anything is applied, so a refused request changes
// nothing.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_SERVER_CONVERT_H_
#define LEASEKEEPER_SERVER_CONVERT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "leasekeeper/v1/lock_service.pb.h"
#include "server/answers.h"
#include "server/server_config.h"
#include "server/watch_hub.h"

namespace leasekeeper::server {

absl::StatusOr<AcquireArgs> ParseAcquire(const v1::AcquireRequest& request,
                                         const Limits& limits);
absl::StatusOr<RenewArgs> ParseRenew(const v1::RenewRequest& request,
                                     const Limits& limits);
absl::StatusOr<ReleaseArgs> ParseRelease(const v1::ReleaseRequest& request,
                                         const Limits& limits);
absl::StatusOr<WriteArgs> ParseWrite(const v1::WriteRequest& request,
                                     const Limits& limits);
absl::StatusOr<ReadArgs> ParseRead(const v1::ReadRequest& request,
                                   const Limits& limits);
// A Delete needs client_id (it is always holder-checked).
absl::StatusOr<DeleteArgs> ParseDelete(const v1::DeleteRequest& request,
                                       const Limits& limits);
// ListKeys: limit 0 is limits.default_page_size, larger than
// limits.max_page_size is that cap; negative is INVALID_ARGUMENT. `after`
// is checked against --max-key-bytes.
absl::StatusOr<KeysQuery> ParseListKeys(const v1::ListKeysRequest& request,
                                        const Limits& limits);

// Inspect and Status pages: page_size 0 is limits.default_detail_page_size,
// larger than limits.max_detail_page_size is that cap; a negative size or a
// page token this server did not hand out is INVALID_ARGUMENT.
absl::StatusOr<InspectQuery> ParseInspect(const v1::InspectRequest& request,
                                          const Limits& limits);
absl::StatusOr<StatusQuery> ParseStatus(const v1::StatusRequest& request,
                                        const Limits& limits);

absl::StatusOr<ListLocksQuery> ParseListLocks(
    const v1::ListLocksRequest& request, const Limits& limits);

struct OpenArgs {
  std::string client{};
  std::string resume_session_id{};
};
absl::StatusOr<OpenArgs> ParseOpen(const v1::OpenSession& open,
                                   const Limits& limits);

void ToProto(const AcquireAnswer& answer, v1::AcquireResponse* response);
void ToProto(const RenewAnswer& answer, v1::RenewResponse* response);
v1::ReleaseResult ToProto(ReleaseAnswer outcome);
// `wall_now` renders expires_in_ms as a wall-clock Timestamp for humans.
void ToProto(const InspectAnswer& answer, absl::Time wall_now,
             v1::InspectResponse* response);
void ToProto(const StatusAnswer& answer, absl::Time wall_now,
             v1::StatusResponse* response);
void ToProto(const ListLocksAnswer& answer, absl::Time wall_now,
             v1::ListLocksResponse* response);
void ToProto(const SessionNotice& notice, v1::LockNotice* proto);
v1::LockMode ModeToProto(LockMode mode);

// Watch: exactly one of lock (non-empty) and prefix (may be empty) set,
// each within --max-lock-name-bytes. INVALID_ARGUMENT field "target" when
// neither is set, "lock" when it is empty.
absl::StatusOr<WatchTarget> ParseWatch(const v1::WatchRequest& request,
                                       const Limits& limits);
// One lock of a Watch snapshot; `wall_now` as for Inspect.
void ToWatchedLock(const std::string& name,
                   const std::vector<HolderInfo>& holders,
                   const std::vector<WaiterInfo>& queue, absl::Time wall_now,
                   v1::WatchedLock* proto);
void ToProto(const WatchEvent& event, v1::WatchEvent* proto);

// Page tokens are opaque: web-safe base64 of the last lock name shown.
std::string EncodePageToken(const std::string& after);
// Inspect's page tokens: web-safe base64 of "h" and the last holder's token,
// or "q" and the last queue position shown.
std::string EncodeInspectPageToken(const InspectCursor& next);

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_CONVERT_H_
