// Property test: random operation sequences over a few clients and locks,
// so that contention, shared runs, lapse chains and deadlocks all happen.
//
// After every step the table's own CheckInvariants() must pass, and the
// test checks from the outside, with the public API only:
//  - every outcome against the state seen just before it (at the same now);
//  - tokens per lock: never issued twice, never going down, no gaps (every
//    grant is seen, as a result or as a kGrantedFromQueue event);
//  - Inspect: compatible holders, listed by token, each a lease that was
//    granted to that client and is still valid (expires_at > now); a
//    waiting head that is not compatible; no wait-for cycle;
//  - Status agrees with Inspect both ways; ages never change except by an
//    abort, and registrations are numbered 1, 2, 3, ...;
//  - FencedStore against a model: the high-water mark never falls, a write
//    is accepted iff token >= mark, reads return the last accepted value.
// Deterministic: fixed seeds of std::mt19937_64, no clock.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/state_machine.h"
#include "gtest/gtest.h"

namespace leasekeeper {
namespace {

constexpr int kClients = 6;
constexpr int kLocks = 4;
constexpr int kKeys = 2;
constexpr int kStepsPerSeed = 3000;

struct Coverage {
  int immediate_grants = 0;
  int queued = 0;
  int queue_grants = 0;
  int deadlocks = 0;         // the requester was aborted
  int aborts_of_others = 0;  // granted or queued with victims
  int shared_groups = 0;     // an Inspect with >= 2 shared holders
  int lapse_chains = 0;      // >= 2 queue grants of one lock in a call
  int busy = 0;
  int withdrawn = 0;
  int stale_writes = 0;
};

bool Compatible(const std::vector<HolderView>& holders, LockMode mode) {
  if (holders.empty()) return true;
  if (mode == LockMode::kExclusive) return false;
  return std::all_of(holders.begin(), holders.end(), [](const HolderView& h) {
    return h.mode == LockMode::kShared;
  });
}

const HolderView* FindHolder(const LockView& view, const std::string& client) {
  for (const HolderView& h : view.holders) {
    if (h.client == client) return &h;
  }
  return nullptr;
}

bool InQueue(const LockView& view, const std::string& client) {
  for (const WaiterView& w : view.queue) {
    if (w.client == client) return true;
  }
  return false;
}

class Harness {
 public:
  // Odd seeds also keep the daemon's idle-client index, which
  // CheckInvariants checks after every step.
  explicit Harness(uint64_t seed)
      : rng_(seed), sm_(CoreConfig{.track_idle_clients = seed % 2 == 1}) {
    for (int i = 0; i < kClients; ++i)
      clients_.push_back("c" + std::to_string(i));
    for (int i = 0; i < kLocks; ++i) locks_.push_back("L" + std::to_string(i));
  }

  void Run(int steps, Coverage& coverage) {
    coverage_ = &coverage;
    for (int step = 0; step < steps; ++step) {
      now_ += Pick({0, 0, 1, 1, 2, 3, 5});
      Step();
      CheckAll();
      if (::testing::Test::HasFailure()) {
        ADD_FAILURE() << "first failure at step " << step << ", now " << now_;
        return;
      }
    }
  }

