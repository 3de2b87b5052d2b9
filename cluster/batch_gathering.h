// BatchGathering: when a group-committing appender, with one commit in
// flight at a time, cuts its next batch: once as many records are pending
// as the last commit answered plus those already waiting then, or the
// pending bytes reach the limit, or the linger ends (max_linger after the
// last answer, never longer than that commit took). One caller at a time is
// never delayed. Why not "everything pending, at once":
// docs/design/cluster.md ("When to cut a batch").
//
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
