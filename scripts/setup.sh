#!/usr/bin/env bash
# Install the Debian packages fedrt needs to build, test and plot.
# Idempotent: packages already installed are detected with dpkg-query and
# apt-get is only invoked (update once, then install) when something is missing.
set -uo pipefail

PACKAGES=(
  # toolchain and build system
  build-essential
  cmake
  ninja-build
  pkg-config
  # compiler cache for every preset (~/.cache/ccache, shared by all clones:
  # cmake/compiler_cache.cmake) and a fast linker for the host presets
  ccache
  mold
  git
  # C++ libraries used by the runtime (linear algebra, config, CLI, JSON, logging)
  libeigen3-dev
  libtomlplusplus-dev
  libcli11-dev
  nlohmann-json3-dev
  libspdlog-dev
  libfmt-dev
  # devices' own data: CSV shards (RFC 4180 fields)
  libcsv-dev
  # networked fleet: wire messages, TLS, event loop, coordinator state
  protobuf-compiler
  libprotobuf-dev
  libsodium-dev
  libasio-dev
  libsqlite3-dev
  # the coordinator's HTTP endpoint: dashboard, JSON, Prometheus /metrics (docs/dashboard.md)
  libcpp-httplib-dev
  # unit tests and micro-benchmarks
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  # fuzz target of the wire decoder (libFuzzer; the main build uses g++)
  clang-14
  libclang-rt-14-dev
  # edge targets: cross compilers for ARM Linux boards and Cortex-M,
  # the emulators that run their binaries, the nanopb generator, and dpkg-dev
  # for `apt-get source` (nanopb runtime; mbedTLS 3.6 for the host and the firmware).
  # Only the C++ headers of arm-none-eabi's libstdc++ (the firmware links no
  # libstdc++; libstdc++-arm-none-eabi-newlib would add 1.5 GB).
  g++-aarch64-linux-gnu
  g++-arm-linux-gnueabihf
  gcc-arm-none-eabi
  libnewlib-arm-none-eabi
  libstdc++-arm-none-eabi-dev
  qemu-user
  qemu-system-arm
  nanopb
  dpkg-dev
  # mpirun -np K fedrt-sim: the simulator's agents across MPI ranks (docs/architecture.md, "MPI")
  libopenmpi-dev
  openmpi-bin
  # the Debian packages' check (tests/install/run_debs.sh): a clean Debian 12
  # root to install them in, and systemd-analyze for the units (packaging/systemd)
  debootstrap
  systemd
  # plotting of experiment results (scripts/plot_run.py)
  python3
  python3-matplotlib
  # mbedTLS's PSA driver-dispatch generator for the firmware's X25519 driver (cmake/fw_mbedtls.cmake)
  python3-jinja2
  # the Python module (import fedrt: runtime/python, docs/python.md) and its tests
  python3-dev
  python3-pybind11
  python3-numpy
  python3-pytest
  # the dashboard's browser test: headless Chromium driven through WebDriver
  chromium
  chromium-driver
  python3-selenium
  # /metrics parsed by the Prometheus client library's own parser in that test
  python3-prometheus-client
  # the coordinator's TLS as a standard client sees it (tests/net/tls_openssl_test.py, bench/tls_bench.py)
  openssl
)

die() {
  echo "setup.sh: error: $*" >&2
  exit 1
}

is_installed() {
  local status
  status="$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" || return 1
  # "install ok installed" (or "hold ok installed"); may repeat for multi-arch.
  [[ "$status" == *" ok installed"* ]]
}

command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found; this script supports Debian/Ubuntu only"

missing=()
for pkg in "${PACKAGES[@]}"; do
  is_installed "$pkg" || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "[fedrt] setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=()
if ((EUID != 0)); then
  command -v sudo >/dev/null 2>&1 \
    || die "not root and sudo is not available; install as root: apt-get install ${missing[*]}"
  SUDO=(sudo)
fi

log="$(mktemp "${TMPDIR:-/tmp}/fedrt-setup.XXXXXX")" || die "cannot create a temporary log file"
trap 'rm -f "$log"' EXIT

show_log() {
  echo "---- last lines of apt-get output ----" >&2
  tail -n 30 "$log" >&2
}

printf '[fedrt] setup: installing %d missing package(s): %s ... ' "${#missing[@]}" "${missing[*]}"

if ! "${SUDO[@]}" apt-get update >"$log" 2>&1; then
  echo "failed"
  show_log
  die "apt-get update failed"
fi

if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
  echo "failed"
  show_log
  die "apt-get install failed for: ${missing[*]}"
fi

# Double-check: apt-get may succeed without actually providing a package.
still_missing=()
for pkg in "${missing[@]}"; do
  is_installed "$pkg" || still_missing+=("$pkg")
done
if ((${#still_missing[@]} != 0)); then
  echo "failed"
  die "packages still not installed after apt-get: ${still_missing[*]}"
fi

echo "done"
