#!/usr/bin/env bash
# Remote load, ours against the official SDKs' servers (issue 38): the same turns (acp-remote's
# `load` example: N clients at once, each its own connection, a session and one prompt turn of
# K streamed message chunks of ~100 bytes) against three servers, each in a process of its own
# with the bench agent in that process, over WebSocket and over Streamable HTTP (HTTP/1.1):
#
# - ours:   `load --serve` (acp_remote::Server, the load example's agent on acp-runtime);
# - TS:     interop/load/ts-server.mjs, the TypeScript SDK's AcpServer with its Node adapters,
#           in front of the same agent written with that SDK;
# - Python: interop/load/py-server.py, the Python SDK's create_asgi_app under Hypercorn, in
#           front of the same agent written with that SDK.
#
#   bash interop/remote-load.sh [RUNS] [N...]      # default: 3 runs, N = 100 500
#
# Each run starts every server afresh, the servers in a rotating order (one run ours first, the
# next TS first, ...), so that the machine's load falls on all of them alike. Prints each
# measurement as it is made and then a table: for each N, transport and server, the median over
# the runs of turns/s, the p50 and p99 turn latency and the server's RSS growth per connection
# (`load --pid`, from /proc, after a warm-up of LOAD_WARMUP clients, default 1, whose turns
# run and end before the first sample: what a server does once, such as paging its code in,
# is not per connection), with the load average at the start of that group. LOAD_CHUNKS
# (default 50) and LOAD_TIMEOUT (default 120 s per measurement) tune it; LOAD_PROFILE=debug
# uses a debug build of `load` (a smoke run, as .ci/run's: its numbers mean nothing). A measurement that
# fails (a server that does not come up, a client that errs) is printed as such and the script
# exits 1 at the end. Uses the installs of interop/run.sh (target/interop/), made here the same
# way when absent. Needs cargo, node + npm, python3 with venv.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pins="$repo/interop"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
work="$repo/target/interop"
runs="${1:-3}"
shift || true
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(100 500)
chunks="${LOAD_CHUNKS:-50}"
warmup="${LOAD_WARMUP:-1}"
timeout_secs="${LOAD_TIMEOUT:-120}"
profile="${LOAD_PROFILE:-release}"
case "$profile" in
release) profile_flag=(--release) ;;
debug) profile_flag=() ;;
*) printf 'remote-load: LOAD_PROFILE is release or debug, not %s\n' "$profile" >&2; exit 2 ;;
esac

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'remote-load: %s\n' "$*" >&2; exit 2; }
for tool in cargo node npm python3 timeout; do
    command -v "$tool" >/dev/null || die "\`$tool\` is not installed"
done
mkdir -p "$work"

# The pinned SDKs, installed as interop/run.sh installs them (its markers, so that each script
# reuses the other's install).
npm_dir="$work/npm"
if ! cmp -s "$pins/package-lock.json" "$npm_dir/package-lock.json" ||
    [[ ! -f "$npm_dir/.installed" ]]; then
    say "npm install (interop/package.json)"
    rm -rf "$npm_dir"
    mkdir -p "$npm_dir"
    cp "$pins/package.json" "$pins/package-lock.json" "$npm_dir/"
    (cd "$npm_dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error)
    touch "$npm_dir/.installed"
fi
venv="$work/venv"
if ! cmp -s "$pins/requirements.txt" "$venv/requirements.txt"; then
    say "pip install -r interop/requirements.txt"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip --disable-pip-version-check --quiet install --no-deps \
        -r "$pins/requirements.txt"
    cp "$pins/requirements.txt" "$venv/requirements.txt"
fi
# ESM resolves bare imports from the script's own directory: the TS launcher runs from a copy
# beside node_modules.
cp "$pins/load/ts-server.mjs" "$npm_dir/load-ts-server.mjs"

say "cargo build ${profile_flag[*]} -p acp-rs-remote --example load"
(cd "$repo" && cargo build --quiet "${profile_flag[@]}" -p acp-rs-remote --example load)
load="$target/$profile/examples/load"

logs="$work/remote-load"
mkdir -p "$logs"
server_pid=""
stop_server() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
trap stop_server EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server NAME PORT: starts NAME's server on PORT (its log in $logs) and waits up to 20 s
# until the port accepts connections; server_pid is the server's own process (exec'd).
start_server() {
    local name="$1" port="$2"
    case "$name" in
    ours) exec "$load" --serve "127.0.0.1:$port" --chunks "$chunks" ;;
    ts) cd "$npm_dir" && PORT="$port" CHUNKS="$chunks" exec node load-ts-server.mjs ;;
    python) exec "$venv/bin/python" "$pins/load/py-server.py" "$port" "$chunks" ;;
    esac >"$logs/$name.server.log" 2>&1 </dev/null &
    server_pid=$!
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.2
    done
    return 1
}

