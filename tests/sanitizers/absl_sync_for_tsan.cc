// Tells ThreadSanitizer about Abseil's locks. Debian's Abseil is not built
// with -fsanitize=thread, so absl::Mutex and absl::CondVar (and
// absl::Notification and absl::BlockingCounter, which are made of them)
// synchronise where TSan cannot see it, and every member guarded by an
// absl::Mutex, ours and gRPC's, would be reported as a race.
//
// `scripts/sanitize tsan` preloads this library (LD_PRELOAD) into every
// process its tests start, so its definitions win over Abseil's. It
// replaces the exported entry points of those four classes: each calls
// Abseil's own (found with dlsym(RTLD_NEXT)) and marks the mutex's address
// (the notification's, the counter's) as released before the lock is given
// up (the notice sent, the count decremented) and acquired after it is
// taken (the notice or the zero seen), which gives TSan the happens-before
// edges Abseil provides. Lock order is not modelled: TSan's deadlock
// detector does not see these.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

#define LEASEKEEPER_STRINGIFY_INNER(x) #x
#define LEASEKEEPER_STRINGIFY(x) LEASEKEEPER_STRINGIFY_INNER(x)

// Abseil's own definition of the member whose mangled name is "_ZN" ("_ZNK"
// for a const member) + "4absl" + <the inline namespace> + `rest`; aborts if
// there is none.
template <typename Function>
Function Real(const char* rest, bool const_member = false) {
  const std::string space =
      LEASEKEEPER_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name =
      std::string(const_member ? "_ZNK" : "_ZN") + "4absl" + std::to_string(space.size()) + space + rest;
  void* real = dlsym(RTLD_NEXT, name.c_str());
  if (real == nullptr) {
    std::fprintf(stderr, "absl_sync_for_tsan: Abseil has no %s\n",
                 name.c_str());
    std::abort();
  }
  return reinterpret_cast<Function>(real);
}

void Acquired(const void* mu) { __tsan_acquire(const_cast<void*>(mu)); }
void Releasing(const void* mu) { __tsan_release(const_cast<void*>(mu)); }

// Abseil evaluates a waiter's condition with the mutex held on its behalf,
// in Await or LockWhen or in another thread's Unlock: the evaluation is a
// critical section of its own, between an acquire and a release. The waiter releases the mutex after it made the
// condition and before it waits, which publishes the condition to the
// thread that evaluates it.
struct HeldCondition {
  const absl::Mutex* mu;
  const absl::Condition* cond;
};
bool EvalHeld(HeldCondition* held) {
  Acquired(held->mu);
  const bool met = held->cond->Eval();
  Releasing(held->mu);
  return met;
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex4LockEv");
  real(this);
  Acquired(this);
}

void Mutex::ReaderLock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  real(this);
  Acquired(this);
}

bool Mutex::TryLock() {
  static const auto real = Real<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) Acquired(this);
  return locked;
}

bool Mutex::ReaderTryLock() {
  static const auto real = Real<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) Acquired(this);
  return locked;
}

void Mutex::Unlock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex6UnlockEv");
  Releasing(this);
  real(this);
}

void Mutex::ReaderUnlock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  Releasing(this);
  real(this);
}

void Mutex::LockWhen(const Condition& cond) {
  static const auto real = Real<void (*)(Mutex*, const Condition&)>(
      "5Mutex8LockWhenERKNS0_9ConditionE");
  HeldCondition held{this, &cond};
  const Condition held_cond(EvalHeld, &held);
  Releasing(this);
  real(this, held_cond);
  Acquired(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static const auto real = Real<void (*)(Mutex*, const Condition&)>(
      "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  HeldCondition held{this, &cond};
  const Condition held_cond(EvalHeld, &held);
  Releasing(this);
  real(this, held_cond);
  Acquired(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  HeldCondition held{this, &cond};
  const Condition held_cond(EvalHeld, &held);
  Releasing(this);
  const bool met = real(this, held_cond, timeout);
  Acquired(this);
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  HeldCondition held{this, &cond};
  const Condition held_cond(EvalHeld, &held);
  Releasing(this);
  const bool met = real(this, held_cond, deadline);
  Acquired(this);
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond,
                                      Duration timeout) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  HeldCondition held{this, &cond};
  const Condition held_cond(EvalHeld, &held);
  Releasing(this);
  const bool met = real(this, held_cond, timeout);
  Acquired(this);
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  HeldCondition held{this, &cond};
  const Condition held_cond(EvalHeld, &held);
  Releasing(this);
  const bool met = real(this, held_cond, deadline);
  Acquired(this);
  return met;
}

// Await and CondVar::Wait give the lock up while they wait and take it back;
// so does LockWhen, which may wait too.
void Mutex::Await(const Condition& cond) {
  static const auto real = Real<void (*)(Mutex*, const Condition&)>(
      "5Mutex5AwaitERKNS0_9ConditionE");
  HeldCondition held{this, &cond};
  const Condition held_cond(EvalHeld, &held);
  Releasing(this);
  real(this, held_cond);
  Acquired(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  HeldCondition held{this, &cond};
  const Condition held_cond(EvalHeld, &held);
  Releasing(this);
  const bool met = real(this, held_cond, timeout);
  Acquired(this);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  HeldCondition held{this, &cond};
  const Condition held_cond(EvalHeld, &held);
  Releasing(this);
  const bool met = real(this, held_cond, deadline);
  Acquired(this);
  return met;
}

void CondVar::Wait(Mutex* mu) {
  static const auto real =
      Real<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  Releasing(mu);
  real(this, mu);
  Acquired(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  Releasing(mu);
  const bool timed_out = real(this, mu, timeout);
  Acquired(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, Time)>(
      "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  Releasing(mu);
  const bool timed_out = real(this, mu, deadline);
  Acquired(mu);
  return timed_out;
}

// Notification and BlockingCounter publish with an atomic (no lock) on their
// fast paths.
void Notification::Notify() {
  static const auto real =
      Real<void (*)(Notification*)>("12Notification6NotifyEv");
  Releasing(this);
  real(this);
}

void Notification::WaitForNotification() const {
  static const auto real = Real<void (*)(const Notification*)>(
      "12Notification19WaitForNotificationEv", true);
  real(this);
  Acquired(this);
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static const auto real = Real<bool (*)(const Notification*, Duration)>(
      "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE", true);
  const bool notified = real(this, timeout);
  if (notified) Acquired(this);
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static const auto real = Real<bool (*)(const Notification*, Time)>(
      "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE", true);
  const bool notified = real(this, deadline);
  if (notified) Acquired(this);
  return notified;
}

bool BlockingCounter::DecrementCount() {
  static const auto real =
      Real<bool (*)(BlockingCounter*)>("15BlockingCounter14DecrementCountEv");
  Releasing(this);
  return real(this);
}

void BlockingCounter::Wait() {
  static const auto real =
      Real<void (*)(BlockingCounter*)>("15BlockingCounter4WaitEv");
  real(this);
  Acquired(this);
}

ABSL_NAMESPACE_END
}  // namespace absl
