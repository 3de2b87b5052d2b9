// BatchGathering: when a group-committing appender, with one commit in
// flight at a time, cuts its next batch.
//
// Why not simply "everything pending, at once". A caller that waits for its
// record to be durable sends its next record soon after it is answered. If
// the appender cuts as soon as anything is pending, the callers answered by
// one commit arrive just after the next batch was cut and wait for the one
// after: n steady callers settle into two alternating batches of about n/2,
// twice the commits (and, in etcd, twice the raft rounds and watch events)
// that one batch of n would cost.
//
// The rule. After a commit that answered `answered` callers while `pending`
// records were already waiting, the next batch is expected to hold
// answered + pending records. A batch is cut as soon as that many are
// pending, or the pending bytes reach the batch limit, or the linger ends:
// `max_linger` after the last answer went out, and never longer than that
// commit took (callers answered by a commit that took t come back within
// about t when the servers share a busy machine; half of it caught only
// half of them). So:
//  - one caller at a time is never delayed (answered 1, pending 0: its next
//    record is the whole expected batch);
//  - a record arriving after the linger is cut at once: an idle or lightly
//    loaded log adds no delay;
//  - when fewer callers return than were answered (one went away, or they
//    renew only now and then), the batch waits the whole linger: at most
//    one commit's time more, the price of the larger batches, and the next
//    expectation is what came.
// Thread-safety: none; one appender owns it (under its own mutex).
#ifndef LEASEKEEPER_CLUSTER_BATCH_GATHERING_H_
#define LEASEKEEPER_CLUSTER_BATCH_GATHERING_H_

#include <chrono>
#include <cstddef>

namespace leasekeeper::storage {

class BatchGathering {
 public:
  using Clock = std::chrono::steady_clock;

  // max_linger zero: never linger (cut whatever is pending at once).
  BatchGathering(std::chrono::microseconds max_linger, size_t max_batch_bytes)
      : max_linger_(max_linger), max_batch_bytes_(max_batch_bytes) {}

  // A commit that took `took` ended at `now`; it answered `answered`
  // callers, and `pending` records were waiting when it ended.
  void Committed(size_t answered, size_t pending, Clock::duration took,
                 Clock::time_point now);

  // Whether a batch of the `pending` records (`pending_bytes` in all)
  // should be cut at `now`. False when nothing is pending.
  bool CutNow(size_t pending, size_t pending_bytes,
              Clock::time_point now) const;

  // When lingering ends: a CutNow that is false with records pending is
  // true from then on.
  Clock::time_point LingerEnd() const { return linger_end_; }

 private:
  const std::chrono::microseconds max_linger_;
  const size_t max_batch_bytes_;
  size_t expected_ = 0;
  Clock::time_point linger_end_{};
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_BATCH_GATHERING_H_
