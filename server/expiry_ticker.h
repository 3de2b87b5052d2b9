// ExpiryTicker: the server's timer thread.
//
// It sleeps on the Clock until the next deadline CoreOwner knows of (the
// earliest lease expiry, wait timeout or session grace end), then has
// CoreOwner process everything due, so a lease lapses, and its lock passes to
// the next waiter, at its exact tick without waiting for another request.
// CoreOwner interrupts the sleep when a call creates an earlier deadline.
// One thread for the whole server: waiting clients cost no thread each.
//
// Thread-safety: Start and Stop from one controlling thread.
#ifndef LEASEKEEPER_SERVER_EXPIRY_TICKER_H_
#define LEASEKEEPER_SERVER_EXPIRY_TICKER_H_

#include <atomic>
#include <thread>

#include "server/clock.h"
#include "server/core_owner.h"

namespace leasekeeper::server {

class ExpiryTicker {
 public:
  ExpiryTicker(CoreOwner& owner, Clock& clock);
  ExpiryTicker(const ExpiryTicker&) = delete;
  ExpiryTicker& operator=(const ExpiryTicker&) = delete;
  // Stops the thread if it runs.
  ~ExpiryTicker();

  // Starts the thread. REQUIRES: not started before.
  void Start();
  // Stops and joins the thread. Idempotent.
  void Stop();

 private:
  void Run();

  CoreOwner& owner_;
  Clock& clock_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_EXPIRY_TICKER_H_
