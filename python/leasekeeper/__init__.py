"""leasekeeper: a Python client for leasekeeperd.

    import leasekeeper

    with leasekeeper.Client("127.0.0.1:7233") as client:
        with client.lock("exports/daily", ttl=30, wait=60) as lease:
            lease.write("cursor", b"42")     # fenced by lease.token

leasekeeper.aio has the same API for asyncio; leasekeeper.testing starts a
real leasekeeperd for tests. See python/README.md.
"""

from leasekeeper._book import EndReason
from leasekeeper._common import (ClientStatus, Holder, KeyPage, LockInfo,
                                 LockSummary, ReleasedLease,
                                 TlsFiles, Waiter, default_client_id)
from leasekeeper.client import Client, Lease
from leasekeeper.errors import (CapacityMismatch, ClientBusy, DeadlockVictim,
                                LeasekeeperError, LeaseLost, LimitExceeded,
                                LockBusy, ModeMismatch, NoHolder, NotHolder,
                                NotLeader, StaleToken, Unavailable)
from leasekeeper.leader import TermEnd, run_as_leader
from leasekeeper.partition import (consistent_partition_of, fnv1a32, fnv1a64,
                                   partition_of)

__all__ = [
    "Client", "Lease", "EndReason", "TlsFiles", "run_as_leader", "TermEnd",
    "LeasekeeperError", "StaleToken", "NotHolder", "ClientBusy", "LockBusy",
    "DeadlockVictim", "LimitExceeded", "Unavailable", "NotLeader", "LeaseLost",
    "LockInfo", "Holder", "Waiter", "ClientStatus", "LockSummary",
    "ReleasedLease", "default_client_id", "CapacityMismatch", "ModeMismatch",
    "KeyPage", "NoHolder", "partition_of", "consistent_partition_of",
    "fnv1a32", "fnv1a64",
]
