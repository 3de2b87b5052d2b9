# Shared by bench/run-anchors and bench/run-cluster-anchors (sourced, after
# scripts/lib.sh, from the repository's root): the knobs both read, the
# build of leasekeeper-bench and the servers, CPU pinning, the wait for a
# quiet machine, the processes a run started (stopped by PID on exit), and
# one leasekeeper-bench invocation appended to the raw results.
#
# Knobs (environment), with their defaults:
#   RUNS=3          runs per configuration
#   DURATION=5s     measured time of W1 and W2 (after WARMUP=1s)
#   SAMPLES_W3=1000
#   PIN=1           servers on CPU 0, load generator on CPU 1 (taskset)
#   NICE=0          niceness of the servers and the load generator
#   QUIET_WAIT=60   before each server start, wait up to this many seconds
#                   for the machine to be idle (other work skews every figure)
#   BUILD_DIR=build-anchors  where the binaries are built (and looked for)
#   SKIP_BUILD=1    use the binaries already in $BUILD_DIR/bin

RUNS="${RUNS:-3}"
DURATION="${DURATION:-5s}"
WARMUP="${WARMUP:-1s}"
SAMPLES_W3="${SAMPLES_W3:-1000}"
PIN="${PIN:-1}"
QUIET_WAIT="${QUIET_WAIT:-60}"
NICE="${NICE:-0}"
BUILD_DIR="${BUILD_DIR:-build-anchors}"

# The anchors' Debian packages (their servers, the generated etcd stubs'
# .proto files, the plot, the process tools the scripts use).
ANCHOR_PACKAGES=(
  redis-server etcd-server libhiredis-dev
  golang-etcd-server-dev golang-github-gogo-protobuf-dev
  golang-github-grpc-ecosystem-grpc-gateway-dev
  gnuplot-nox util-linux procps curl python3
)

# build_anchor_targets TARGET...: a Release build of the targets into
# $BUILD_DIR with leasekeeper-bench on (unless SKIP_BUILD=1), then checks
# that each is there.
build_anchor_targets() {
  if [ "${SKIP_BUILD:-0}" != 1 ]; then
    export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
    cmake -S . -B "$BUILD_DIR" -G Ninja -DLEASEKEEPER_ANCHOR_BENCH=ON \
      -DCMAKE_BUILD_TYPE=Release -DLEASEKEEPER_TESTS=OFF >/dev/null
    cmake --build "$BUILD_DIR" --target "$@" --parallel "$(nproc)"
  fi
  local target
  for target in "$@"; do
    [ -x "$BUILD_DIR/bin/$target" ] || { echo "missing $BUILD_DIR/bin/$target" >&2; exit 1; }
  done
}
BENCH="$BUILD_DIR/bin/leasekeeper-bench"
GRPC_FLOOR="$BUILD_DIR/bin/grpc-floor-server"

# Every server command is prefixed with SERVER_CPU, the load generator's
# with BENCH_CPU.
SERVER_CPU=(nice -n "$NICE") BENCH_CPU=(nice -n "$NICE")
if [ "$PIN" = 1 ] && [ "$(nproc)" -ge 2 ]; then
  SERVER_CPU+=(taskset -c 0) BENCH_CPU+=(taskset -c 1)
fi

# Processes this run started (children of this shell), stopped and waited
# for on exit, with the temporary folder $TMP.
TMP="$(mktemp -d /tmp/leasekeeper-anchors.XXXXXX)"
STARTED=()
cleanup() {
  local pid
  for pid in "${STARTED[@]}"; do
    kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT

# stop_started PID: stops one of STARTED (SIGTERM, then waits for it).
stop_started() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  local kept=() pid
  for pid in "${STARTED[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
  STARTED=("${kept[@]}")
}

# free_port: a loopback port nothing listens on, below the ephemeral range
# (scripts/local_cluster.py's free_port says why).
free_port() {
  python3 -c 'import sys; sys.path.insert(0, "scripts")
from local_cluster import free_port; print(free_port())'
}

# wait_until SECONDS COMMAND...: retries COMMAND every 100 ms.
wait_until() {
  local tries=$(($1 * 10)); shift
  until "$@" >/dev/null 2>&1; do
    tries=$((tries - 1))
    [ "$tries" -gt 0 ] || { echo "timed out waiting for: $*" >&2; return 1; }
    sleep 0.1
  done
}

# start_grpc_floor LOG: grpc-floor-server (bench/anchors/grpc_floor_server.cc)
# with SERVER_CPU on a free port; sets SERVER_ADDR and SERVER_PID (in
# STARTED) and waits until it listens.
start_grpc_floor() {
  local port
  port="$(free_port)"
  SERVER_ADDR="127.0.0.1:$port"
  "${SERVER_CPU[@]}" "$GRPC_FLOOR" --listen="$SERVER_ADDR" >"$1" 2>&1 &
  SERVER_PID=$!
  STARTED+=("$SERVER_PID")
  wait_until 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
}

# busy_percent: CPU use of the whole machine over the next second.
busy_percent() {
  local a b
  a=($(head -1 /proc/stat))
  sleep 1
  b=($(head -1 /proc/stat))
  local busy=0 total=0 i d
  for i in 1 2 3 4 5 6 7 8; do
    d=$((b[i] - a[i]))
    total=$((total + d))
    [ "$i" -ne 4 ] && [ "$i" -ne 5 ] && busy=$((busy + d))
  done
  echo $((total > 0 ? 100 * busy / total : 0))
}

# wait_for_quiet: up to QUIET_WAIT seconds until the machine is >= 90% idle.
wait_for_quiet() {
  local deadline=$((SECONDS + QUIET_WAIT)) busy
  while :; do
    busy="$(busy_percent)"
    [ "$busy" -le 10 ] && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "  note: machine still ${busy}% busy with other work; measuring anyway"
      return 0
    fi
  done
}

# bench CONFIG RUN SYSTEM ARGS...: one leasekeeper-bench invocation against
# $SERVER_ADDR, measuring $SERVER_PID (a pid, or a comma-separated list
# whose CPU is summed), its JSON line appended to $RAW with CONFIG as its
# label.
bench() {
  local config="$1" run="$2" system="$3"; shift 3
  local line
  if ! line="$("${BENCH_CPU[@]}" "$BENCH" --system="$system" --target="$SERVER_ADDR" \
      --server_pid="$SERVER_PID" --label="$config" --run="$run" "$@")"; then
    echo "  warning: $system $* reported errors: $line" >&2
  fi
  [ -n "$line" ] && echo "$line" >>"$RAW"
  echo "  $config run $run: $* done"
}
