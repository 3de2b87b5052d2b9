// LocalServer: a real leasekeeperd in a child process, on a free loopback
// port, for tests (yours and ours). Link leasekeeper_client_testing.
//
//   absl::StatusOr<std::unique_ptr<LocalServer>> server = LocalServer::Start();
//   ASSERT_TRUE(server.ok()) << server.status();
//   auto client = Client::Create((*server)->NewChannel());
//   // ~LocalServer stops it (SIGTERM, then SIGKILL after a grace).
//
// It listens on 127.0.0.1 only, on a port the kernel picked, so tests run
// in parallel. The child dies with the thread that started it
// (PR_SET_PDEATHSIG), so a crashed test leaves no server behind.
// Thread-safety: not thread-safe; one owner. Start and stop it on one
// long-lived thread (a test body or a SetUp/TearDown pair).
#ifndef LEASEKEEPER_CLIENT_TESTING_LOCAL_SERVER_H_
#define LEASEKEEPER_CLIENT_TESTING_LOCAL_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace leasekeeper::client::testing {

struct LocalServerOptions {
  // Path of leasekeeperd; empty: FindLeasekeeperd().
  std::string binary;
  // --session-grace; shorter than the daemon's 2 s, so crash tests are quick.
  absl::Duration session_grace = absl::Milliseconds(500);
  // --log-level (the daemon logs to stderr, which the child inherits).
  std::string log_level = "warn";
  // More daemon flags, e.g. {"--max-waiters-per-lock=10"}. Must not
  // contain --listen.
  std::vector<std::string> extra_flags;
  // How long Start waits for the daemon to serve.
  absl::Duration start_timeout = absl::Seconds(20);
};

// The leasekeeperd binary Start would run with an empty options.binary, the
// first of: the environment variable LEASEKEEPERD_BINARY; `leasekeeperd` in
// the directory of the running executable (build/bin, where CMake puts both
// the tests and the daemon); `../bin/leasekeeperd` from there.
// Outcomes: its path; NOT_FOUND naming the places searched.
absl::StatusOr<std::string> FindLeasekeeperd();

class LocalServer {
 public:
  // Starts the daemon with --listen 127.0.0.1:0 and returns once it printed
  // "leasekeeperd listening on 127.0.0.1:PORT", i.e. it serves.
  // Outcomes: the server; NOT_FOUND (no binary); INVALID_ARGUMENT (a
  // --listen in extra_flags); INTERNAL (fork/exec failed, or the daemon
  // exited or printed no address: the message has its exit status);
  // DEADLINE_EXCEEDED (it did not serve within start_timeout; it is killed).
  static absl::StatusOr<std::unique_ptr<LocalServer>> Start(
      LocalServerOptions options = {});

  // Stop(), ignoring the result.
  ~LocalServer();

  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  // "127.0.0.1:PORT".
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  // The daemon's process id; -1 once it was stopped.
  pid_t pid() const { return pid_; }

  // A new plaintext channel to the server.
  std::shared_ptr<grpc::Channel> NewChannel() const;

  // Sends SIGTERM and waits up to `grace` for the daemon to exit, then
  // SIGKILLs it. Outcomes: OK if it exited with status 0 (a clean drain);
  // INTERNAL with its exit status otherwise. No-op (OK) once stopped.
  absl::Status Stop(absl::Duration grace = absl::Seconds(5));

  // SIGKILLs the daemon and reaps it, as a crash would. No-op once stopped.
  void Kill();

 private:
  LocalServer(pid_t pid, std::string address, int port);

  pid_t pid_;
  std::string address_;
  int port_;
};

}  // namespace leasekeeper::client::testing

#endif  // LEASEKEEPER_CLIENT_TESTING_LOCAL_SERVER_H_
