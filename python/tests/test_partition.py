"""The partitioner gives FNV-1a's published values and every vector the C++
client checks too (tests/client/partition_vectors.json)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from leasekeeper import (consistent_partition_of, fnv1a32, fnv1a64,
                         partition_of)

VECTORS = (pathlib.Path(__file__).resolve().parents[2] / "tests" / "client" /
           "partition_vectors.json")


def load_vectors() -> Any:
    return json.loads(VECTORS.read_text(encoding="utf-8"))


def test_fnv1a_gives_the_published_values() -> None:
    assert fnv1a32(b"") == 0x811C9DC5
    assert fnv1a32(b"a") == 0xE40C292C
    assert fnv1a32(b"foobar") == 0xBF9CF968
    assert fnv1a64(b"") == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a64(b"foobar") == 0x85944171F73967E8


def test_every_clients_vectors_are_reproduced() -> None:
    vectors = load_vectors()
    assert vectors["hashes"] and vectors["partitions"]
    for v in vectors["hashes"]:
        data = v["key"].encode("utf-8")
        assert fnv1a32(data) == v["fnv1a32"], v["key"]
        assert fnv1a64(data) == int(v["fnv1a64"]), v["key"]
    for v in vectors["partitions"]:
        assert partition_of(v["key"], v["count"]) == v["modulo"], v
        assert consistent_partition_of(v["key"], v["count"]) == \
            v["consistent"], v


def test_str_keys_are_their_utf8_bytes() -> None:
    assert partition_of("ключ", 12) == partition_of("ключ".encode(), 12)
    assert consistent_partition_of("ключ", 12) == \
        consistent_partition_of("ключ".encode(), 12)


def test_growing_moves_only_the_new_partitions_share_when_consistent() -> None:
    keys = [f"job/{i}" for i in range(20_000)]
    moved = [k for k in keys
             if consistent_partition_of(k, 10) != consistent_partition_of(k, 11)]
    assert all(consistent_partition_of(k, 11) == 10 for k in moved)
    assert abs(len(moved) / len(keys) - 1 / 11) < 0.01


@pytest.mark.parametrize("count", [0, -1, 2**31])
def test_a_count_out_of_range_is_refused(count: int) -> None:
    with pytest.raises(ValueError, match="partition count"):
        partition_of("k", count)
    with pytest.raises(ValueError, match="partition count"):
        consistent_partition_of("k", count)