 private:
  int Pick(std::vector<int> choices) {
    return choices[std::uniform_int_distribution<size_t>(
        0, choices.size() - 1)(rng_)];
  }
  int Uniform(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  // Mostly long leases, so that clients hold several locks while they wait
  // (deadlocks); some short ones, so that leases lapse in chains.
  int64_t Ttl() { return Uniform(0, 3) == 0 ? Uniform(1, 6) : Uniform(20, 80); }
  const std::string& AnyClient() { return clients_[Uniform(0, kClients - 1)]; }
  const std::string& AnyLock() { return locks_[Uniform(0, kLocks - 1)]; }

  LockView InspectNow(const std::string& lock) {
    absl::StatusOr<LockView> view = sm_.Inspect(now_, lock);
    EXPECT_TRUE(view.ok()) << view.status();
    DrainEvents();
    return view.ok() ? *view : LockView{};
  }
  ClientView StatusNow(const std::string& client) {
    absl::StatusOr<ClientView> view = sm_.Status(now_, client);
    EXPECT_TRUE(view.ok()) << view.status();
    DrainEvents();
    return view.ok() ? *view : ClientView{};
  }

  // Records one grant seen in a result or an event. Within one call the
  // same grant may be seen twice (a requester granted after aborts);
  // otherwise a (lock, token) pair must be new.
  void RecordGrant(const std::string& lock, FencingToken token,
                   const std::string& client, int64_t ttl) {
    auto& tokens = granted_[lock];
    auto it = tokens.find(token);
    if (it != tokens.end()) {
      EXPECT_TRUE(granted_this_call_.count({lock, token}) &&
                  it->second == client)
          << "token " << token << " of " << lock << " issued twice: to "
          << it->second << " and to " << client;
      return;
    }
    EXPECT_GT(token, max_before_call_[lock])
        << lock << " token went down or repeated";
    tokens[token] = client;
    granted_this_call_.insert({lock, token});
    last_ttl_[{client, lock}] = ttl;
  }

  void BeginCall() {
    granted_this_call_.clear();
    for (const std::string& lock : locks_) {
      max_before_call_[lock] =
          granted_[lock].empty() ? 0 : granted_[lock].rbegin()->first;
    }
  }

  void DrainEvents() {
    std::map<std::string, int> queue_grants_per_lock;
    for (const Event& e : sm_.TakeEvents()) {
      EXPECT_LE(e.at, now_);
      if (e.kind == Event::Kind::kGrantedFromQueue) {
        RecordGrant(e.lock, e.token, e.client, e.expires_at - e.at);
        ++coverage_->queue_grants;
        if (++queue_grants_per_lock[e.lock] == 2) ++coverage_->lapse_chains;
      }
    }
  }

  void Step() {
    const int kind = Uniform(0, 99);
    const std::string client = AnyClient();
    const std::string lock = AnyLock();
    BeginCall();
    // The state just before the operation, at the same now.
    const LockView pre = InspectNow(lock);
    const ClientView pre_status = StatusNow(client);
    BeginCall();  // the queries may have granted from a queue already

    if (kind < 35) {
      Acquire(client, lock, pre, pre_status);
    } else if (kind < 45) {
      const int64_t ttl = Ttl();
      absl::StatusOr<Reply> r = sm_.Apply({now_, op::Renew{client, lock, ttl}});
      DrainEvents();
      const HolderView* held = FindHolder(pre, client);
      if (held == nullptr) {
        EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kNotHolder);
      } else {
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(std::get<RenewOutcome>(*r).token, held->token);
        EXPECT_EQ(std::get<RenewOutcome>(*r).expires_at, now_ + ttl);
        last_ttl_[{client, lock}] = ttl;
      }
    } else if (kind < 60) {
      absl::StatusOr<Reply> r = sm_.Apply({now_, op::Release{client, lock}});
      DrainEvents();
      if (FindHolder(pre, client) != nullptr) {
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(std::get<ReleaseOutcome>(*r), ReleaseOutcome::kReleased);
      } else if (InQueue(pre, client)) {
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(std::get<ReleaseOutcome>(*r), ReleaseOutcome::kWithdrawn);
        ++coverage_->withdrawn;
      } else {
        EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kNotHolder);
      }
      const LockView post = InspectNow(lock);
      EXPECT_EQ(FindHolder(post, client), nullptr);
      EXPECT_FALSE(InQueue(post, client));
    } else if (kind < 75) {
      Write(lock);
    } else if (kind < 80) {
      const std::string key = "k" + std::to_string(Uniform(0, kKeys - 1));
      absl::StatusOr<std::optional<std::string>> value =
          sm_.Read(now_, lock, key);
      DrainEvents();
      ASSERT_TRUE(value.ok());
      auto it = values_.find({lock, key});
      EXPECT_EQ(*value, it == values_.end()
                            ? std::nullopt
                            : std::optional<std::string>(it->second));
    } else if (kind < 85) {
      absl::StatusOr<Reply> r = sm_.Apply({now_, op::Withdraw{client, lock}});
      DrainEvents();
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(std::get<bool>(*r), InQueue(pre, client));
      // A withdrawal never ends a lease.
      const LockView post = InspectNow(lock);
      for (const HolderView& h : pre.holders) {
        const HolderView* still = FindHolder(post, h.client);
        ASSERT_NE(still, nullptr) << h.client << " lost " << lock;
        EXPECT_EQ(still->token, h.token);
      }
    } else if (kind < 88) {
      absl::StatusOr<Reply> r = sm_.Apply({now_, op::ReleaseAll{client}});
      DrainEvents();
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(std::get<int>(*r), static_cast<int>(pre_status.holds.size()));
      const ClientView post = StatusNow(client);
      EXPECT_TRUE(post.holds.empty());
      EXPECT_EQ(post.waiting, std::nullopt);
      EXPECT_EQ(post.age, pre_status.age) << "ReleaseAll keeps registration";
    } else if (kind < 91) {
      absl::StatusOr<Reply> r = sm_.Apply({now_, op::RenewAll{client}});
      DrainEvents();
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(std::get<int>(*r), static_cast<int>(pre_status.holds.size()));
      const ClientView post = StatusNow(client);
      ASSERT_EQ(post.holds.size(), pre_status.holds.size());
      for (const HolderView& h : post.holds) {
        const int64_t ttl = last_ttl_[std::make_pair(client, h.lock)];
        EXPECT_EQ(h.expires_at, now_ + ttl) << client << " on " << h.lock;
      }
    } else if (kind < 95) {
      absl::StatusOr<Reply> r = sm_.Apply({now_, op::Advance{}});
      DrainEvents();
      EXPECT_TRUE(r.ok());
    } else {
      // A pure query; the checks after the step look at everything.
      InspectNow(lock);
      StatusNow(client);
    }
  }

