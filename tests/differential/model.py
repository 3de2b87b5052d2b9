#!/usr/bin/env python3
"""A deliberately naive, independent model of the lease contract.

It shares no code or data structure with core/: it scans every lock on every
operation, builds the whole wait-for graph with an edge per pair of waiters
and finds cycles by brute-force reachability. It is slow and obviously
right, which is the point: `differential_test.py` runs random operation
sequences through it and through `leasekeeper-replay` and demands identical
results.

Model(semaphores=True) adds the daemon's counting semaphores (never part of
the replay): ["acquire", ts, client, lock, ttl, "semaphore", N], inspect
with a "capacity", and deadlocks decided by the AND-OR rule of
core/lock_table.h computed from scratch over the whole graph (a client is
free if it waits for nothing, an exclusive/shared waiter if all its
successors are free, a semaphore waiter if one is; the victims come from
the deadlocked clients reachable from the requester).
"""

import json
import re

ERR_ARGS = "error: invalid arguments"
ERR_TTL = "error: invalid ttl"
ERR_UNKNOWN = "error: unknown operation"
ERR_BUSY = "error: client busy"
ERR_NOT_HOLDER = "error: not holder"
ERR_STALE = "error: stale token"
ERR_CAPACITY = "error: capacity mismatch"
ERR_MODE = "error: mode mismatch"
MAX_CAPACITY = 65535

ARITY = {"acquire": (5, 6), "renew": (5, 5), "release": (4, 4), "write": (6, 6),
         "read": (4, 4), "inspect": (3, 3), "status": (3, 3), "repeat": (5, 5)}
MAX_TICK = 1 << 62


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_name(v):
    return isinstance(v, str) and v != ""


