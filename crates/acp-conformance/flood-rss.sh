#!/usr/bin/env bash
# Peak memory and wall time of acp-conformance against each hostile test agent of
# broken-agent (floods, silence, deafness); see docs/conformance.md, "Limits".
#
#   bash crates/acp-conformance/flood-rss.sh [CHECKER]
#
# CHECKER defaults to the release build of this tree, built first (honouring
# CARGO_TARGET_DIR); give another build of acp-conformance to compare. Every run is capped at
# 4 GiB of address space (prlimit --as) and killed after LIMIT seconds (default 120), so that
# a checker without bounds cannot eat the machine; a run that hits either cap says so.
# Options of every run: ARGS (default: --timeout 2 --turn-timeout 2 --grace-ms 500); agents:
# BUGS (default: all six).
# Needs GNU time (/usr/bin/time) and prlimit, and Linux (/proc).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
(cd "$repo" && cargo build --quiet --release -p acp-rs-conformance --bins)
checker="${1:-$target/release/acp-conformance}"
agent="$target/release/broken-agent"
limit="${LIMIT:-120}"
read -r -a args <<<"${ARGS:---timeout 2 --turn-timeout 2 --grace-ms 500}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# vmhwm PID: the peak resident set size of PID so far, in KiB (0 once it is gone).
vmhwm() { awk '/^VmHWM:/ { print $2; found = 1 } END { if (!found) print 0 }' "/proc/$1/status" 2>/dev/null || echo 0; }

printf '%-22s %9s %12s  %s\n' "agent" "wall (s)" "peak RSS" "how it ended"
for bug in ${BUGS:-flood-garbage flood-long-line flood-notifications flood-requests-deaf silent deaf}; do
    /usr/bin/time -f '%e %M' -o "$scratch/time" \
        prlimit --as=4294967296 -- \
        "$checker" "${args[@]}" --color never -- "$agent" --bug "$bug" \
        >"$scratch/out" 2>"$scratch/err" &
    timer=$!
    started=$SECONDS
    checker_pid=""
    peak=0
    killed=""
    # GNU time exact figures need the checker to exit; meanwhile watch it, to give a figure
    # (the last VmHWM seen) and to kill it at the limit.
    while kill -0 "$timer" 2>/dev/null; do
        [[ -n "$checker_pid" ]] || checker_pid="$(cat "/proc/$timer/task/$timer/children" 2>/dev/null | awk '{ print $1 }')"
        if [[ -n "$checker_pid" ]]; then
            now="$(vmhwm "$checker_pid")"
            ((now > peak)) && peak=$now
            if ((SECONDS - started >= limit)) && [[ -z "$killed" ]]; then
                killed=1
                kill -KILL "$checker_pid" 2>/dev/null || true
            fi
        fi
        sleep 0.2
    done
    status=0
    wait "$timer" || status=$?
    read -r wall rss < <(tail -n 1 "$scratch/time")
    if [[ -n "$killed" ]]; then
        wall="$((SECONDS - started))"
        rss=$peak
        ended="killed at the ${limit} s limit (peak RSS: the last VmHWM seen)"
    else
        case "$status" in
            0 | 1) ended="exit $status: $(grep -E '^[0-9]+ checks:' "$scratch/out" || true)" ;;
            134) ended="aborted: memory allocation failed at the 4 GiB cap" ;;
            *) ended="exit $status: $(tail -n 1 "$scratch/err")" ;;
        esac
    fi
    printf '%-22s %9s %9d MiB  %s\n' "$bug" "$wall" "$((rss / 1024))" "$ended"
done
