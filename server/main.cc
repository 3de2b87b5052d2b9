// leasekeeperd: the leasekeeper lock service daemon.
//
// Parses flags (server/flags.h), serves until SIGTERM or SIGINT, then drains:
// parked waiters are answered UNAVAILABLE, session streams ended, gRPC stops
// within --shutdown-grace, and the process exits 0 (well within 5 s).
// SIGHUP re-reads the TLS files and the policy without dropping anything
// (LeasekeeperServer::ReloadSecurity: a broken new file keeps the old one
// and is logged at error) and serving goes on.
// Prints "leasekeeperd listening on HOST:PORT" on stdout once it serves;
// logs go to stderr, one logfmt line each (server/logging.h).
#include <pthread.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "server/clock.h"
#include "server/flags.h"
#include "server/logging.h"
#include "server/server.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace {

// Blocks the signals the daemon handles; every thread created from then on
// inherits the mask, so they are delivered only to sigwait in
// ServeUntilStopped.
sigset_t BlockHandledSignals() {
  sigset_t handled_signals;
  sigemptyset(&handled_signals);
  sigaddset(&handled_signals, SIGTERM);
  sigaddset(&handled_signals, SIGINT);
  sigaddset(&handled_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &handled_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return handled_signals;
}

// Serves until SIGTERM or SIGINT (SIGHUP reloads the security files), then
// shuts the server down and destroys it.
void ServeUntilStopped(
    std::unique_ptr<leasekeeper::server::LeasekeeperServer> server,
    const sigset_t& handled_signals) {
  int signal_number = 0;
  while (sigwait(&handled_signals, &signal_number) == 0 &&
         signal_number == SIGHUP) {
    spdlog::info("event=reload_requested signal={}", signal_number);
    // Each part logs its own outcome; a failure keeps the daemon serving
    // with what it had.
    (void)server->ReloadSecurity();
  }
  const auto stop_started = std::chrono::steady_clock::now();
  spdlog::info("event=server_stopping signal={}", signal_number);
  server->Shutdown();
  server.reset();
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - stop_started);
  spdlog::info("event=server_stopped elapsed_ms={}", elapsed.count());
}

}  // namespace

int main(int argc, char** argv) {
  // Debian builds Abseil without NDEBUG, which turns on absl::Mutex's
  // deadlock-cycle detection for every lock, gRPC's included: about 7% of
  // the daemon's CPU under load (bench/README.md). Lock order is checked by
  // clang's -Wthread-safety and the tests instead.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#ifdef LEASEKEEPER_FAILPOINT_UNGUARDED_APPEND
  // The fault suite's deliberately broken build (cluster/etcd_log.h).
  std::fputs(
      "leasekeeperd: WARNING: built with FAILPOINT unguarded-append "
      "(LEASEKEEPER_FAILPOINT_UNGUARDED_APPEND): a cluster leader appends "
      "to etcd without its guard and never fences itself on its lease. "
      "UNSAFE: for tests/fault/run-unguarded only, never for real use.\n",
      stderr);
#endif
  using leasekeeper::server::DaemonOptions;
  absl::StatusOr<DaemonOptions> options =
      leasekeeper::server::ParseDaemonFlags(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr,
                 "leasekeeperd: %s\n(leasekeeperd --help lists the flags)\n",
                 std::string(options.status().message()).c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(leasekeeper::server::DaemonUsage().c_str(), stdout);
    return 0;
  }

  // One format for every line, gRPC's and protobuf's own included
  // (server/logging.h).
  leasekeeper::server::InstallDaemonLogger(
      spdlog::stderr_logger_mt("leasekeeperd"),
      spdlog::level::from_str(options->log_level));
  leasekeeper::server::RouteLibraryLogs();

  const sigset_t handled_signals = BlockHandledSignals();

  // A deposed cluster leader cannot follow again in-process (its core may
  // hold operations the log never took): it exits for its supervisor to
  // restart it as a follower (server/cluster_node.h).
  options->config.cluster.deposed_exit = [] {
    spdlog::error("event=server_exit_deposed exit_code={}",
                  leasekeeper::server::kDeposedExitCode);
    std::fflush(stderr);
    std::_Exit(leasekeeper::server::kDeposedExitCode);
  };

  leasekeeper::server::SteadyClock clock;
  auto server = std::make_unique<leasekeeper::server::LeasekeeperServer>(
      options->config, clock);
  if (absl::Status started = server->Start(); !started.ok()) {
    spdlog::error("event=start_failed error=\"{}\"",
                  std::string(started.message()));
    return 1;
  }
  std::printf("leasekeeperd listening on %s\n", server->address().c_str());
  std::fflush(stdout);
  spdlog::info("event=server_started listen={} session_grace_ms={}",
               server->address(), options->config.session_grace_ms);
  ServeUntilStopped(std::move(server), handled_signals);
  return 0;
}
