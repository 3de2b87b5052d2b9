// WatchStream: the server side of one Watch call (callback API), the sender
// for one watcher of the watch hub (server/watch_hub.h).
//
// It registers with CoreOwner::Watch, which takes the snapshot in the same
// step, sends the snapshot once it is durable (one `current` per lock, then
// `synced`), then takes the hub's events one at a time: at most one write
// is in flight, and the next event is taken only when it completes, so a
// slow reader slows only its own stream; its buffer in the hub fills and it
// is cut (RESOURCE_EXHAUSTED WATCH_FELL_BEHIND). A cut stream whose write
// hangs (its client does not read at all) is cancelled after kCutGrace, so
// it stops holding a call. The stream finishes with the hub's end status
// (cut, shutdown, store failure), or CANCELLED when the client goes.
//
// Thread-safety: gRPC runs OnWriteDone, OnCancel and OnDone on its threads;
// the hub calls Wake on others. All state is under the stream's mutex,
// which is taken before the hub's (Take) and never while calling CoreOwner
// or StartWrite (which may write to the socket on the calling thread while
// the write's OnWriteDone waits for the mutex on a gRPC thread).
#ifndef LEASEKEEPER_SERVER_WATCH_STREAM_H_
#define LEASEKEEPER_SERVER_WATCH_STREAM_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "leasekeeper/v1/lock_service.pb.h"
#include "server/core_owner.h"
#include "server/watch_hub.h"

namespace leasekeeper::server {

// How long a cut stream's hanging write may take before the call is
// cancelled.
inline constexpr absl::Duration kWatchCutGrace = absl::Seconds(5);

// Starts the stream for `target` (already authorized and validated), or one
// that finishes at once with target's error. The reactor owns itself until
// gRPC calls its OnDone.
grpc::ServerWriteReactor<v1::WatchResponse>* StartWatchStream(
    CoreOwner& owner, grpc::CallbackServerContext* context,
    absl::StatusOr<WatchTarget> target);

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_WATCH_STREAM_H_
