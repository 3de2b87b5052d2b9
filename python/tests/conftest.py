"""Shared fixtures: a real leasekeeperd per test (leasekeeper.testing), and
a Client factory that closes what it made."""

from __future__ import annotations

from typing import Callable, Iterator

import pytest

import leasekeeper
from leasekeeper.testing import LocalServer, leasekeeperd  # noqa: F401

MakeClient = Callable[..., leasekeeper.Client]


@pytest.fixture
def make_client(leasekeeperd: LocalServer) -> Iterator[MakeClient]:  # noqa: F811
    made: list[leasekeeper.Client] = []

    def make(**options: object) -> leasekeeper.Client:
        client = leasekeeper.Client(leasekeeperd.address, **options)  # type: ignore[arg-type]
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