  void Acquire(const std::string& client, const std::string& lock,
               const LockView& pre, const ClientView& pre_status) {
    const int64_t ttl = Ttl();
    const LockMode mode =
        Uniform(0, 1) == 0 ? LockMode::kShared : LockMode::kExclusive;
    absl::StatusOr<Reply> r =
        sm_.Apply({now_, op::Acquire{client, lock, ttl, mode}});
    // The requester's own grant first, then the grants its aborts caused.
    if (r.ok()) {
      const auto& out = std::get<AcquireOutcome>(*r);
      if (out.kind == AcquireOutcome::Kind::kGranted) {
        RecordGrant(lock, out.token, client, ttl);
      }
    }
    DrainEvents();

    const bool busy =
        pre_status.waiting.has_value() || FindHolder(pre, client) != nullptr;
    if (busy) {
      EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kClientBusy)
          << client << " holds or waits";
      ++coverage_->busy;
      return;
    }
    ASSERT_TRUE(r.ok()) << r.status();
    const auto& out = std::get<AcquireOutcome>(*r);
    if (!pre_status.age.has_value()) ++registrations_;

    if (pre.queue.empty() && Compatible(pre.holders, mode)) {
      // Immediate grant: the lock's next token, [now, now + ttl).
      EXPECT_EQ(out.kind, AcquireOutcome::Kind::kGranted);
      EXPECT_EQ(out.token, max_before_call_[lock] + 1);
      EXPECT_EQ(out.expires_at, now_ + ttl);
      EXPECT_TRUE(out.aborted.empty());
      ++coverage_->immediate_grants;
    } else {
      switch (out.kind) {
        case AcquireOutcome::Kind::kGranted:
          // Only aborts can grant a request that had to queue.
          EXPECT_FALSE(out.aborted.empty()) << client << " overtook the queue";
          EXPECT_EQ(out.expires_at, now_ + ttl);
          ++coverage_->aborts_of_others;
          break;
        case AcquireOutcome::Kind::kQueued:
          if (out.aborted.empty()) {
            EXPECT_EQ(out.position, static_cast<int64_t>(pre.queue.size()) + 1);
            ++coverage_->queued;
          } else {
            EXPECT_GE(out.position, 1);
            EXPECT_LE(out.position, static_cast<int64_t>(pre.queue.size()) + 1);
            ++coverage_->aborts_of_others;
          }
          break;
        case AcquireOutcome::Kind::kDeadlock:
          ASSERT_FALSE(out.aborted.empty());
          EXPECT_EQ(out.aborted.back(), client);
          ++coverage_->deadlocks;
          break;
      }
    }
    // Victims are distinct, unregistered, and lose everything.
    std::set<std::string> victims(out.aborted.begin(), out.aborted.end());
    EXPECT_EQ(victims.size(), out.aborted.size());
    for (const std::string& victim : out.aborted) {
      if (victim != client) {
        EXPECT_TRUE(ages_.count(victim)) << victim << " was not registered";
      }
      const ClientView v = StatusNow(victim);
      EXPECT_EQ(v.age, std::nullopt) << victim;
      EXPECT_TRUE(v.holds.empty()) << victim;
      EXPECT_EQ(v.waiting, std::nullopt) << victim;
      ages_.erase(victim);
    }
    if (out.kind != AcquireOutcome::Kind::kDeadlock) {
      const ClientView post = StatusNow(client);
      if (!pre_status.age.has_value()) {
        EXPECT_EQ(post.age, std::optional<uint64_t>(registrations_))
            << "registrations are numbered in order";
        ages_[client] = registrations_;
      }
    }
  }

