#include "cluster/batch_gathering.h"

#include <algorithm>

namespace leasekeeper::storage {

void BatchGathering::Committed(size_t answered, size_t pending,
                               Clock::duration took, Clock::time_point now) {
  expected_ = answered + pending;
  const Clock::duration linger =
      std::min<Clock::duration>(max_linger_, took);
  linger_end_ = now + linger;
}

bool BatchGathering::CutNow(size_t pending, size_t pending_bytes,
                            Clock::time_point now) const {
  if (pending == 0) return false;
  return pending >= expected_ || pending_bytes >= max_batch_bytes_ ||
         now >= linger_end_;
}

}  // namespace leasekeeper::storage
