#!/usr/bin/env bash
# The Debian packages of ./fedrt package in clean Debian 12 roots (docs/install.md):
#  - fedrt_*_amd64.deb: `apt-get install ./fedrt_*.deb` in a fresh minimal
#    bookworm root resolves its declared Depends from the Debian mirror, then
#    fedrt-coordinator --help, fedrt-keys --out /tmp/k --devices 2 and
#    fedrt-device --help work inside the root (chroot), and the postinst made
#    the user fedrt of the systemd units;
#  - fedrt-device_*_arm64.deb and _armhf.deb: `dpkg -i` in another fresh root
#    (foreign architecture added), then the installed fedrt-device --help
#    under qemu-aarch64 / qemu-arm.
# The bootstrapped root (debootstrap --variant=minbase bookworm, about 90 s)
# is kept as a tar in FEDRT_CACHE (default ~/.cache/fedrt), like ccache's
# objects: each run unpacks a fresh copy (2 s). Downloaded .debs are kept
# there too (apt-archives/). Needs root (chroot) and the Debian mirror;
# exits 77 (skipped) when not root.
# Usage: run_debs.sh --packages DIR --out SCRATCH_DIR
set -euo pipefail
pkgs="" out=""
while (($#)); do
  case "$1" in
    --packages) pkgs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "run_debs.sh: unknown argument '$1' (expected --packages DIR --out DIR)" >&2; exit 2 ;;
  esac
done
[[ -n "$pkgs" && -n "$out" ]] || { echo "run_debs.sh: --packages and --out are required" >&2; exit 2; }
fail() { echo "FAIL: $*" >&2; exit 1; }
if [[ "$(id -u)" != 0 ]]; then
  echo "run_debs.sh: needs root for chroot and dpkg in a scratch root; skipped" >&2
  exit 77
fi
pkgs="$(cd "$pkgs" && pwd)"
host_deb="$(ls "$pkgs"/fedrt_*_amd64.deb 2>/dev/null | tail -n 1)"
[[ -n "$host_deb" ]] || fail "no fedrt_*_amd64.deb in $pkgs (./fedrt package)"

mirror="${FEDRT_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache="${FEDRT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fedrt}"
tarball="$cache/bookworm-minbase.tar"
mkdir -p "$cache/apt-archives"
if [[ ! -f "$tarball" ]]; then
  command -v debootstrap >/dev/null || fail "debootstrap is not installed (scripts/setup.sh installs it)"
  echo "bootstrapping a minimal Debian 12 root into $tarball (once)"
  boot="$(mktemp -d)"
  debootstrap --variant=minbase bookworm "$boot" "$mirror" >"$out.debootstrap.log" 2>&1 \
    || { tail -n 20 "$out.debootstrap.log" >&2; rm -rf "$boot"; fail "debootstrap failed"; }
  tar -C "$boot" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  rm -rf "$boot"
fi

rm -rf "$out"
mkdir -p "$out"
# A fresh root from the cached tar, with the sources of a Debian 12 install.
new_root() {
  local root="$1"
  mkdir -p "$root"
  tar -C "$root" -xf "$tarball"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${FEDRT_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} bookworm-security main
EOF
}

# --- the host package: apt resolves its Depends in a clean root -----------
root="$out/root-amd64"
new_root "$root"
mkdir -p "$root/tmp/debs"
cp "$host_deb" "$root/tmp/debs/"
cp "$cache/apt-archives/"*.deb "$root/var/cache/apt/archives/" 2>/dev/null || true
chroot "$root" apt-get update -qq >"$out/apt-update.log" 2>&1 || { cat "$out/apt-update.log" >&2; fail "apt-get update in the root"; }
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  "/tmp/debs/$(basename "$host_deb")" >"$out/apt-install.log" 2>&1 \
  || { tail -n 30 "$out/apt-install.log" >&2; fail "apt-get install $(basename "$host_deb") in a clean root"; }
cp -n "$root/var/cache/apt/archives/"*.deb "$cache/apt-archives/" 2>/dev/null || true
grep -E "^(Setting up|Unpacking) fedrt" "$out/apt-install.log" || true
echo "packages installed with it: $(grep -c '^Setting up' "$out/apt-install.log")"

# A program's --help starts with its name. The whole text is read before it is
# checked: `| head -n 1` would end the program with SIGPIPE, which pipefail
# counts as a failure when the program is still writing.
first_line_is() {  # first_line_is NAME COMMAND...: COMMAND succeeds and prints "NAME: ..." first
  local name="$1" text
  shift
  text="$("$@")" || return 1
  [[ "${text%%$'\n'*}" == "$name: "* ]]
}
first_line_is fedrt-coordinator chroot "$root" fedrt-coordinator --help || fail "fedrt-coordinator --help in the root"
first_line_is fedrt-device chroot "$root" fedrt-device --help || fail "fedrt-device --help in the root"
first_line_is fedrt-gateway chroot "$root" fedrt-gateway --help || fail "fedrt-gateway --help in the root"
chroot "$root" fedrt-sim --help >/dev/null || fail "fedrt-sim --help in the root"
chroot "$root" fedrt-status --help >/dev/null || fail "fedrt-status --help in the root"
chroot "$root" fedrt-data --help >/dev/null || fail "fedrt-data --help in the root"
chroot "$root" fedrt-keys --out /tmp/k --devices 2 || fail "fedrt-keys --out /tmp/k --devices 2 in the root"
[[ -f "$root/tmp/k/devices/dev0001/device.psk" && -f "$root/tmp/k/coordinator.crt" ]] || fail "fedrt-keys wrote no fleet"
chroot "$root" getent passwd fedrt >/dev/null || fail "the postinst did not create the user fedrt"
[[ -f "$root/usr/lib/systemd/system/fedrt-coordinator.service" ]] || fail "no fedrt-coordinator.service"
echo "amd64: $(basename "$host_deb") installs with its Depends; fedrt-coordinator, fedrt-keys, fedrt-device run"

# --- the device packages: dpkg -i, then the programs under qemu-user -----
for pair in arm64:qemu-aarch64 armhf:qemu-arm; do
  arch="${pair%%:*}" qemu="${pair#*:}"
  deb="$(ls "$pkgs"/fedrt-device_*_"$arch".deb 2>/dev/null | tail -n 1)"
  [[ -n "$deb" ]] || fail "no fedrt-device_*_$arch.deb in $pkgs (./fedrt package builds presets aarch64 and armhf)"
  root="$out/root-$arch"
  new_root "$root"
  cp "$deb" "$root/tmp/"
  chroot "$root" dpkg --add-architecture "$arch"
  chroot "$root" dpkg -i "/tmp/$(basename "$deb")" >"$out/dpkg-$arch.log" 2>&1 \
    || { cat "$out/dpkg-$arch.log" >&2; fail "dpkg -i $(basename "$deb")"; }
  [[ -f "$root/usr/lib/systemd/system/fedrt-device@.service" ]] || fail "$arch: no fedrt-device@.service"
  chroot "$root" getent passwd fedrt >/dev/null || fail "$arch: the postinst did not create the user fedrt"
  first_line_is fedrt-device "$qemu" "$root/usr/bin/fedrt-device" --help \
    || fail "$arch: $qemu $root/usr/bin/fedrt-device --help"
  first_line_is fedrt-gateway "$qemu" "$root/usr/bin/fedrt-gateway" --help \
    || fail "$arch: $qemu $root/usr/bin/fedrt-gateway --help"
  echo "$arch: dpkg -i $(basename "$deb"); fedrt-device and fedrt-gateway --help under $qemu"
done
rm -rf "$out"/root-*
echo "debs: ok"