  void Write(const std::string& lock) {
    const std::string key = "k" + std::to_string(Uniform(0, kKeys - 1));
    const std::string value = "v" + std::to_string(++value_counter_);
    const FencingToken top =
        granted_[lock].empty() ? 0 : granted_[lock].rbegin()->first;
    const FencingToken token = Uniform(1, static_cast<int>(top) + 1);
    absl::StatusOr<Reply> r =
        sm_.Apply({now_, op::Write{lock, key, value, token}});
    DrainEvents();
    FencingToken& mark = high_water_[lock];
    if (token >= mark) {
      EXPECT_TRUE(r.ok()) << r.status() << " token " << token << " mark "
                          << mark;
      mark = token;
      values_[{lock, key}] = value;
    } else {
      EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kStaleToken);
      ++coverage_->stale_writes;
    }
  }

  void CheckAll() {
    absl::Status invariants = sm_.table().CheckInvariants();
    ASSERT_TRUE(invariants.ok()) << invariants;

    std::map<std::string, LockView> views;
    std::map<std::string, std::set<std::string>> edges;  // wait-for graph
    std::map<std::string, std::pair<std::string, FencingToken>> holds_seen;
    for (const std::string& lock : locks_) {
      const LockView view = InspectNow(lock);
      views[lock] = view;
      bool any_exclusive = false;
      FencingToken previous = 0;
      for (const HolderView& h : view.holders) {
        if (h.mode == LockMode::kExclusive) any_exclusive = true;
        EXPECT_GT(h.token, previous) << lock << " holders not by token";
        previous = h.token;
        EXPECT_GT(h.expires_at, now_) << h.client << " on " << lock;
        auto it = granted_[lock].find(h.token);
        ASSERT_NE(it, granted_[lock].end())
            << lock << " token " << h.token << " was never reported granted";
        EXPECT_EQ(it->second, h.client) << lock << " token " << h.token;
        EXPECT_EQ(h.lock, lock);
      }
      if (any_exclusive) {
        EXPECT_EQ(view.holders.size(), 1u) << lock << " incompatible holders";
      }
      if (view.holders.size() >= 2) ++coverage_->shared_groups;
      if (!view.queue.empty()) {
        EXPECT_FALSE(Compatible(view.holders, view.queue.front().mode))
            << lock << " head could have been granted";
      }
      std::set<std::string> ahead;
      for (const WaiterView& w : view.queue) {
        EXPECT_EQ(FindHolder(view, w.client), nullptr)
            << w.client << " holds and waits for " << lock;
        for (const HolderView& h : view.holders)
          edges[w.client].insert(h.client);
        for (const std::string& a : ahead) edges[w.client].insert(a);
        EXPECT_TRUE(ahead.insert(w.client).second)
            << w.client << " queued twice";
      }
      // The store's mark never falls and matches the model.
      const FencingToken mark = sm_.store().HighWater(lock);
      EXPECT_GE(mark, last_mark_[lock]);
      EXPECT_EQ(mark, high_water_[lock]);
      last_mark_[lock] = mark;
    }

    for (const std::string& client : clients_) {
      const ClientView status = StatusNow(client);
      // Ages change only by an abort (already removed from ages_).
      auto age = ages_.find(client);
      EXPECT_EQ(status.age, age == ages_.end()
                                ? std::nullopt
                                : std::optional<uint64_t>(age->second))
          << client;
      if (!status.holds.empty() || status.waiting.has_value()) {
        EXPECT_TRUE(status.age.has_value()) << client;
      }
      std::string previous;
      for (const HolderView& h : status.holds) {
        EXPECT_LT(previous, h.lock) << client << " holds not sorted";
        previous = h.lock;
        const HolderView* in_view = FindHolder(views[h.lock], client);
        ASSERT_NE(in_view, nullptr) << client << " on " << h.lock;
        EXPECT_EQ(in_view->token, h.token);
        EXPECT_EQ(in_view->expires_at, h.expires_at);
        EXPECT_EQ(in_view->mode, h.mode);
      }
      size_t held_in_views = 0;
      std::optional<std::string> waiting_in_views;
      for (const auto& [lock, view] : views) {
        if (FindHolder(view, client) != nullptr) ++held_in_views;
        if (InQueue(view, client)) {
          EXPECT_FALSE(waiting_in_views.has_value())
              << client << " waits twice";
          waiting_in_views = lock;
        }
      }
      EXPECT_EQ(held_in_views, status.holds.size()) << client;
      EXPECT_EQ(waiting_in_views, status.waiting) << client;
    }

    // No wait-for cycle: depth-first search with colours.
    std::map<std::string, int> colour;  // 0 new, 1 on stack, 2 done
    std::function<bool(const std::string&)> has_cycle =
        [&](const std::string& c) {
          colour[c] = 1;
          for (const std::string& next : edges[c]) {
            if (colour[next] == 1) return true;
            if (colour[next] == 0 && has_cycle(next)) return true;
          }
          colour[c] = 2;
          return false;
        };
    for (const std::string& client : clients_) {
      if (colour[client] == 0) {
        EXPECT_FALSE(has_cycle(client)) << "wait-for cycle through " << client;
      }
    }

    // Tokens per lock have no gaps: every grant was seen.
    for (const std::string& lock : locks_) {
      const auto& tokens = granted_[lock];
      if (!tokens.empty()) {
        EXPECT_EQ(tokens.rbegin()->first, tokens.size())
            << lock << " token gap";
      }
    }
  }

  std::mt19937_64 rng_;
  StateMachine sm_;
  Coverage* coverage_ = nullptr;
  Tick now_ = 0;
  std::vector<std::string> clients_;
  std::vector<std::string> locks_;
  std::map<std::string, std::map<FencingToken, std::string>> granted_;
  std::map<std::string, FencingToken> max_before_call_;
  std::set<std::pair<std::string, FencingToken>> granted_this_call_;
  std::map<std::pair<std::string, std::string>, int64_t> last_ttl_;
  std::map<std::string, uint64_t> ages_;
  uint64_t registrations_ = 0;
  std::map<std::string, FencingToken> high_water_;
  std::map<std::string, FencingToken> last_mark_;
  std::map<std::pair<std::string, std::string>, std::string> values_;
  int value_counter_ = 0;
};

