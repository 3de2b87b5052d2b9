#include "crash_holder.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "grpc_channel.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"
#include "loop.h"

extern char** environ;

namespace leasekeeper::bench {
namespace {

constexpr absl::Duration kSpawnTimeout = absl::Seconds(10);
constexpr absl::Duration kKeepaliveInterval = absl::Seconds(1);

}  // namespace

absl::StatusOr<std::unique_ptr<CrashHolder>> CrashHolder::Spawn(
    const std::string& target, const std::string& client_id,
    const std::string& lock, int64_t ttl_ms) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return absl::InternalError("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  std::vector<std::string> args = {"leasekeeper-bench",
                                   "--workload=session_holder",
                                   "--system=leasekeeper",
                                   absl::StrCat("--target=", target),
                                   absl::StrCat("--client_id=", client_id),
                                   absl::StrCat("--lock=", lock),
                                   absl::StrCat("--ttl_ms=", ttl_ms)};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(),
                       environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    return absl::InternalError(absl::StrCat("posix_spawn: ", rc));
  }
  auto holder = std::unique_ptr<CrashHolder>(new CrashHolder(pid, 0));
  // Read "held <grace_ms>\n".
  std::string line;
  int64_t deadline = NowNs() + absl::ToInt64Nanoseconds(kSpawnTimeout);
  while (line.find('\n') == std::string::npos) {
    pollfd p{out[0], POLLIN, 0};
    int left_ms = static_cast<int>((deadline - NowNs()) / 1'000'000);
    if (left_ms <= 0 || poll(&p, 1, left_ms) <= 0) break;
    char buffer[128];
    ssize_t n = read(out[0], buffer, sizeof(buffer));
    if (n <= 0) break;
    line.append(buffer, n);
  }
  close(out[0]);
  int64_t grace_ms = 0;
  if (line.rfind("held ", 0) != 0 ||
      !absl::SimpleAtoi(line.substr(5, line.find('\n') - 5), &grace_ms)) {
    return absl::InternalError(
        absl::StrCat("session holder did not take the lock: ", line));
  }
  holder->grace_ms_ = grace_ms;
  return holder;
}

CrashHolder::~CrashHolder() {
  if (!killed_) kill(pid_, SIGKILL);
  int status;
  waitpid(pid_, &status, 0);
}

int64_t CrashHolder::Kill() {
  int64_t now = NowNs();
  kill(pid_, SIGKILL);
  killed_ = true;
  return now;
}

int RunSessionHolder(const std::string& target, const std::string& client_id,
                     const std::string& lock, int64_t ttl_ms) {
  auto stub = v1::LockService::NewStub(OwnConnection(target));
  grpc::ClientContext session_context;
  auto session = stub->Session(&session_context);
  v1::SessionRequest open;
  open.mutable_open()->set_client_id(client_id);
  v1::SessionResponse opened;
  if (!session->Write(open) || !session->Read(&opened) ||
      !opened.has_opened()) {
    std::fprintf(stderr, "session_holder: no session: %s\n",
                 StatusText(session->Finish()).c_str());
    return 1;
  }
  v1::AcquireRequest request;
  request.set_client_id(client_id);
  request.set_lock(lock);
  request.set_ttl_ms(ttl_ms);
  request.set_session_id(opened.opened().session_id());
  v1::AcquireResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub->Acquire(&context, request, &response);
  if (!status.ok() || !response.has_granted()) {
    std::fprintf(stderr, "session_holder: not granted: %s\n",
                 StatusText(status).c_str());
    return 1;
  }
  std::printf("held %lld\n",
              static_cast<long long>(opened.opened().grace_ms()));
  std::fflush(stdout);
  // Acks are read by a thread of their own so the stream never stalls.
  std::thread reader([&session] {
    v1::SessionResponse message;
    while (session->Read(&message)) {
    }
  });
  reader.detach();
  int64_t end = NowNs() + absl::ToInt64Nanoseconds(CrashHolder::kMaxLifetime);
  for (uint64_t sequence = 1; NowNs() < end; ++sequence) {
    std::this_thread::sleep_for(absl::ToChronoMilliseconds(kKeepaliveInterval));
    v1::SessionRequest keepalive;
    keepalive.mutable_keepalive()->set_sequence(sequence);
    if (!session->Write(keepalive)) break;
  }
  std::_Exit(0);  // unkilled: leave without tearing the stream down politely
}

}  // namespace leasekeeper::bench
