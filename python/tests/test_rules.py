"""The lease rules without a server: LeaseTimer arithmetic, the LeaseBook's
renewal and end-reason decisions, and AcquireAttempts, all on a fake time."""

from __future__ import annotations

import grpc
import pytest

from leasekeeper._acquire import AcquireAttempts, Step
from leasekeeper._book import (NOTICE_ABORTED_DEADLOCK_VICTIM,
                               NOTICE_LEASE_LAPSED, EndReason, LeaseBook,
                               LeaseState)
from leasekeeper._common import InspectPages, RequestIdSource, StatusPages
from leasekeeper.errors import LeasekeeperError, LockBusy, make_error
from leasekeeper.timer import LeaseTimer, safety_margin
from leasekeeper.v1 import lock_service_pb2 as pb


class Flag:
    def __init__(self) -> None:
        self.is_set = False

    def set(self) -> None:
        self.is_set = True


def error(reason: str, code: grpc.StatusCode) -> LeasekeeperError:
    return make_error(code, reason.lower(), reason, None)


NOT_HOLDER = error("NOT_HOLDER", grpc.StatusCode.FAILED_PRECONDITION)
UNAVAILABLE = make_error(grpc.StatusCode.UNAVAILABLE, "down", None, None)


def test_deadline_counts_from_the_send_less_the_margin() -> None:
    timer = LeaseTimer(ttl=30.0, counted_from=100.0, lease_left=30.0)
    assert timer.deadline == pytest.approx(130.0 - safety_margin(30.0))
    assert safety_margin(30.0) == pytest.approx(0.031)
    assert not timer.expired_at(timer.deadline - 1e-6)
    assert timer.expired_at(timer.deadline)


def test_renewal_is_due_a_third_of_the_ttl_after_the_send() -> None:
    timer = LeaseTimer(ttl=30.0, counted_from=100.0, lease_left=30.0)
    assert timer.next_attempt_at == pytest.approx(110.0 - safety_margin(30.0))
    timer.on_renewed(sent_at=109.0)
    assert timer.next_attempt_at == pytest.approx(119.0 - safety_margin(30.0))


def test_an_old_renewal_never_shortens_the_lease() -> None:
    timer = LeaseTimer(ttl=30.0, counted_from=100.0, lease_left=30.0)
    timer.on_renewed(sent_at=120.0)
    deadline = timer.deadline
    timer.on_renewed(sent_at=110.0)
    assert timer.deadline == deadline


def test_retries_double_from_100ms_up_to_a_sixth_of_the_ttl() -> None:
    timer = LeaseTimer(ttl=1.2, counted_from=0.0, lease_left=1.2)
    delays = []
    for now in range(4):
        timer.on_transient_failure(float(now))
        delays.append(timer.next_attempt_at - now)
    assert delays == pytest.approx([0.1, 0.2, 0.2, 0.2])
    short = LeaseTimer(ttl=0.3, counted_from=0.0, lease_left=0.3)
    short.on_transient_failure(0.0)
    assert short.next_attempt_at == pytest.approx(0.05)


def new_book() -> LeaseBook:
    return LeaseBook(call_timeout=5.0, idle_keepalive_interval=5.0, now=0.0,
                     new_request_id=RequestIdSource())


def hold(book: LeaseBook, lock: str = "a", token: int = 1, ttl: float = 3.0,
         now: float = 0.0, session: str = "s1") -> LeaseState:
    return book.register(lock, token, False, ttl, session, now, ttl, now,
                         Flag())


def test_one_keepalive_renews_every_lease_from_its_send() -> None:
    book = new_book()
    a, b = hold(book, "a", ttl=3.0), hold(book, "b", ttl=6.0)
    plan = book.plan(1.0, "s1")
    assert plan.keepalive_sequence is not None and not plan.renew_by_call
    book.on_keepalive_ack(plan.keepalive_sequence, 2, now=1.2)
    assert a.timer.deadline == pytest.approx(4.0 - safety_margin(3.0))
    assert b.timer.deadline == pytest.approx(7.0 - safety_margin(6.0))
    assert a.end_reason is None and b.end_reason is None