TEST(Property, RandomOperationsKeepEveryInvariant) {
  Coverage coverage;
  for (uint64_t seed : {1u, 2u, 3u, 5u, 8u, 13u, 21u, 34u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Harness harness(seed);
    harness.Run(kStepsPerSeed, coverage);
    if (HasFailure()) return;
  }
  // The sequences must reach the interesting states, or the checks above
  // prove little.
  EXPECT_GT(coverage.immediate_grants, 100);
  EXPECT_GT(coverage.queued, 100);
  EXPECT_GT(coverage.queue_grants, 100);
  EXPECT_GT(coverage.deadlocks, 20);
  EXPECT_GT(coverage.aborts_of_others, 20);
  EXPECT_GT(coverage.shared_groups, 50);
  EXPECT_GT(coverage.lapse_chains, 50);
  EXPECT_GT(coverage.busy, 50);
  EXPECT_GT(coverage.withdrawn, 20);
  EXPECT_GT(coverage.stale_writes, 20);
  std::cout << "coverage: grants " << coverage.immediate_grants << ", queued "
            << coverage.queued << ", queue grants " << coverage.queue_grants
            << ", deadlocks " << coverage.deadlocks << ", aborts of others "
            << coverage.aborts_of_others << ", shared groups "
            << coverage.shared_groups << ", lapse chains "
            << coverage.lapse_chains << ", busy " << coverage.busy
            << ", withdrawn " << coverage.withdrawn << ", stale writes "
            << coverage.stale_writes << "\n";
}

}  // namespace
}  // namespace leasekeeper
