# Shared by bench/run-cluster-anchors and bench/compare-cluster-builds
# (sourced after scripts/lib.sh and bench/anchors/lib.sh, from the
# repository's root): a three-node cluster on a three-member etcd from
# scripts/local_cluster.py, its addresses and pids, and etcd's leadership
# moved to the member the nodes talk to.

# etcd_status ADDRESS: "<member id> <leader id>" as the member says.
etcd_status() {
  curl -fsS -X POST "http://$1/v3/maintenance/status" -d '{}' | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(s["header"]["member_id"], s["leader"])'
}

# etcd_leader_is_first: true if the first member is etcd's leader.
etcd_leader_is_first() {
  local status
  status="$(etcd_status "${ETCD_ADDRS[0]}")" || return 1
  [ "${status% *}" = "${status#* }" ]
}

# etcd_lead_from_first: moves etcd's leadership to the first member
# (MoveLeader, sent to the current leader) and waits until it leads.
etcd_lead_from_first() {
  etcd_leader_is_first && return 0
  local first leader address
  first="$(etcd_status "${ETCD_ADDRS[0]}")"
  leader="${first#* }" first="${first% *}"
  for address in "${ETCD_ADDRS[@]}"; do
    if [ "$(etcd_status "$address" | cut -d' ' -f1)" = "$leader" ]; then
      curl -fsS -X POST "http://$address/v3/maintenance/transfer-leadership" \
        -d "{\"targetID\": \"$first\"}" >/dev/null || true
    fi
  done
  wait_until 10 etcd_leader_is_first || echo "  note: etcd's leader is not the first member"
}

CLUSTER_PID="" STATE=""

# start_cluster NAME [BIN_DIR]: starts etcd and the nodes under $TMP/NAME
# with the servers of BIN_DIR (default $BUILD_DIR/bin: leasekeeperd and
# leasekeeper-ctl), waits for the state file, sets CLUSTER_PID (in
# STARTED), the addresses and pids below from it, and moves etcd's
# leadership to the first member, the one the nodes' etcd client uses.
start_cluster() {
  local dir="$TMP/$1" bin="${2:-$BUILD_DIR/bin}"
  mkdir -p "$dir"
  STATE="$dir/state.json"
  "${SERVER_CPU[@]}" python3 scripts/local_cluster.py --bin-dir "$bin" \
    --dir "$dir" --name bench --metrics --state "$STATE" >"$dir/cluster.out" 2>&1 &
  CLUSTER_PID=$!
  STARTED+=("$CLUSTER_PID")
  local tries=1200
  until [ -s "$STATE" ]; do
    if ! kill -0 "$CLUSTER_PID" 2>/dev/null || [ $((tries -= 1)) -eq 0 ]; then
      echo "the cluster did not start; $dir/cluster.out says:" >&2
      cat "$dir/cluster.out" >&2
      exit 1
    fi
    sleep 0.1
  done
  eval "$(python3 - "$STATE" <<'EOF'
import json, sys
state = json.load(open(sys.argv[1]))
nodes = {n["name"]: n for n in state["nodes"]}
leader = nodes[state["leader"]]
followers = [n for n in state["nodes"] if n["name"] != state["leader"]]
print(f'LEADER_ADDR={leader["address"]} LEADER_PID={leader["pid"]}')
print(f'LEADER_METRICS_PORT={leader["metrics"].rsplit(":", 1)[1]}')
print(f'FOLLOWER_PIDS={",".join(str(n["pid"]) for n in followers)}')
print(f'NODE_PIDS=({" ".join(str(n["pid"]) for n in state["nodes"])})')
print(f'ETCD_ADDRS=({" ".join(m["address"] for m in state["etcd"])})')
print(f'ETCD_PIDS={",".join(str(m["pid"]) for m in state["etcd"])}')
EOF
)"
  etcd_lead_from_first
}