results="$logs/results.tsv"
: >"$results"
failed=0
servers=(ours ts python)
for n in "${sizes[@]}"; do
    for transport in ws http; do
        loadavg="$(cut -d' ' -f1-3 /proc/loadavg)"
        for run in $(seq "$runs"); do
            for i in 0 1 2; do
                name="${servers[$(((run + i - 1) % 3))]}"
                port="$(free_port)"
                out="$logs/$name-$transport-$n-$run.log"
                if ! start_server "$name" "$port"; then
                    printf '%s %s N=%s run %s: the server did not come up (%s)\n' \
                        "$name" "$transport" "$n" "$run" "$logs/$name.server.log"
                    failed=1
                    stop_server
                    continue
                fi
                sleep 0.5 # past the server's start-up, so that its RSS baseline is idle
                if timeout "$timeout_secs" "$load" "$n" --url "$transport://127.0.0.1:$port/acp" \
                    --pid "$server_pid" --warmup "$warmup" --chunks "$chunks" >"$out" 2>&1; then
                    line="$(python3 - "$out" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
turns = re.search(r"([0-9.]+) turns/s", text).group(1)
p50, p99 = re.search(r"p50 ([0-9.]+) ms, p99 ([0-9.]+) ms", text).groups()
# The server's line, not the load process's own "peak RSS ... KiB per connection" before it.
kib = re.search(r"server \(pid \d+\):.*?: ([0-9.]+) KiB per connection", text).group(1)
print(turns, p50, p99, kib, sep="\t")
PY
)"
                    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$transport" "$name" "$run" "$line" \
                        "$loadavg" >>"$results"
                    printf '%s %s N=%s run %s: %s\n' "$name" "$transport" "$n" "$run" \
                        "$(tr '\t' ' ' <<<"$line") (turns/s, p50 ms, p99 ms, KiB/conn)"
                else
                    printf '%s %s N=%s run %s: FAILED (%s)\n' "$name" "$transport" "$n" "$run" "$out"
                    failed=1
                fi
                stop_server
            done
        done
    done
done

python3 - "$results" <<'PY'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
groups = {}
for n, transport, name, run, turns, p50, p99, kib, loadavg in rows:
    groups.setdefault((int(n), transport, name), []).append(
        (float(turns), float(p50), float(p99), float(kib), loadavg))
print()
print("| N | transport | server | runs | turns/s | p50 turn | p99 turn | server RSS per connection | load average |")
print("|---:|---|---|---:|---:|---:|---:|---:|---|")
names = {"ours": "ours (acp-remote)", "ts": "TypeScript SDK", "python": "Python SDK"}
transports = {"ws": "WebSocket", "http": "Streamable HTTP"}
for (n, transport, name), values in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "ws", list(names).index(kv[0][2]))):
    median = lambda i: statistics.median(v[i] for v in values)
    print(f"| {n} | {transports[transport]} | {names[name]} | {len(values)} | {median(0):,.0f} | "
          f"{median(1):.1f} ms | {median(2):.1f} ms | {median(3):,.0f} KiB | {values[0][4]} |")
PY
exit "$failed"