def test_an_ack_counting_fewer_leases_renews_each_by_call_at_once() -> None:
    book = new_book()
    a = hold(book, "a")
    plan = book.plan(1.0, "s1")
    assert plan.keepalive_sequence is not None
    book.on_keepalive_ack(plan.keepalive_sequence, 0, now=1.1)
    again = book.plan(1.1, "s1")
    assert again.renew_by_call == [a]


def test_not_holder_before_the_deadline_is_a_forced_release() -> None:
    book = new_book()
    a = hold(book)
    book.apply_renew(a, sent_at=1.0, outcome=NOT_HOLDER, background=True,
                     now=1.1)
    assert a.end_reason is EndReason.FORCED and str(a.end_reason) == "forced"
    assert book.take_ended() == [a]


def test_not_holder_after_the_deadline_is_an_expiry() -> None:
    book = new_book()
    a = hold(book, ttl=3.0)
    book.apply_renew(a, sent_at=1.0, outcome=NOT_HOLDER, background=True,
                     now=3.5)
    assert a.end_reason == EndReason.EXPIRED


def test_a_renewal_answering_another_token_means_not_holder() -> None:
    book = new_book()
    a = hold(book, token=4)
    book.apply_renew(a, sent_at=1.0, outcome=5, background=True, now=1.1)
    assert a.end_reason == EndReason.NOT_HOLDER


def test_notices_end_the_lease_they_name() -> None:
    book = new_book()
    a, b = hold(book, "a", token=1), hold(book, "b", token=7)
    book.on_notice(NOTICE_LEASE_LAPSED, "a", 2, now=1.0)  # another grant
    assert a.end_reason is None
    book.on_notice(NOTICE_LEASE_LAPSED, "a", 1, now=1.0)
    book.on_notice(NOTICE_ABORTED_DEADLOCK_VICTIM, "b", 7, now=1.0)
    assert a.end_reason == EndReason.NOT_HOLDER
    assert b.end_reason == EndReason.DEADLOCK_VICTIM


def test_a_passed_deadline_ends_the_lease_and_releases_it_at_the_server(
) -> None:
    book = new_book()
    a = hold(book, ttl=3.0)
    book.paused = True
    plan = book.plan(3.0, "s1")
    assert a.end_reason == EndReason.EXPIRED
    assert [r.lock for r in plan.releases] == ["a"]


def test_without_a_stream_due_leases_renew_by_call() -> None:
    book = new_book()
    a = hold(book)
    plan = book.plan(1.0, None)
    assert plan.keepalive_sequence is None and plan.renew_by_call == [a]


def test_an_unanswered_keepalive_falls_back_to_calls_and_cuts_the_stream(
) -> None:
    book = new_book()
    a = hold(book, ttl=30.0)
    plan = book.plan(10.0, "s1")
    assert plan.keepalive_sequence is not None
    later = book.plan(16.0, "s1")  # past the call timeout
    assert later.interrupt_session
    assert a.renew_by_call and a.end_reason is None


def test_a_lost_session_ends_only_its_own_leases() -> None:
    book = new_book()
    a, b = hold(book, "a", session="s1"), hold(book, "b", session="s2")
    book.on_session_lost("s1", now=1.0)
    assert a.end_reason == EndReason.SESSION_LOST and b.end_reason is None


def test_close_releases_live_leases_then_idle_background_releases() -> None:
    book = new_book()
    a = hold(book, "a", session="s1")
    book.queue_release("b", "s0", "r-b", now=0.0)
    book.queue_release("c", "s0", "r-c", now=0.0)
    assert book.claim_release("c") is not None  # in flight: not retried
    live, releases = book.begin_close()
    assert live == [a] and a.releasing
    [(lock, session, _), second] = releases
    assert (lock, session) == ("a", "s1")
    assert second == ("b", "s0", "r-b")
    book.finish_close(live, now=1.0)
    assert a.end_reason == EndReason.RELEASED and book.take_ended() == [a]
    assert not book.pending_releases and not book.leases


