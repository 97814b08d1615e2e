#!/usr/bin/env bash
# Fetches the Debian source packages fedrt compiles its third-party C from into
# build/third_party/: from bookworm, nanopb 0.4.7 (firmware runtime) and
# libsodium 1.0.18 (the firmware's X25519, its ref10 ladder); from
# trixie, mbedTLS 3.6 LTS (the TLS of the host: coordinator, Linux devices,
# tools, cross builds; and of the Cortex-M firmware). With a
# PRIVATE apt configuration (own sources.list with deb-src lines, own state,
# cache and lists under build/third_party/apt): the system's apt sources and
# state are never touched. Idempotent: packages already unpacked are skipped.
#
# usage: scripts/fetch_sources.sh [--force]
#   FEDRT_DEBIAN_MIRROR           mirror for bookworm, trixie and their -updates
#                                 (default: the system's deb.debian.org-style URI, else deb.debian.org)
#   FEDRT_DEBIAN_SECURITY_MIRROR  mirror for bookworm-security and trixie-security
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/build/third_party"
APT_DIR="$OUT/apt"
# package/suite/directory glob of the unpacked tree (dpkg-source names it PKG-VERSION)
PACKAGES=('nanopb/bookworm/nanopb-0.4.*' 'mbedtls/trixie/mbedtls-3.*' 'libsodium/bookworm/libsodium-1.0.*')

force=0
for a in "$@"; do
  case "$a" in
    --force) force=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "fetch_sources.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done

say() { echo "[fetch_sources] $*"; }

# The unpacked source tree of an entry of PACKAGES (its directory glob).
src_dir() { find "$OUT" -maxdepth 1 -mindepth 1 -type d -name "${1##*/}" 2>/dev/null | sort -V | tail -1; }

missing=()
for p in "${PACKAGES[@]}"; do
  if [[ $force == 1 || -z "$(src_dir "$p")" ]]; then missing+=("$p"); fi
done
if ((${#missing[@]} == 0)); then
  for p in "${PACKAGES[@]}"; do say "${p%%/*} (${p#*/}): $(src_dir "$p") (already fetched)"; done
  exit 0
fi

for tool in apt-get dpkg-source; do
  command -v "$tool" >/dev/null || { echo "fetch_sources.sh: '$tool' not found (apt-get install dpkg-dev)" >&2; exit 1; }
done

# Mirror: reuse the URI the system uses for Debian (deb822 or one-line format).
sys_uri() {
  local want="$1" f
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list; do
    [[ -f "$f" ]] || continue
    grep -Ev '^[[:space:]]*#' "$f" 2>/dev/null | grep -Eo "https?://[^ ]*/$want" | head -1
  done | head -1
}
MIRROR="${FEDRT_DEBIAN_MIRROR:-$(sys_uri 'debian' || true)}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
SEC_MIRROR="${FEDRT_DEBIAN_SECURITY_MIRROR:-$(sys_uri 'debian-security' || true)}"
SEC_MIRROR="${SEC_MIRROR:-http://deb.debian.org/debian-security}"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

mkdir -p "$APT_DIR"/{lists/partial,cache/archives/partial,etc/apt.conf.d,etc/preferences.d,etc/trusted.gpg.d}
{
  for suite in bookworm trixie; do
    echo "deb-src [signed-by=$KEYRING] $MIRROR $suite main"
    echo "deb-src [signed-by=$KEYRING] $MIRROR $suite-updates main"
    echo "deb-src [signed-by=$KEYRING] $SEC_MIRROR $suite-security main"
  done
} >"$APT_DIR/etc/sources.list"
mkdir -p "$APT_DIR/etc/sources.list.d"
cat >"$APT_DIR/apt.conf" <<EOF
Dir::Etc "$APT_DIR/etc";
Dir::Etc::sourcelist "$APT_DIR/etc/sources.list";
Dir::Etc::sourceparts "$APT_DIR/etc/sources.list.d";
Dir::Etc::parts "$APT_DIR/etc/apt.conf.d";
Dir::Etc::preferencesparts "$APT_DIR/etc/preferences.d";
Dir::State "$APT_DIR";
Dir::State::lists "$APT_DIR/lists";
Dir::State::status "$APT_DIR/status";
Dir::Cache "$APT_DIR/cache";
Debug::NoLocking "true";
APT::Get::AllowUnauthenticated "false";
EOF
: >"$APT_DIR/status"
export APT_CONFIG="$APT_DIR/apt.conf"

say "apt-get update (private config: $APT_CONFIG)"
apt-get -q -o APT::Sandbox::User=root update >"$APT_DIR/update.log" 2>&1 || {
  cat "$APT_DIR/update.log" >&2
  echo "fetch_sources.sh: apt-get update with the private configuration failed" >&2
  exit 1
}

cd "$OUT"
for entry in "${missing[@]}"; do
  p="${entry%%/*}" rest="${entry#*/}"
  suite="${rest%%/*}" glob="${rest#*/}"
  log="$APT_DIR/source-$p-$suite.log"
  if [[ $force == 1 ]]; then
    old="$(src_dir "$entry")"
    [[ -n "$old" ]] && rm -rf "$old"
  fi
  say "apt-get source $p/$suite"
  # --download-only, then unpack ourselves: no build-dependency checks, no patches applied twice.
  apt-get -q -o APT::Sandbox::User=root source --download-only "$p/$suite" >"$log" 2>&1 || {
    cat "$log" >&2
    echo "fetch_sources.sh: apt-get source $p/$suite failed" >&2
    exit 1
  }
  # The .dsc of this suite's version: PKG_VERSION.dsc, VERSION matching the tree's glob.
  ver_glob="${glob#"$p"-}"
  dsc="$(ls -1 "$OUT"/"${p}"_$ver_glob.dsc 2>/dev/null | sort -V | tail -1)"
  [[ -n "$dsc" ]] || { echo "fetch_sources.sh: no ${p}_$ver_glob.dsc after apt-get source $p/$suite" >&2; exit 1; }
  dpkg-source --no-check -x "$dsc" >>"$log" 2>&1 || {
    cat "$log" >&2
    echo "fetch_sources.sh: dpkg-source -x $dsc failed" >&2
    exit 1
  }
  say "$p ($suite): $(src_dir "$entry")"
done
