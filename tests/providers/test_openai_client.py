"""The shared transport: bounded retries with backoff, Retry-After, timeouts, a concurrency cap."""

from __future__ import annotations

import threading

import pytest
from zep_core import ProviderError
from zep_core.providers.fake_openai import Reply, rate_limited, server_error
from zep_core.providers.openai_client import EndpointError

HI = [{"role": "user", "content": "hi"}]


def test_server_errors_are_retried_with_growing_backoff(client, fake, sleeps):
    fake.push_chat(server_error(500), server_error(503), {"ok": True})
    reply = client.chat(model="m", messages=HI)
    assert reply.content == '{"ok": true}'
    assert [r.status for r in fake.log("chat")] == [500, 503, 200]
    assert sleeps == [0.25, 0.5]  # equal jitter with rng() = 0: half of 0.5 s * 2**attempt


def test_jitter_spreads_the_waits(make_client, fake, sleeps):
    client = make_client(rng=lambda: 1.0)
    fake.push_chat(server_error(502), {"ok": True})
    client.chat(model="m", messages=HI)
    assert sleeps == [0.5]


def test_retries_are_bounded_and_the_error_says_how_many_attempts(make_client, fake, sleeps):
    client = make_client(max_retries=2)
    fake.push_chat(*[server_error(500)] * 5)
    with pytest.raises(EndpointError, match="after 3 attempts: HTTP 500") as caught:
        client.chat(model="m", messages=HI)
    assert isinstance(caught.value, ProviderError) and caught.value.status == 500
    assert len(fake.log("chat")) == 3 and len(sleeps) == 2


def test_retry_after_is_respected_in_seconds_and_milliseconds(client, fake, sleeps):
    fake.push_chat(rate_limited(retry_after=3), rate_limited(None, retry_after_ms=250), {"ok": True})
    client.chat(model="m", messages=HI)
    assert sleeps == [3.0, 0.25]


def test_a_huge_retry_after_is_capped(make_client, fake, sleeps):
    client = make_client(max_retry_after=10)
    fake.push_chat(rate_limited(retry_after=3600), {"ok": True})
    client.chat(model="m", messages=HI)
    assert sleeps == [10.0]


def test_client_errors_are_not_retried(client, fake, sleeps):
    fake.push_chat(Reply(401, body={"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}))
    with pytest.raises(EndpointError, match="HTTP 401") as caught:
        client.chat(model="m", messages=HI)
    assert caught.value.status == 401 and "attempts" not in str(caught.value)
    assert len(fake.log("chat")) == 1 and sleeps == []


def test_an_exhausted_quota_is_not_retried(client, fake, sleeps):
    fake.push_chat(Reply(429, body={"error": {"message": "You exceeded your current quota",
                                              "code": "insufficient_quota"}}))
    with pytest.raises(EndpointError, match="quota"):
        client.chat(model="m", messages=HI)
    assert len(fake.log("chat")) == 1 and sleeps == []


def test_timeouts_are_retried(make_client, fake, sleeps):
    client = make_client(timeout=0.3)
    fake.push_chat(Reply(content={"late": True}, delay=1.5), {"ok": True})
    assert client.chat(model="m", messages=HI).content == '{"ok": true}'
    assert len(sleeps) == 1


def test_the_api_key_never_shows_in_errors(client, fake):
    fake.push_chat(Reply(400, body={"error": {"message": "bad request"}}))
    with pytest.raises(EndpointError) as caught:
        client.chat(model="m", messages=HI)
    assert "sk-test-secret" not in str(caught.value) and "sk-test-secret" not in repr(client)
    assert fake.log("chat")[0].headers["authorization"] == "Bearer sk-test-secret"


def test_concurrent_requests_are_capped_by_the_semaphore(make_client, fake):
    client = make_client(max_concurrency=2)
    fake.push_chat(*[Reply(content={"ok": True}, delay=0.15)] * 6)
    threads = [threading.Thread(target=client.chat, kwargs={"model": "m", "messages": HI}) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(fake.log("chat")) == 6
    assert fake.max_in_flight == 2
