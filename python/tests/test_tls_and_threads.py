"""A TLS channel from PEM files, one Client shared by many threads, and the
feature probe for holder-checked writes."""

from __future__ import annotations

import os
import subprocess
import threading

import pytest

import leasekeeper
from leasekeeper import _common
from leasekeeper.testing import LocalServer

from conftest import MakeClient


def self_signed(directory: str) -> tuple[str, str]:
    cert = os.path.join(directory, "server.pem")
    key = os.path.join(directory, "server.key")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
         "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True)
    return cert, key


def test_a_tls_client_verifies_the_server_with_the_given_roots(
        tmp_path: object) -> None:
    cert, key = self_signed(str(tmp_path))
    with LocalServer(extra_flags=[f"--tls-cert={cert}",
                                  f"--tls-key={key}"]) as server:
        tls = leasekeeper.TlsFiles(root_certs=cert)
        with leasekeeper.Client(server.address, tls=tls) as client:
            with client.lock("jobs/tls", ttl=5) as lease:
                assert lease.token == 1
        with leasekeeper.Client(server.address, call_timeout=0.5) as plain:
            with pytest.raises(leasekeeper.Unavailable):
                plain.lock("jobs/tls", ttl=5, wait=0.2)


def test_one_client_serves_many_threads(make_client: MakeClient) -> None:
    client = make_client()
    tokens: dict[str, list[int]] = {}
    failures: list[BaseException] = []

    def work(lock: str) -> None:
        try:
            for _ in range(10):
                with client.lock(lock, ttl=5) as lease:
                    tokens.setdefault(lock, []).append(lease.token)
        except BaseException as failure:  # reported by the main thread
            failures.append(failure)

    threads = [threading.Thread(target=work, args=(f"jobs/{i}",))
               for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert all(tokens[f"jobs/{i}"] == list(range(1, 11)) for i in range(8))
    assert list(client.list_locks("jobs/")) == []


def test_writes_name_the_holder_and_require_it() -> None:
    request = _common.write_request("jobs/a", "k", b"v", 7, "me")
    assert (request.lock, request.key, request.value, request.token,
            request.client_id, request.require_held) == (
        "jobs/a", "k", b"v", 7, "me", True)