#!/usr/bin/env bash
# Three `acp-bridge serve` instances behind HAProxy (the recipe of docs/deploy.md), 100 clients
# mixing WebSocket and Streamable HTTP (the `fleet` example of acp-remote):
#   1. every turn completes, the clients spread over the three;
#   2. one instance killed (SIGKILL) mid-run: its clients get an error, the others never notice;
#   3. one instance drained (SIGTERM): its running turns finish, clients that arrive meanwhile
#      land on the others, and it exits within its drain deadline.
# Skipped (exit 0, with a message) when haproxy is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v haproxy >/dev/null; then
  echo "loadbalancer: SKIPPED: haproxy is not installed (apt-get install -y haproxy)"
  exit 0
fi

cargo build -q -p acp-rs-remote --features metrics --example fleet --bin acp-bridge
target_dir=$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')
bridge="$target_dir/debug/acp-bridge"
fleet="$target_dir/debug/examples/fleet"

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

base=$((20000 + RANDOM % 20000))
lb=$base
port() { echo $((base + $1)); }

# start NAME INDEX: one bridge serving the fleet agent (turns of 20 chunks, 50 ms apart).
declare -A bridge_pid
start() {
  FLEET_BACKEND=$1 "$bridge" serve --listen "127.0.0.1:$(port "$2")" --drain-timeout 20 \
    -- "$fleet" agent --chunks 20 --delay-ms 50 2>"$work/$1.log" &
  bridge_pid[$1]=$!
  pids+=($!)
  for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$(port "$2")/healthz" >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "bridge $1 did not start"; cat "$work/$1.log"; exit 1
}
start s1 1; start s2 2; start s3 3

sed -e "s/@LB@/$lb/" -e "s/@S1@/$(port 1)/" -e "s/@S2@/$(port 2)/" -e "s/@S3@/$(port 3)/" \
  >"$work/haproxy.cfg" <<'CFG'
global
    maxconn 4096

defaults
    mode http
    timeout connect 2s
    # SSE streams and WebSockets stay open: the server sends a keep-alive comment on an idle
    # SSE stream every 15 s; WebSockets are tunnels once upgraded.
    timeout client 1h
    timeout server 1h
    timeout tunnel 1h
    timeout http-request 10s
    # A request refused by a draining (or full) server is replayed on another: it did nothing
    # there. A connection refused (a dead server) likewise, before anything was sent.
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response 503

frontend acp
    bind 127.0.0.1:@LB@
    default_backend agents

backend agents
    balance leastconn
    # Each Streamable HTTP connection to the server that holds it: the server names it in the
    # Acp-Connection-Id header of its answer to `initialize`, and the client sends that
    # header with every later request. WebSocket needs nothing: one TCP connection.
    stick-table type string len 64 size 1m expire 1h
    stick store-response res.hdr(Acp-Connection-Id)
    stick match req.hdr(Acp-Connection-Id)
    # 200 while serving, 503 while draining: both are alive (a draining server still serves
    # its own connections; it refuses new ones with 503, which are retried elsewhere).
    option httpchk GET /healthz
    http-check expect rstatus ^(200|503)$
    default-server check inter 500ms fall 2 rise 1
    server s1 127.0.0.1:@S1@
    server s2 127.0.0.1:@S2@
    server s3 127.0.0.1:@S3@
CFG
haproxy -f "$work/haproxy.cfg" -db >"$work/haproxy.log" 2>&1 &
pids+=($!)
sleep 1

clients() { "$fleet" clients "127.0.0.1:$lb" "$@"; }

echo "== 1. 100 clients (50 WebSocket, 50 Streamable HTTP), 3 turns each"
clients --clients 100 --turns 3 >"$work/run1.txt" || { cat "$work/run1.txt"; exit 1; }
grep -E '^(backend|100 clients)' "$work/run1.txt"
echo "s1's metrics after it:"
curl -sf "http://127.0.0.1:$(port 1)/metrics" | grep -E '^acp_remote_(connections_opened_total|turns_total|turns_running|refusals_total\{reason="draining"|budget_used_bytes\{budget="sse)'

echo "== 2. s2 killed (SIGKILL) two seconds into a run of 100 clients, 4 turns each"
clients --clients 100 --turns 4 >"$work/run2.txt" &
run=$!
sleep 2
kill -9 "${bridge_pid[s2]}"
set +e; wait "$run"; status=$?; set -e
grep -E '^(backend|100 clients)' "$work/run2.txt"
echo "the errors of s2's clients:"
grep ' failed ' "$work/run2.txt" | sed 's/^client [0-9]* //' | sed 's/ after [0-9]* turns//' | sort | uniq -c
if grep ' failed ' "$work/run2.txt" | grep -v ' s2 failed ' >/dev/null; then
  echo "FAIL: clients of other instances noticed:"; grep ' failed ' "$work/run2.txt" | grep -v ' s2 failed '; exit 1
fi
[[ $status -ne 0 ]] || { echo "FAIL: s2's clients noticed nothing"; exit 1; }
s2_ok=$(grep -c ' s2 ok' "$work/run2.txt" || true)
[[ $s2_ok -eq 0 ]] || { echo "FAIL: $s2_ok clients of s2 finished"; exit 1; }

echo "== 3. s3 drained (SIGTERM) one second into a run of 100 clients, 1 turn each; 30 more arrive during the drain"
start s2 2
sleep 1
clients --clients 100 --turns 1 >"$work/run3.txt" &
run=$!
sleep 1
drain_started=$(date +%s.%N)
kill -TERM "${bridge_pid[s3]}"
sleep 0.3
clients --clients 30 --turns 1 >"$work/run3b.txt" || { echo "FAIL: clients arriving during the drain"; cat "$work/run3b.txt"; exit 1; }
wait "$run" || { echo "FAIL: a turn did not finish through the drain"; grep failed "$work/run3.txt"; exit 1; }
set +e; wait "${bridge_pid[s3]}"; s3_status=$?; set -e
drained=$(echo "$(date +%s.%N) - $drain_started" | bc)
grep -E '^(backend|100 clients)' "$work/run3.txt"
echo "clients arriving during the drain:"; grep -E '^(backend|30 clients)' "$work/run3b.txt"
if grep -q ' s3 ' "$work/run3b.txt"; then echo "FAIL: a new client reached the draining s3"; exit 1; fi
echo "s3 exited with $s3_status, ${drained}s after SIGTERM; its log:"
grep -E 'acp-bridge: (draining|every|drain|stopped)' "$work/s3.log"
[[ $s3_status -eq 0 ]] || { echo "FAIL: s3 exited with $s3_status"; exit 1; }
echo "loadbalancer: 3 passed, 0 failed"
