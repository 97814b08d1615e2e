# Shared by ./fedrt and scripts/test.sh (sourced, not run): install what is
# missing, fetch what a preset needs, configure and build a CMake preset.
# Expects ROOT (the repository) to be set by the caller.

JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

say() { echo "[fedrt] $*"; }
err() { echo "[fedrt] error: $*" >&2; }

# Run scripts/setup.sh at most once per invocation, unless FEDRT_SKIP_SETUP=1.
SETUP_DONE=0
ensure_setup() {
  if [[ "${FEDRT_SKIP_SETUP:-0}" == 1 || "$SETUP_DONE" == 1 ]]; then
    return 0
  fi
  "$ROOT/scripts/setup.sh" || { err "setup failed (scripts/setup.sh)"; return 1; }
  SETUP_DONE=1
}

# Fetch what a preset needs before CMake configures it (idempotent; all of it
# lands under build/, nothing outside the repo). scripts/fetch_sources.sh
# (apt-get source nanopb mbedtls) gives every preset its mbedTLS: 3.6 for the
# host and the ARM Linux boards (cmake/host_mbedtls.cmake), and with nanopb
# for the firmware (and fedrt-fw-host, its client over TCP, in the host presets).
#   aarch64, armhf        -> also scripts/sysroot.sh ARCH (Debian target libraries, dpkg -x)
prepare_preset() {
  local preset="$1"
  case "$preset" in
    aarch64|armhf) "$ROOT/scripts/sysroot.sh" "$preset" && "$ROOT/scripts/fetch_sources.sh" ;;
    cortex-m4|cortex-m3|release|debug) "$ROOT/scripts/fetch_sources.sh" ;;
    *) return 0 ;;
  esac
}

# Configure (if needed) and build PRESET. Does not run setup.
# Failures are returned explicitly so this also works where errexit is off.
build_preset() {
  local preset="$1"
  prepare_preset "$preset" || { err "preparing preset '$preset' failed"; return 1; }
  # build.ninja, not only CMakeCache.txt: a configure that failed half-way
  # (generate step) leaves the cache behind, and must be run again.
  if [[ ! -f "$ROOT/build/$preset/CMakeCache.txt" || ! -f "$ROOT/build/$preset/build.ninja" ]]; then
    say "configuring preset '$preset' -> build/$preset"
    (cd "$ROOT" && cmake --preset "$preset") \
      || { err "cmake configure failed for preset '$preset'"; return 1; }
  else
    say "preset '$preset' already configured (build/$preset)"
  fi
  say "building preset '$preset' with $JOBS jobs"
  # NICE (scripts/test.sh): build at that niceness, below tests running beside it.
  (cd "$ROOT" && nice -n "${NICE:-0}" cmake --build --preset "$preset" -j "$JOBS") \
    || { err "build failed for preset '$preset'"; return 1; }
  say "build '$preset' done; binaries in build/$preset/bin/"
}
