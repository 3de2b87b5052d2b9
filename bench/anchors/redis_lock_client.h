// RedisLockClient: the lock most Redis users write (the single-instance
// recipe from the SET command's documentation), through hiredis's
// asynchronous API on an EpollLoop.
//
// Method, per call:
//  - Acquire: SET <lock> <token> NX PX <ttl_ms>, token = client id and a
//    counter, unique per acquisition. "OK" is a grant, nil is "held".
//  - wait: after a failed SET, wait kPollInterval and SET again, until it
//    succeeds. Redis has no queue: waiters are not served in order, and a
//    client that just released may win again.
//  - Release: EVALSHA of the compare-and-delete script
//      if redis.call('get', KEYS[1]) == ARGV[1] then
//        return redis.call('del', KEYS[1]) else return 0 end
//    loaded once by Start() (SCRIPT LOAD), so a holder whose lease ran out
//    never deletes its successor's key.
//  - Expiry: Redis drops a key at its PX deadline (lazily on access, or by
//    its active expiry cycle); the next poll then succeeds.
// One TCP connection per client.

#ifndef LEASEKEEPER_BENCH_ANCHORS_REDIS_LOCK_CLIENT_H_
#define LEASEKEEPER_BENCH_ANCHORS_REDIS_LOCK_CLIENT_H_

#include <hiredis/async.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "epoll_loop.h"
#include "lock_client.h"

namespace leasekeeper::bench {

class RedisLockClient final : public LockClient {
 public:
  static constexpr absl::Duration kPollInterval = absl::Milliseconds(10);

  // target: "host:port".
  RedisLockClient(EpollLoop& loop, const std::string& target,
                  std::string client_id);
  ~RedisLockClient() override;

  Loop& loop() override { return loop_; }
  void Start(Done done) override;
  void Acquire(const std::string& lock, int64_t ttl_ms, bool wait,
               absl::AnyInvocable<void()> on_waiting,
               AcquireDone done) override;
  void Release(const std::string& lock, Done done) override;
  void Stop(absl::AnyInvocable<void()> done) override;

 private:
  struct Connection;  // hiredis context and its epoll registration
  using ReplyFn = absl::AnyInvocable<void(struct redisReply*)>;

  // Sends one command (printf-style, as redisAsyncCommand); fn(reply) runs
  // with nullptr when the connection failed.
  void Command(ReplyFn fn, const char* format, ...);
  void TrySet(const std::string& lock, int64_t ttl_ms, bool wait, bool first,
              std::shared_ptr<absl::AnyInvocable<void()>> on_waiting,
              AcquireDone done);

  EpollLoop& loop_;
  const std::string host_;
  const int port_;
  const std::string client_id_;
  std::unique_ptr<Connection> connection_;
  std::string release_sha_;
  uint64_t next_token_ = 0;
  absl::flat_hash_map<std::string, std::string> tokens_;  // lock -> token held
};

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_REDIS_LOCK_CLIENT_H_
