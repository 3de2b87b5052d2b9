// leasekeeper-test-client: a client process for tests that need a peer to
// die (disconnect, session loss). It never exits on its own after it has
// reached its waiting point; the test kills it.
//
//   test_client wait ADDR CLIENT LOCK TTL_MS WAIT_MS
//       prints "started", then waits in Acquire; prints the outcome if the
//       call ever returns.
//   test_client session-hold ADDR CLIENT LOCK TTL_MS [CAPACITY]
//       opens a session, acquires LOCK in it (a permit of a semaphore of
//       CAPACITY if given), prints
//       "holding SESSION_ID TOKEN", then sleeps until killed.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"

namespace pb = ::leasekeeper::v1;

namespace {

int Wait(pb::LockService::Stub& stub, char** argv) {
  pb::AcquireRequest request;
  request.set_client_id(argv[3]);
  request.set_lock(argv[4]);
  request.set_ttl_ms(std::atoll(argv[5]));
  request.set_wait_timeout_ms(std::atoll(argv[6]));
  std::printf("started\n");
  std::fflush(stdout);
  grpc::ClientContext context;
  pb::AcquireResponse response;
  grpc::Status status = stub.Acquire(&context, request, &response);
  std::printf("done %d %s\n", static_cast<int>(status.error_code()),
              response.ShortDebugString().c_str());
  std::fflush(stdout);
  pause();
  return 0;
}

int SessionHold(pb::LockService::Stub& stub, char** argv) {
  grpc::ClientContext session_context;
  auto stream = stub.Session(&session_context);
  pb::SessionRequest open;
  open.mutable_open()->set_client_id(argv[3]);
  pb::SessionResponse opened;
  if (!stream->Write(open) || !stream->Read(&opened) || !opened.has_opened()) {
    std::printf("error opening session\n");
    return 1;
  }
  pb::AcquireRequest request;
  request.set_client_id(argv[3]);
  request.set_lock(argv[4]);
  request.set_ttl_ms(std::atoll(argv[5]));
  request.set_session_id(opened.opened().session_id());
  if (argv[6] != nullptr) {
    request.set_mode(pb::LOCK_MODE_SEMAPHORE);
    request.set_capacity(static_cast<uint32_t>(std::atoll(argv[6])));
  }
  grpc::ClientContext context;
  pb::AcquireResponse response;
  grpc::Status status = stub.Acquire(&context, request, &response);
  if (!status.ok() || !response.has_granted()) {
    std::printf("error acquiring: %s\n", status.error_message().c_str());
    return 1;
  }
  std::printf("holding %s %llu\n", opened.opened().session_id().c_str(),
              static_cast<unsigned long long>(response.granted().token()));
  std::fflush(stdout);
  pause();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "wait" && argc == 7) ||
        (mode == "session-hold" && (argc == 6 || argc == 7)))) {
    std::fprintf(stderr,
                 "usage: %s wait ADDR CLIENT LOCK TTL_MS WAIT_MS\n"
                 "       %s session-hold ADDR CLIENT LOCK TTL_MS [CAPACITY]\n",
                 argv[0], argv[0]);
    return 2;
  }
  auto channel =
      grpc::CreateChannel(argv[2], grpc::InsecureChannelCredentials());
  std::unique_ptr<pb::LockService::Stub> stub =
      pb::LockService::NewStub(channel);
  return mode == "wait" ? Wait(*stub, argv) : SessionHold(*stub, argv);
}