def holder(client_id: str) -> pb.Holder:
    return pb.Holder(client_id=client_id)


def test_inspect_pages_merge_holders_and_queue_and_ask_for_the_next() -> None:
    pages = InspectPages("pool")
    assert pages.request.lock == "pool" and not pages.request.page_token
    first = pb.InspectResponse(holders=[holder("a")], capacity=2,
                               next_page_token="p2")
    assert pages.add(first) is None
    assert pages.request.page_token == "p2"
    last = pb.InspectResponse(holders=[holder("b")], capacity=3,
                              queue=[pb.Waiter(client_id="w", position=1)])
    info = pages.add(last)
    assert info is not None
    assert [h.client_id for h in info.holders] == ["a", "b"]
    assert [w.client_id for w in info.queue] == ["w"]
    assert info.capacity == 3  # the latest page's


def test_status_pages_merge_every_hold() -> None:
    pages = StatusPages("me")
    assert pages.request.client_id == "me"
    assert pages.add(pb.StatusResponse(registered=True, holds=[holder("me")],
                                       next_page_token="p2")) is None
    assert pages.request.page_token == "p2"
    status = pages.add(pb.StatusResponse(registered=True,
                                         holds=[holder("me")]))
    assert status is not None and status.registered
    assert len(status.holds) == 2


def attempts(wait: float | None = 10.0, try_only: bool = False,
             now: float = 0.0) -> AcquireAttempts:
    return AcquireAttempts("c", "a", 3.0, wait, False, "", try_only, 5.0,
                           "s1", RequestIdSource(), now)


def test_a_grant_counts_from_the_first_send_plus_the_queue_wait() -> None:
    tries = attempts()
    first, _ = tries.request(now=1.0)
    tries.on_error(UNAVAILABLE, now=1.5)
    second, _ = tries.request(now=1.6)
    assert first.request_id == second.request_id  # a retry, applied once
    step = tries.on_response(pb.AcquireResponse(granted=pb.Granted(
        token=3, ttl_ms=3000, waited_ms=2000)))
    assert step.step == Step.GRANTED
    assert step.counted_from == pytest.approx(3.0)
    assert step.lease_left == pytest.approx(3.0)


def test_a_queued_try_is_withdrawn_and_answers_none() -> None:
    tries = attempts(wait=0.0, try_only=True)
    request, _ = tries.request(now=0.0)
    assert request.wait_timeout_ms == 0
    step = tries.on_response(pb.AcquireResponse(queued=pb.Queued(position=1)))
    assert step.step == Step.BUSY and step.error is None


def test_wait_timeout_is_lock_busy() -> None:
    tries = attempts(wait=1.0)
    tries.request(now=0.0)
    step = tries.on_error(
        error("WAIT_TIMEOUT", grpc.StatusCode.DEADLINE_EXCEEDED), now=1.0)
    assert step.step == Step.RAISE and isinstance(step.error, LockBusy)


def test_client_busy_after_a_retry_adopts_the_lease() -> None:
    tries = attempts()
    tries.request(now=0.0)
    assert tries.on_error(UNAVAILABLE, now=0.1).step == Step.RETRY
    tries.request(now=0.2)
    busy = error("CLIENT_BUSY", grpc.StatusCode.FAILED_PRECONDITION)
    assert tries.on_error(busy, now=0.3).step == Step.ADOPT
    fresh = attempts()
    fresh.request(now=0.0)
    assert fresh.on_error(busy, now=0.1).step == Step.RAISE


def test_keepalives_come_at_least_every_session_grace() -> None:
    book = new_book()  # idle interval 5 s
    hold(book, "a", ttl=30.0)
    book.on_session_opened(resumed=False, grace=2.0, now=0.0)
    assert book.plan(1.9, "s1").keepalive_sequence is None
    first = book.plan(2.0, "s1").keepalive_sequence
    assert first is not None
    book.on_keepalive_ack(first, 1, now=2.1)
    assert book.plan(3.9, "s1").keepalive_sequence is None
    assert book.plan(4.0, "s1").keepalive_sequence is not None
