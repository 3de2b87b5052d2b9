#include "epoll_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace leasekeeper::bench {
namespace {

void DieIf(bool failed, const char* what) {
  if (failed) {
    std::perror(what);
    std::abort();
  }
}

}  // namespace

EpollLoop::EpollLoop()
    : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)),
      wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  DieIf(epoll_fd_ < 0, "epoll_create1");
  DieIf(wake_fd_ < 0, "eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  DieIf(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0, "epoll_ctl");
  thread_ = std::thread([this] { Run(); });
}

EpollLoop::~EpollLoop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  thread_.join();
  close(wake_fd_);
  close(epoll_fd_);
}

void EpollLoop::After(absl::Duration delay, absl::AnyInvocable<void()> fn) {
  {
    absl::MutexLock lock(&mu_);
    incoming_.push_back(Timer{NowNs() + absl::ToInt64Nanoseconds(delay),
                              next_seq_++, std::move(fn)});
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void EpollLoop::Watch(int fd, uint32_t events, Handler handler) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  int op = handlers_.contains(fd) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  DieIf(epoll_ctl(epoll_fd_, op, fd, &ev) != 0, "epoll_ctl(watch)");
  handlers_[fd] = std::make_shared<Handler>(std::move(handler));
}

void EpollLoop::SetEvents(int fd, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  DieIf(epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0, "epoll_ctl(mod)");
}

void EpollLoop::Unwatch(int fd) {
  if (handlers_.erase(fd) > 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void EpollLoop::TakeIncoming() {
  std::vector<Timer> incoming;
  {
    absl::MutexLock lock(&mu_);
    incoming.swap(incoming_);
  }
  for (Timer& t : incoming) timers_.push(std::move(t));
}

void EpollLoop::RunDeferred() {
  while (!deferred_.empty()) {
    std::vector<absl::AnyInvocable<void()>> batch;
    batch.swap(deferred_);
    for (auto& fn : batch) fn();
  }
}

void EpollLoop::Run() {
  constexpr int kMaxEvents = 256;
  epoll_event events[kMaxEvents];
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
    }
    TakeIncoming();
    // Run what is due; what those callbacks schedule waits for the next turn.
    int64_t now = NowNs();
    while (!timers_.empty() && timers_.top().due_ns <= now) {
      auto fn = std::move(const_cast<Timer&>(timers_.top()).fn);
      timers_.pop();
      fn();
    }
    RunDeferred();
    int timeout_ms = -1;
    if (!timers_.empty()) {
      int64_t wait_ns = timers_.top().due_ns - NowNs();
      timeout_ms =
          wait_ns <= 0 ? 0 : static_cast<int>((wait_ns + 999'999) / 1'000'000);
    }
    int n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
    if (n < 0) {
      DieIf(errno != EINTR, "epoll_wait");
      continue;
    }
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count;
        (void)!read(wake_fd_, &count, sizeof(count));
        continue;
      }
      auto it = handlers_.find(fd);
      if (it == handlers_.end()) continue;
      std::shared_ptr<Handler> handler = it->second;
      (*handler)(events[i].events);
    }
    RunDeferred();
  }
}

}  // namespace leasekeeper::bench
