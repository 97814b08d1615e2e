#!/usr/bin/env bash
# ./fedrt package [--no-build] [PRESET...]: the Debian packages (docs/install.md)
# into build/packages: fedrt and fedrt-dev (amd64) from preset release,
# fedrt-device for arm64 and armhf from presets aarch64 and armhf (static).
# Builds each preset first (incrementally) unless --no-build; then CPack
# (cmake/packaging.cmake) in each build folder.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/presets.sh
source "$ROOT/scripts/presets.sh"

build=1
presets=()
for a in "$@"; do
  case "$a" in
    --no-build) build=0 ;;
    release | aarch64 | armhf) presets+=("$a") ;;
    *) err "package: unknown argument '$a' (expected --no-build and presets among: release aarch64 armhf)"; exit 2 ;;
  esac
done
out="$ROOT/build/packages"
mkdir -p "$out"
if ((${#presets[@]} == 0)); then
  presets=(release aarch64 armhf)
  rm -f "$out"/*.deb  # no package of an older version left beside the new ones
fi
for preset in "${presets[@]}"; do
  if ((build)); then
    ensure_setup
    build_preset "$preset" >"$ROOT/build/package-$preset.log" 2>&1 \
      || { cat "$ROOT/build/package-$preset.log" >&2; err "building preset '$preset' failed"; exit 1; }
  elif [[ ! -f "$ROOT/build/$preset/build.ninja" ]]; then
    err "package --no-build: preset '$preset' is not built (build/$preset)"
    exit 1
  fi
  dir="$ROOT/build/$preset"
  rm -rf "$dir/packages"
  # Configure again: the version and file lists come from CMakeLists.txt.
  (cd "$dir" && cmake . >/dev/null && cpack -G DEB >"$dir/cpack.log" 2>&1) \
    || { cat "$dir/cpack.log" >&2; err "cpack failed in build/$preset"; exit 1; }
  for deb in "$dir"/packages/*.deb; do
    cp "$deb" "$out/"
    say "$(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
  done
done
say "packages in build/packages"
