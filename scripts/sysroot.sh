#!/usr/bin/env bash
# Target libraries for the ARM Linux device builds, in a
# project-owned sysroot: build/sysroot/<ARCH> (ARCH = aarch64 | armhf).
#
#   scripts/sysroot.sh aarch64|armhf [--force]
#
# Debian's arm64 / armhf packages are fetched with `apt-get download` through a
# private APT configuration (its own package lists and cache under
# build/sysroot/apt-<debian arch>; the system's sources are only read, never
# changed, and no `dpkg --add-architecture`), then unpacked with `dpkg -x`.
# The C library and libstdc++ come with the cross compiler
# (g++-aarch64-linux-gnu / g++-arm-linux-gnueabihf); the sysroot holds what
# the device runtime and its unit tests link (static archives) or include.
# Idempotent: a stamp records the package set; nothing is fetched when it matches.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# What fedrt-device, fedrt-gateway and the cross-built unit tests need:
#   static libraries  : libprotobuf-dev
#                       (libprotobuf-lite.a, same 3.21 as the host's protoc), libgtest-dev,
#                       libsodium-dev (libsodium.a: X25519 of secure aggregation),
#                       libcsv-dev (libcsv.a: CSV shards of the devices' own data)
#   headers only      : libfmt-dev (FMT_HEADER_ONLY), libtomlplusplus-dev (TOML_HEADER_ONLY),
#                       libeigen3-dev, libcli11-dev, nlohmann-json3-dev,
#                       libasio-dev and libspdlog-dev (SPDLOG_HEADER_ONLY): fedrt-gateway
# Not needed on a board: SQLite (coordinator only).
# (mbedTLS 3.6 is compiled from source with the cross compiler: cmake/host_mbedtls.cmake.)
PACKAGES=(
  libsodium-dev
  libcsv-dev
  libprotobuf-dev
  libgtest-dev
  libfmt-dev
  libtomlplusplus-dev
  libeigen3-dev
  libcli11-dev
  nlohmann-json3-dev
  libasio-dev
  libspdlog-dev
)

die() { echo "sysroot.sh: error: $*" >&2; exit 1; }

ARCH="${1:-}"
FORCE=0
[[ "${2:-}" == --force ]] && FORCE=1
case "$ARCH" in
  aarch64) DEBARCH=arm64 ;;
  armhf) DEBARCH=armhf ;;
  *) die "usage: scripts/sysroot.sh aarch64|armhf [--force] (got '${ARCH}')" ;;
esac

SYSROOT="$ROOT/build/sysroot/$ARCH"
APTDIR="$ROOT/build/sysroot/apt-$DEBARCH"
STAMP="$SYSROOT/.fedrt-sysroot"
WANT="$DEBARCH ${PACKAGES[*]}"

if ((FORCE == 0)) && [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "[fedrt] sysroot $ARCH: up to date (build/sysroot/$ARCH)"
  exit 0
fi

command -v apt-get >/dev/null || die "apt-get not found (Debian only)"
command -v dpkg >/dev/null || die "dpkg not found (Debian only)"

# Private APT configuration: the target architecture as the only one, own
# lists/cache/status so the system's APT state is never touched.
mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$SYSROOT/debs"
: >"$APTDIR/status"
cat >"$APTDIR/apt.conf" <<EOF
APT::Architecture "$DEBARCH";
APT::Architectures { "$DEBARCH"; };
Dir::State "$APTDIR";
Dir::State::Lists "$APTDIR/lists";
Dir::State::status "$APTDIR/status";
Dir::Cache "$APTDIR/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
export APT_CONFIG="$APTDIR/apt.conf"

log="$APTDIR/apt.log"
echo "[fedrt] sysroot $ARCH: apt-get update ($DEBARCH package lists, private APT state)"
# A mirror caught mid-sync fails one index (seen for bookworm-security armhf:
# "File has unexpected size"); the others are still usable, so this is a
# warning, and the download below fails clearly if a package is really missing.
if ! apt-get -o Acquire::Retries=3 update >"$log" 2>&1; then
  echo "[fedrt] sysroot $ARCH: warning: some $DEBARCH package lists failed to download; using the rest:" >&2
  grep -E '^(E|Err):' "$log" | head -4 >&2 || true
fi

echo "[fedrt] sysroot $ARCH: apt-get download ${PACKAGES[*]}"
(cd "$SYSROOT/debs" && rm -f ./*.deb && apt-get download "${PACKAGES[@]}") >>"$log" 2>&1 \
  || { tail -20 "$log" >&2; die "apt-get download failed for $DEBARCH (log: $log)"; }

# Unpack into a fresh tree (keeps debs/), then mark it complete.
find "$SYSROOT" -mindepth 1 -maxdepth 1 ! -name debs -exec rm -rf {} +
for deb in "$SYSROOT"/debs/*.deb; do
  dpkg -x "$deb" "$SYSROOT" || die "dpkg -x $deb failed"
done
for lib in libprotobuf-lite.a libgtest.a libsodium.a; do
  [[ -n "$(find "$SYSROOT/usr/lib" -name "$lib" -print -quit)" ]] || die "$lib missing from the $DEBARCH packages"
done
# protoc runs on the host: the target's libprotobuf-lite must be the same release.
host_pb="$(protoc --version 2>/dev/null | awk '{print $2}')"
target_pb="$(ls "$SYSROOT"/debs/libprotobuf-dev_*.deb | sed -E 's/.*libprotobuf-dev_([0-9.]+).*/\1/')"
if [[ -n "$host_pb" && "$host_pb" != "$target_pb" ]]; then
  die "host protoc is $host_pb but the $DEBARCH libprotobuf-dev is $target_pb (generated code would not match)"
fi
echo "$WANT" >"$STAMP"
echo "[fedrt] sysroot $ARCH: ready (build/sysroot/$ARCH, $(ls "$SYSROOT/debs" | wc -l) packages)"
