// LeasekeeperServer: leasekeeperd as a library: the core owner, the timer
// thread, the gRPC server with LockService, server reflection and the
// standard grpc.health.v1.Health service.
//
// main() runs it with a SteadyClock; tests run it in-process on
// 127.0.0.1:0 with a FakeClock.
//
// Lifecycle: construct, Start (binds and serves), Shutdown (answers parked
// waiters with UNAVAILABLE, ends session streams, reports NOT_SERVING, stops
// gRPC waiting at most config.shutdown_grace_ms for in-flight calls, stops
// the timer). The destructor shuts down if needed.
//
// Thread-safety: Start and Shutdown from one controlling thread; owner() may
// be used from any thread.
#ifndef LEASEKEEPER_SERVER_SERVER_H_
#define LEASEKEEPER_SERVER_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "server/clock.h"
#include "server/core_owner.h"
#include "server/expiry_ticker.h"
#include "server/lock_service.h"
#include "server/server_config.h"

namespace leasekeeper::server {

class LeasekeeperServer {
 public:
  // `clock` must outlive the server.
  LeasekeeperServer(ServerConfig config, Clock& clock);
  LeasekeeperServer(const LeasekeeperServer&) = delete;
  LeasekeeperServer& operator=(const LeasekeeperServer&) = delete;
  ~LeasekeeperServer();

  // Binds config.listen and starts serving. Outcomes: OK; UNAVAILABLE if the
  // address cannot be bound; FAILED_PRECONDITION if already started.
  absl::Status Start();

  // The bound address, with the actual port (useful with port 0), e.g.
  // "127.0.0.1:41234". Valid after Start.
  const std::string& address() const { return address_; }
  int port() const { return port_; }

  // Idempotent; a no-op before Start.
  void Shutdown();

  CoreOwner& owner() { return owner_; }

 private:
  const ServerConfig config_;
  Clock& clock_;
  CoreOwner owner_;
  LockServiceImpl service_;
  ExpiryTicker ticker_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SERVER_H_
