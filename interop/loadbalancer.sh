#!/usr/bin/env bash
# Three `acp-bridge serve` instances behind HAProxy (the recipe of docs/deploy.md), 100 clients
# mixing WebSocket and Streamable HTTP (the `fleet` example of acp-remote):
#   1. every turn completes, the clients spread over the three;
#   2. one instance killed (SIGKILL) mid-run: its clients get an error, the others never notice;
#   3. one instance drained (SIGTERM): its running turns finish, clients that arrive meanwhile
#      land on the others, and it exits within its drain deadline;
#   4. HAProxy itself restarted mid-run: every Streamable HTTP client resumes on its own
#      instance, routed by the instance named in its connection id (no balancer state);
#   5. the same under durable-transport clients, half of them WebSocket: each dropped
#      WebSocket resumes with stream/resume on its own instance.
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

# Four consecutive ports below the kernel's ephemeral range (so no outgoing connection of this
# machine can hold one), none of them listened on; a port picked from inside that range lost
# the race once to a connection's local port ("Address already in use").
ephemeral_low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for _ in $(seq 20); do
  base=$((10000 + RANDOM % (ephemeral_low - 10000 - 4)))
  port_in_use "$base" || port_in_use $((base + 1)) || port_in_use $((base + 2)) || port_in_use $((base + 3)) || break
done
lb=$base
port() { echo $((base + $1)); }

# start NAME INDEX: one bridge serving the fleet agent (turns of 20 chunks, 50 ms apart).
declare -A bridge_pid
start() {
  FLEET_BACKEND=$1 "$bridge" serve --listen "127.0.0.1:$(port "$2")" --drain-timeout 20 --instance "$1" --durable-transport \
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

# Each server's line and the rule that routes its connection ids (`sN.<token>`) to it.
servers=$(for i in 1 2 3; do
  printf '    server s%d 127.0.0.1:%d\n    use-server s%d if { req.hdr(acp-connection-id) -m beg s%d. }\n' \
    "$i" "$(port "$i")" "$i" "$i"
done)
# The recipe is shared with the load example; a quick health check notices a killed server.
awk -v lb="$lb" -v servers="$servers" '
  $0 == "@SERVERS@" { print servers; next }
  { gsub(/@LB@/, lb); gsub(/@MAXCONN@/, "4096"); gsub(/@CHECK_INTER@/, "500ms"); print }
' crates/acp-remote/examples/load/haproxy.cfg >"$work/haproxy.cfg"
start_haproxy() {
  haproxy -f "$work/haproxy.cfg" -db >>"$work/haproxy.log" 2>&1 &
  haproxy_pid=$!
  pids+=($!)
  sleep 1
}
start_haproxy

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
echo "== 4. HAProxy killed (SIGKILL) and restarted two seconds into a run of 60 Streamable HTTP clients (on s1 and s2), 4 turns each"
clients --clients 60 --turns 4 --http-only >"$work/run4.txt" &
run=$!
sleep 2
kill -9 "$haproxy_pid"
start_haproxy
# Every client resumes its cut streams and retries its POSTs through the new balancer, which
# knows nothing of them: the connection id alone routes each to its own instance.
wait "$run" || { echo "FAIL: clients did not survive the balancer's restart"; grep failed "$work/run4.txt"; exit 1; }
grep -E '^(backend|60 clients)' "$work/run4.txt"
[[ $(grep -c '^backend' "$work/run4.txt") -ge 2 ]] || { echo "FAIL: the clients did not spread over s1 and s2"; exit 1; }
echo "== 5. HAProxy killed and restarted two seconds into a run of 60 durable-transport clients (30 WebSocket, 30 Streamable HTTP), 4 turns each"
clients --clients 60 --turns 4 --durable >"$work/run5.txt" &
run=$!
sleep 2
kill -9 "$haproxy_pid"
start_haproxy
# Each dropped WebSocket opens a new one through the new balancer, its upgrade naming the
# connection (Acp-Connection-Id), and resumes there with stream/resume.
wait "$run" || { echo "FAIL: durable clients did not survive the balancer's restart"; grep failed "$work/run5.txt"; exit 1; }
grep -E '^(backend|60 clients)' "$work/run5.txt"
[[ $(grep -c '^client [0-9]* websocket s[0-9] ok' "$work/run5.txt") -eq 30 ]] || { echo "FAIL: not every WebSocket client finished"; exit 1; }
echo "loadbalancer: 5 passed, 0 failed"