class Model:
    def __init__(self, semaphores=False):
        self.semaphores = semaphores
        self.now = None
        self.locks = {}  # name -> {"counter", "holders": [..], "queue": [..]}
        self.store = {}  # lock -> {"hw": int, "values": {}}
        self.ages = {}   # registered client -> age
        self.last_age = 0
        self.seq = 0

    # --- helpers -----------------------------------------------------------
    def lock(self, name):
        return self.locks.setdefault(name, {"counter": 0, "holders": [], "queue": [], "capacity": 0})

    @staticmethod
    def compatible(lock, mode):
        hs = lock["holders"]
        if mode == "semaphore":
            return len(hs) < lock["capacity"]
        return not hs or (mode == "shared" and all(h["mode"] == "shared" for h in hs))

    def grant(self, lock, client, mode, at, ttl):
        lock["counter"] += 1
        self.seq += 1
        lock["holders"].append({"client": client, "mode": mode, "token": lock["counter"],
                                "exp": at + ttl, "ttl": ttl, "seq": self.seq})
        return lock["counter"], at + ttl

    def grant_queue(self, lock, at):
        while lock["queue"] and self.compatible(lock, lock["queue"][0]["mode"]):
            w = lock["queue"].pop(0)
            self.grant(lock, w["client"], w["mode"], at, w["ttl"])

    def retire(self, ts):
        while True:
            best = None
            for lock in self.locks.values():
                for h in lock["holders"]:
                    if h["exp"] <= ts and (best is None or (h["exp"], h["seq"]) < (best[1]["exp"], best[1]["seq"])):
                        best = (lock, h)
            if best is None:
                return
            lock, h = best
            lock["holders"].remove(h)
            self.grant_queue(lock, h["exp"])

    def waiting_for(self, client):
        for name, lock in self.locks.items():
            if any(w["client"] == client for w in lock["queue"]):
                return name
        return None

    def holds(self, client, name):
        return any(h["client"] == client for h in self.locks.get(name, {"holders": []})["holders"])

    def edges(self):
        g = {}
        for lock in self.locks.values():
            for i, w in enumerate(lock["queue"]):
                out = g.setdefault(w["client"], set())
                out.update(h["client"] for h in lock["holders"])
                out.update(x["client"] for x in lock["queue"][:i])
        return g

    @staticmethod
    def reach(g, start):
        seen, todo = set(), [start]
        while todo:
            for n in g.get(todo.pop(), ()):
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return seen

    def free_clients(self, g):
        """Least fixpoint of freedom over the whole graph (the AND-OR rule)."""
        waiting = {}
        for name, lock in self.locks.items():
            for w in lock["queue"]:
                waiting[w["client"]] = w["mode"]
        free = {c for c in self.ages if c not in waiting}
        changed = True
        while changed:
            changed = False
            for c, mode in waiting.items():
                if c in free:
                    continue
                succ = g.get(c, set())
                if (any(s in free for s in succ) if mode == "semaphore" else all(s in free for s in succ)):
                    free.add(c)
                    changed = True
        return free, set(waiting)

    def victims_and_or(self, client):
        g = self.edges()
        free, waiting = self.free_clients(g)
        if client in free:
            return set()
        fwd = self.reach(g, client) | {client}
        return {c for c in waiting - free if c in fwd}

    def abort(self, victim, ts):
        name = self.waiting_for(victim)
        if name is not None:
            lock = self.locks[name]
            lock["queue"] = [w for w in lock["queue"] if w["client"] != victim]
            self.grant_queue(lock, ts)
        for name in sorted(n for n, l in self.locks.items() if any(h["client"] == victim for h in l["holders"])):
            lock = self.locks[name]
            lock["holders"] = [h for h in lock["holders"] if h["client"] != victim]
            self.grant_queue(lock, ts)
        del self.ages[victim]

    # --- operations --------------------------------------------------------
    def apply(self, op):
        if not isinstance(op, list) or not op:
            return ERR_ARGS
        name = op[0]
        if not isinstance(name, str) or name not in ARITY:
            return ERR_UNKNOWN
        if len(op) < 2 or not is_int(op[1]):
            return ERR_ARGS
        ts = op[1]
        if ts < -MAX_TICK or ts > MAX_TICK or (self.now is not None and ts < self.now):
            return ERR_ARGS
        self.now = ts
        self.retire(ts)
        lo, hi = ARITY[name]
        if self.semaphores and name == "acquire":
            hi += 1
        if not lo <= len(op) <= hi:
            return ERR_ARGS
        return getattr(self, "op_" + name)(ts, *op[2:])

    def op_acquire(self, ts, client, lock_name, ttl, mode="exclusive", *capacity):
        modes = ("shared", "exclusive", "semaphore") if self.semaphores else ("shared", "exclusive")
        if not is_name(client) or not is_name(lock_name) or not is_int(ttl) or mode not in modes:
            return ERR_ARGS
        if len(capacity) != (1 if mode == "semaphore" else 0):
            return ERR_ARGS
        n = capacity[0] if capacity else 0
        if mode == "semaphore" and (not is_int(n) or not 1 <= n <= MAX_CAPACITY):
            return ERR_ARGS
        if not 1 <= ttl <= 86400:
            return ERR_TTL
        if self.waiting_for(client) is not None or self.holds(client, lock_name):
            return ERR_BUSY
        existing = self.locks.get(lock_name)
        if existing is not None and (existing["holders"] or existing["queue"]):
            if (existing["capacity"] != 0) != (mode == "semaphore"):
                return ERR_MODE
            if existing["capacity"] != n:
                return ERR_CAPACITY
        if client not in self.ages:
            self.last_age += 1
            self.ages[client] = self.last_age
        lock = self.lock(lock_name)
        if not lock["holders"] and not lock["queue"]:
            lock["capacity"] = n
        if not lock["queue"] and self.compatible(lock, mode):
            token, exp = self.grant(lock, client, mode, ts, ttl)
            return ["granted", token, exp]
        lock["queue"].append({"client": client, "mode": mode, "ttl": ttl})
        victims = []
        while self.waiting_for(client) is not None:
            if self.semaphores:
                cyc = self.victims_and_or(client)
                if not cyc:
                    break
            else:
                g = self.edges()
                fwd = self.reach(g, client)
                if client not in fwd:
                    break
                cyc = {c for c in fwd if client in self.reach(g, c)}
            victim = max(cyc, key=lambda c: self.ages[c])
            victims.append(victim)
            self.abort(victim, ts)
            if victim == client:
                return ["deadlock", victims]
        if self.waiting_for(client) is not None:
            pos = [w["client"] for w in lock["queue"]].index(client) + 1
            res = ["queued", pos]
        else:
            h = next(h for h in lock["holders"] if h["client"] == client)
            res = ["granted", h["token"], h["exp"]]
        if victims:
            res.append(victims)
        return res

    def op_renew(self, ts, client, lock_name, ttl):
        if not is_name(client) or not is_name(lock_name) or not is_int(ttl):
            return ERR_ARGS
        if not 1 <= ttl <= 86400:
            return ERR_TTL
        for h in self.locks.get(lock_name, {"holders": []})["holders"]:
            if h["client"] == client:
                h["exp"] = ts + ttl
                h["ttl"] = ttl
                self.seq += 1
                h["seq"] = self.seq
                return ["renewed", h["token"], h["exp"]]
        return ERR_NOT_HOLDER

    def op_release(self, ts, client, lock_name):
        if not is_name(client) or not is_name(lock_name):
            return ERR_ARGS
        lock = self.locks.get(lock_name)
        if lock is None:
            return ERR_NOT_HOLDER
        for h in lock["holders"]:
            if h["client"] == client:
                lock["holders"].remove(h)
                self.grant_queue(lock, ts)
                return "released"
        for w in lock["queue"]:
            if w["client"] == client:
                lock["queue"].remove(w)
                self.grant_queue(lock, ts)
                return "withdrawn"
        return ERR_NOT_HOLDER

    def op_write(self, ts, lock_name, key, value, token):
        if not is_name(lock_name) or not is_name(key) or not is_name(value) or not is_int(token) or token < 1:
            return ERR_ARGS
        s = self.store.setdefault(lock_name, {"hw": 0, "values": {}})
        if token < s["hw"]:
            return ERR_STALE
        s["hw"] = token
        s["values"][key] = value
        return "ok"

    def op_read(self, ts, lock_name, key):
        if not is_name(lock_name) or not is_name(key):
            return ERR_ARGS
        return self.store.get(lock_name, {"values": {}})["values"].get(key)

    def op_inspect(self, ts, lock_name):
        if not is_name(lock_name):
            return ERR_ARGS
        lock = self.locks.get(lock_name, {"holders": [], "queue": []})
        hs = sorted(lock["holders"], key=lambda h: h["token"])
        view = {"holders": [[h["client"], h["mode"], h["token"], h["exp"]] for h in hs],
                "queue": [[w["client"], w["mode"]] for w in lock["queue"]]}
        if self.semaphores:
            active = lock["holders"] or lock["queue"]
            view["capacity"] = lock.get("capacity", 0) if active else 0
        return view

    def op_status(self, ts, client):
        if not is_name(client):
            return ERR_ARGS
        if client not in self.ages:
            return {"age": None, "holds": [], "waiting": None}
        holds = []
        for name in sorted(self.locks):
            for h in self.locks[name]["holders"]:
                if h["client"] == client:
                    holds.append([name, h["mode"], h["token"], h["exp"]])
        return {"age": self.ages[client], "holds": holds, "waiting": self.waiting_for(client)}

    def op_repeat(self, ts, template, count, step):
        if (not isinstance(template, list) or not template or template[0] == "repeat"
                or not is_int(count) or not is_int(step) or not 1 <= count <= 100000 or step < 0
                or ts + (count - 1) * step > MAX_TICK):
            return ERR_ARGS
        pat = re.compile(r"\{i(?:\+(\d+))?(?:%(\d+))?\}")
        for a in template[1:]:
            if isinstance(a, str):
                for m in pat.finditer(a):
                    if m.group(2) is not None and int(m.group(2)) == 0:
                        return ERR_ARGS
        tally, aborted = {}, 0
        for i in range(count):
            def sub(m):
                v = i + int(m.group(1) or 0)
                return str(v % int(m.group(2)) if m.group(2) else v)
            args = [pat.sub(sub, a) if isinstance(a, str) else a for a in template[1:]]
            r = self.apply([template[0], ts + i * step] + args)
            if isinstance(r, str):
                key = r
            elif isinstance(r, list) and r and isinstance(r[0], str):
                key = r[0]
                if isinstance(r[-1], list):
                    aborted += len(r[-1])
            else:
                key = "other"
            tally[key] = tally.get(key, 0) + 1
        out = {"ops": count, "results": tally}
        if aborted:
            out["aborted"] = aborted
        return out


def run(operations, semaphores=False):
    model = Model(semaphores)
    return [model.apply(op) for op in operations]


if __name__ == "__main__":
    import sys
    print(json.dumps(run(json.load(sys.stdin))))
