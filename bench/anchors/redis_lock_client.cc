#include "redis_lock_client.h"

#include <hiredis/hiredis.h>
#include <sys/epoll.h>

#include <cstdarg>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace leasekeeper::bench {
namespace {

constexpr char kReleaseScript[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('del', KEYS[1]) else return 0 end";

std::string HostOf(const std::string& target) {
  return target.substr(0, target.rfind(':'));
}

int PortOf(const std::string& target) {
  int port = 0;
  (void)absl::SimpleAtoi(target.substr(target.rfind(':') + 1), &port);
  return port;
}

std::string ReplyError(redisReply* reply) {
  if (reply == nullptr) return "redis: connection lost";
  return absl::StrCat("redis: unexpected reply type ", reply->type, " ",
                      reply->str != nullptr ? reply->str : "");
}

}  // namespace

// hiredis's event hooks, on an EpollLoop. Writes are flushed once per loop
// batch (EpollLoop::Defer); only a write the socket could not take whole
// waits for EPOLLOUT.
struct RedisLockClient::Connection {
  EpollLoop* loop = nullptr;
  redisAsyncContext* context = nullptr;
  uint32_t events = 0;
  int fd = -1;
  bool flush_scheduled = false;
  bool flushing = false;

  void Update(uint32_t add, uint32_t remove) {
    uint32_t next = (events | add) & ~remove;
    if (next == events || context == nullptr) return;
    events = next;
    loop->SetEvents(fd, events);
  }
  void Flush() {
    flush_scheduled = false;
    if (context == nullptr) return;
    flushing = true;
    redisAsyncHandleWrite(context);  // may free the context (Cleanup)
    flushing = false;
  }
  static void AddRead(void* self) {
    static_cast<Connection*>(self)->Update(EPOLLIN, 0);
  }
  static void DelRead(void* self) {
    static_cast<Connection*>(self)->Update(0, EPOLLIN);
  }
  static void AddWrite(void* self) {
    auto* c = static_cast<Connection*>(self);
    // Before the connection is up, and when a flush could not write all,
    // wait for the socket to be writable.
    if (c->flushing || (c->context->c.flags & REDIS_CONNECTED) == 0) {
      c->Update(EPOLLOUT, 0);
      return;
    }
    if (!c->flush_scheduled) {
      c->flush_scheduled = true;
      c->loop->Defer([c] { c->Flush(); });
    }
  }
  static void DelWrite(void* self) {
    static_cast<Connection*>(self)->Update(0, EPOLLOUT);
  }
  static void Cleanup(void* self) {
    auto* connection = static_cast<Connection*>(self);
    connection->loop->Unwatch(connection->fd);
    connection->context = nullptr;  // hiredis frees it
  }
  void OnEvents(uint32_t ready) {
    if (context != nullptr && (ready & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) {
      redisAsyncHandleRead(context);
    }
    // The read may have freed the context (Cleanup cleared it).
    if (context != nullptr && (ready & EPOLLOUT) != 0)
      redisAsyncHandleWrite(context);
  }
};

RedisLockClient::RedisLockClient(EpollLoop& loop, const std::string& target,
                                 std::string client_id)
    : loop_(loop),
      host_(HostOf(target)),
      port_(PortOf(target)),
      client_id_(std::move(client_id)) {}

RedisLockClient::~RedisLockClient() = default;

void RedisLockClient::Start(Done done) {
  connection_ = std::make_unique<Connection>();
  redisAsyncContext* context = redisAsyncConnect(host_.c_str(), port_);
  if (context == nullptr || context->err != 0) {
    std::string error = context != nullptr ? context->errstr : "out of memory";
    if (context != nullptr) redisAsyncFree(context);
    done("redis connect: " + error);
    return;
  }
  Connection* c = connection_.get();
  c->loop = &loop_;
  c->context = context;
  c->fd = context->c.fd;
  context->ev.data = c;
  context->ev.addRead = &Connection::AddRead;
  context->ev.delRead = &Connection::DelRead;
  context->ev.addWrite = &Connection::AddWrite;
  context->ev.delWrite = &Connection::DelWrite;
  context->ev.cleanup = &Connection::Cleanup;
  loop_.Watch(c->fd, 0, [c](uint32_t ready) { c->OnEvents(ready); });
  Command(
      [this, done = std::move(done)](redisReply* reply) mutable {
        if (reply == nullptr || reply->type != REDIS_REPLY_STRING) {
          done(ReplyError(reply));
          return;
        }
        release_sha_.assign(reply->str, reply->len);
        done("");
      },
      "SCRIPT LOAD %s", kReleaseScript);
}

void RedisLockClient::Command(ReplyFn fn, const char* format, ...) {
  auto* owned = new ReplyFn(std::move(fn));
  auto on_reply = [](redisAsyncContext*, void* reply, void* privdata) {
    std::unique_ptr<ReplyFn> callback(static_cast<ReplyFn*>(privdata));
    (*callback)(static_cast<redisReply*>(reply));
  };
  int status = REDIS_ERR;
  if (connection_ != nullptr && connection_->context != nullptr) {
    va_list args;
    va_start(args, format);
    status =
        redisvAsyncCommand(connection_->context, on_reply, owned, format, args);
    va_end(args);
  }
  if (status != REDIS_OK) {
    std::unique_ptr<ReplyFn> callback(owned);
    (*callback)(nullptr);
  }
}

void RedisLockClient::Acquire(const std::string& lock, int64_t ttl_ms,
                              bool wait, absl::AnyInvocable<void()> on_waiting,
                              AcquireDone done) {
  TrySet(lock, ttl_ms, wait, /*first=*/true,
         on_waiting ? std::make_shared<absl::AnyInvocable<void()>>(
                          std::move(on_waiting))
                    : nullptr,
         std::move(done));
}

void RedisLockClient::TrySet(
    const std::string& lock, int64_t ttl_ms, bool wait, bool first,
    std::shared_ptr<absl::AnyInvocable<void()>> on_waiting, AcquireDone done) {
  std::string token = absl::StrCat(client_id_, "/", ++next_token_);
  int64_t sent_ns = NowNs();
  Command(
      [this, lock, ttl_ms, wait, first, token, sent_ns, on_waiting,
       done = std::move(done)](redisReply* reply) mutable {
        AcquireResult result;
        result.lease_start_ns = sent_ns;
        if (reply != nullptr && reply->type == REDIS_REPLY_STATUS) {
          tokens_[lock] = token;
          result.granted = true;
          result.ttl_ms = ttl_ms;
          done(std::move(result));
        } else if (reply != nullptr && reply->type == REDIS_REPLY_NIL) {
          if (!wait) {
            done(std::move(result));
            return;
          }
          if (first && on_waiting) (*on_waiting)();
          loop_.After(kPollInterval, [this, lock, ttl_ms, on_waiting,
                                      done = std::move(done)]() mutable {
            TrySet(lock, ttl_ms, /*wait=*/true, /*first=*/false, on_waiting,
                   std::move(done));
          });
        } else {
          result.error = ReplyError(reply);
          done(std::move(result));
        }
      },
      "SET %b %b NX PX %lld", lock.data(), lock.size(), token.data(),
      token.size(), static_cast<long long>(ttl_ms));
}

void RedisLockClient::Release(const std::string& lock, Done done) {
  auto it = tokens_.find(lock);
  if (it == tokens_.end()) {
    done("not holder");
    return;
  }
  std::string token = std::move(it->second);
  tokens_.erase(it);
  Command(
      [done = std::move(done)](redisReply* reply) mutable {
        if (reply == nullptr || reply->type != REDIS_REPLY_INTEGER) {
          done(ReplyError(reply));
        } else {
          done(reply->integer == 1 ? "" : "not holder");
        }
      },
      "EVALSHA %s 1 %b %b", release_sha_.c_str(), lock.data(), lock.size(),
      token.data(), token.size());
}

void RedisLockClient::Stop(absl::AnyInvocable<void()> done) {
  if (connection_ != nullptr && connection_->context != nullptr) {
    redisAsyncDisconnect(connection_->context);  // no reply pending: frees now
  }
  done();
}

}  // namespace leasekeeper::bench
