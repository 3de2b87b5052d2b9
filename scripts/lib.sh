# Shared by scripts/build, scripts/test and scripts/run: installs the Debian
# packages the build needs, when any is missing. Sourced, not run.

LEASEKEEPER_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libabsl-dev libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev
  protobuf-compiler libspdlog-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev openssl python3
  libssl-dev prometheus-cpp-dev libcivetweb-dev libcli11-dev
  clang-14
)
# The Python client (python/): its runtime, tests, type check and offline
# install (pip with Debian's setuptools and wheel, no registry).
LEASEKEEPER_PACKAGES+=(
  python3-grpcio python3-protobuf python3-pytest python3-pytest-asyncio mypy
  python3-pip python3-setuptools python3-wheel
)
# Packaging and deploy checks: man pages from --help (help2man; groff
# renders them in the test), the Kubernetes manifests' test (python3-yaml).
LEASEKEEPER_PACKAGES+=(help2man groff-base python3-yaml)
# Cluster mode: etcd's .proto files for the generated stubs
# (proto/CMakeLists.txt), and etcd itself for the cluster tests.
LEASEKEEPER_PACKAGES+=(
  golang-etcd-server-dev golang-github-gogo-protobuf-dev
  golang-github-grpc-ecosystem-grpc-gateway-dev etcd-server
)

install_missing_packages() {
  local missing=()
  local pkg
  for pkg in "${LEASEKEEPER_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
