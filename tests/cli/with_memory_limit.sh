#!/bin/sh
# with_memory_limit.sh KB PROGRAM ARGS...: runs PROGRAM under an address-space
# limit of KB kilobytes (ulimit -v), so an allocation the machine could not
# serve fails at once instead of swapping or waking the OOM killer.
limit="$1"
shift
ulimit -v "$limit" || exit 99
exec "$@"
