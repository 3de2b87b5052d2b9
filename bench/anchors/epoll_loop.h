// EpollLoop: an epoll set, a timer heap and the one thread that runs them,
// for the Redis clients (hiredis's asynchronous API plugs its read and write
// interest into Watch()).
//
// Thread-safety: After() may be called from any thread; Watch(), Unwatch()
// and everything a watcher does run on the loop thread.
// Invariants:
//  1. Timers due at the same instant run in the order After() was called.
//  2. The destructor stops the thread; pending timers are dropped and
//     watched descriptors are not closed (their owners close them).

#ifndef LEASEKEEPER_BENCH_ANCHORS_EPOLL_LOOP_H_
#define LEASEKEEPER_BENCH_ANCHORS_EPOLL_LOOP_H_

#include <cstdint>
#include <memory>
#include <queue>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "loop.h"

namespace leasekeeper::bench {

class EpollLoop final : public Loop {
 public:
  // Called with the ready epoll events (EPOLLIN, EPOLLOUT, EPOLLERR, ...).
  using Handler = absl::AnyInvocable<void(uint32_t events)>;

  EpollLoop();
  ~EpollLoop() override;
  EpollLoop(const EpollLoop&) = delete;
  EpollLoop& operator=(const EpollLoop&) = delete;

  void After(absl::Duration delay, absl::AnyInvocable<void()> fn) override;

  // Sets the events `fd` is watched for (0: registered, but for none) and
  // its handler. REQUIRES: on the loop thread.
  void Watch(int fd, uint32_t events, Handler handler);
  // Changes only the events. REQUIRES: Watch(fd) earlier, on the loop thread.
  void SetEvents(int fd, uint32_t events);
  // REQUIRES: on the loop thread.
  void Unwatch(int fd);

  // Runs `fn` on the loop thread once the current batch of ready events and
  // due timers has been handled, before the loop waits again. Lets a client
  // write what a batch of callbacks queued with one syscall per connection
  // instead of a round through epoll. REQUIRES: on the loop thread.
  void Defer(absl::AnyInvocable<void()> fn) {
    deferred_.push_back(std::move(fn));
  }

 private:
  struct Timer {
    int64_t due_ns;
    uint64_t seq;
    absl::AnyInvocable<void()> fn;
  };
  struct Later {
    bool operator()(const Timer& a, const Timer& b) const {
      return a.due_ns != b.due_ns ? a.due_ns > b.due_ns : a.seq > b.seq;
    }
  };

  void Run();
  void RunDeferred();
  void TakeIncoming();

  int epoll_fd_;
  int wake_fd_;
  absl::Mutex mu_;
  std::vector<Timer> incoming_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // Loop thread only.
  std::priority_queue<Timer, std::vector<Timer>, Later> timers_;
  // Shared so that a handler may Unwatch() its own descriptor, or Watch()
  // another one, while it runs.
  absl::flat_hash_map<int, std::shared_ptr<Handler>> handlers_;
  std::vector<absl::AnyInvocable<void()>> deferred_;
  std::thread thread_;
};

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_EPOLL_LOOP_H_
