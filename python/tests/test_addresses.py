"""Server addresses are checked before any call, by the C++ client's rules:
host:port (a name, IPv4 or [IPv6]; port 1..65535), each of a comma-separated
list, dns: and unix: targets; anything else is a ValueError naming the
address and what is wrong with it."""

from __future__ import annotations

import asyncio

import pytest

import leasekeeper
import leasekeeper.aio

REFUSED = [
    ("127.0.0.1", "missing port"),
    ("127.0.0.1:", "missing port"),
    ("localhost", "missing port"),
    ("[::1]", "missing port"),
    ("127.0.0.1:0", "port out of range (1-65535)"),
    ("127.0.0.1:99999", "port out of range (1-65535)"),
    ("127.0.0.1:65536", "port out of range (1-65535)"),
    ("127.0.0.1:-1", "port out of range (1-65535)"),
    ("127.0.0.1:http", "port out of range (1-65535)"),
    (":7233", "empty host"),
    ("", "empty host"),
    ("unix:", "empty host"),
    ("http://127.0.0.1:7233", "scheme not supported; write host:port"),
    ("https://lk.example:7233", "scheme not supported; write host:port"),
    ("::1:7233", "malformed IPv6 address"),
    ("[::1:7233", "malformed IPv6 address"),
    ("[::g]:7233", "malformed IPv6 address"),
    ("[::1]7233", "malformed IPv6 address"),
]

ACCEPTED = [
    "127.0.0.1:7233",
    "localhost:1",
    "lk-a.example.com:65535",
    "[::1]:7233",
    "[fe80::1]:7233",
    "dns:lk.example:7233",
    "dns:///lk.example:7233",
    "unix:/run/leasekeeper.sock",
    "a:7233,b:7233,c:7233",
]


def message(address: str, reason: str) -> str:
    return f'invalid server address "{address}": {reason}'


@pytest.mark.parametrize("address,reason", REFUSED)
def test_a_malformed_address_is_refused_naming_what_is_wrong(
        address: str, reason: str) -> None:
    with pytest.raises(ValueError) as refused:
        leasekeeper.Client(address)
    assert str(refused.value) == message(address, reason)


@pytest.mark.parametrize("address,reason", REFUSED)
def test_the_asyncio_client_refuses_the_same_addresses(
        address: str, reason: str) -> None:
    with pytest.raises(ValueError) as refused:
        leasekeeper.aio.Client(address)
    assert str(refused.value) == message(address, reason)


def test_each_address_of_a_list_is_checked() -> None:
    with pytest.raises(ValueError) as refused:
        leasekeeper.Client("a:7233,b,c:7233")
    assert str(refused.value) == message("b", "missing port")
    with pytest.raises(ValueError) as refused:
        leasekeeper.Client(["a:7233", "b:0"])
    assert str(refused.value) == message("b:0", "port out of range (1-65535)")


@pytest.mark.parametrize("address", ACCEPTED)
def test_well_formed_addresses_are_accepted_without_any_call(
        address: str) -> None:
    leasekeeper.Client(address, call_timeout=0.2).close()
    asyncio.run(leasekeeper.aio.Client(address, call_timeout=0.2).close())
