"""Adaptive concurrency (AIMD), token buckets and the per-host limiter, on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from biasaudit.backends.http_limits import (
    AIMDController,
    ConcurrencyGate,
    HostLimiter,
    TokenBucket,
    host_limiter,
)


def test_aimd_limit_trajectory_by_hand() -> None:
    c = AIMDController(2, 8)
    trajectory = [c.limit]

    def step(event: str, epoch: int | None = None) -> None:
        if event == "ok":
            c.on_success()
        else:
            c.on_overload(c.epoch if epoch is None else epoch)
        trajectory.append(c.limit)

    step("429")                 # 8 -> 4 (epoch 0 -> 1)
    step("429", epoch=0)        # sent before the decrease: the same overload, ignored
    for _ in range(4):          # a full window of 4 successes -> 5
        step("ok")
    for _ in range(5):          # a window of 5 -> 6
        step("ok")
    step("ok")                  # 1 of the next window of 6
    step("429")                 # 6 -> 3, and the window restarts
    step("429")                 # 3 -> 1, floored at min 2
    step("429")                 # stays at the floor
    for _ in range(2):          # window of 2 at limit 2 -> 3
        step("ok")
    assert trajectory == [8, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 3, 2, 2, 2, 3]
    assert c.epoch == 4


def test_aimd_never_passes_its_ceiling_and_rejects_a_bad_range() -> None:
    c = AIMDController(1, 3)
    for _ in range(50):
        c.on_success()
    assert c.limit == 3
    with pytest.raises(ValueError):
        AIMDController(4, 3)


def test_token_bucket_waits_on_a_fake_clock() -> None:
    b = TokenBucket(rate=2.0, capacity=2.0)
    # a burst of the capacity goes at once, then one every 1/rate seconds
    assert [b.reserve(1, now=0.0) for _ in range(4)] == [0.0, 0.0, 0.5, 1.0]
    # 0.5 s later one unit has come back, but two are owed: the next goes at t = 1.5
    assert b.reserve(1, now=0.5) == pytest.approx(1.0)
    # long idle: the bucket refills to its capacity, not beyond
    assert b.reserve(1, now=100.0) == 0.0 and b.level == pytest.approx(1.0)


def test_token_bucket_big_cost_and_usage_correction() -> None:
    b = TokenBucket(rate=100.0, capacity=100.0)
    assert b.reserve(250, now=0.0) == 0.0       # above capacity: waits for a full bucket only
    assert b.level == -150
    assert b.reserve(10, now=0.0) == pytest.approx(1.6)   # (10 + 150) / 100
    b.adjust(50 - 250, now=0.0)                 # the first call used 50 tokens, not 250
    assert b.level == pytest.approx(40.0)       # -160 + 200
    assert b.reserve(10, now=0.0) == 0.0
    b.adjust(1000, now=0.0)                     # used far more than estimated: debt
    assert b.reserve(1, now=0.0) == pytest.approx((1 + 970) / 100)


def test_host_limiter_combines_buckets_and_retry_after_pause() -> None:
    lim = HostLimiter(requests=TokenBucket(1.0, 1.0), tokens=TokenBucket(10.0, 10.0))
    assert lim.reserve(5, now=0.0) == 0.0
    assert lim.reserve(5, now=0.0) == pytest.approx(1.0)   # the request bucket is the slower one
    # requests: 1 owed, need 1 -> 2.0 s; tokens: 0 left, need min(30, 10) -> 1.0 s, 30 owed
    assert lim.reserve(30, now=0.0) == pytest.approx(2.0)
    lim.pause(3.0, now=0.0)
    # at t = 1: pause 2.0 s; requests 2 owed, 1 back -> 2.0 s; tokens -30 + 10 -> 2.0 s
    assert lim.reserve(0, now=1.0) == pytest.approx(2.0)
    lim.pause(5.0, now=0.0)
    assert lim.reserve(0, now=1.0) == pytest.approx(4.0)   # the longer pause wins
    lim.correct(30, 0, now=1.0)                            # refund: that call used nothing
    assert lim.tokens is not None and lim.tokens.level == pytest.approx(10.0)


def test_host_limiter_is_shared_per_host_key_and_limits() -> None:
    a = host_limiter("h.example:1", "KEY", 5.0, None)
    assert host_limiter("h.example:1", "KEY", 5.0, None) is a
    assert host_limiter("h.example:2", "KEY", 5.0, None) is not a
    assert host_limiter("h.example:1", "OTHER", 5.0, None) is not a
    assert a.requests is not None and a.requests.capacity == 5.0 and a.tokens is None
    t = host_limiter("h.example:1", "KEY", None, 6000.0)
    assert t.tokens is not None and t.tokens.rate == 100.0 and t.requests is None


def test_gate_admits_up_to_the_limit_and_follows_a_decrease() -> None:
    async def scenario() -> list[int]:
        c = AIMDController(1, 2)
        gate = ConcurrencyGate(c)
        await gate.acquire()
        await gate.acquire()
        third = asyncio.create_task(gate.acquire())
        for _ in range(5):
            await asyncio.sleep(0)
        seen = [int(third.done())]              # 0: both slots taken
        c.on_overload(c.epoch)                  # limit 2 -> 1
        await gate.release()                    # 1 in flight, limit 1: still no room
        for _ in range(5):
            await asyncio.sleep(0)
        seen.append(int(third.done()))
        await gate.release()                    # 0 in flight: the waiter goes
        await asyncio.wait_for(third, 5)
        seen.append(int(third.done()))
        seen.append(gate.in_flight)
        return seen

    assert asyncio.run(scenario()) == [0, 0, 1, 1]
