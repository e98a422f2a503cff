#!/usr/bin/env bash
# Remote interop: the official SDKs' WebSocket and Streamable HTTP example clients against
# `acp-bridge serve`, and our client (examples/prompt.rs) against their example servers, over
# both transports.
#
#   bash crates/acp-remote/interop/run.sh
#
# Needs node and npm (@agentclientprotocol/sdk 1.9.0, ws) and python3 with venv
# (agent-client-protocol[http] 0.12.1, hypercorn; the examples come from its sdist), all
# installed under target/remote-interop on first use.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$root/target/remote-interop
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$work"
cd "$root"
cargo build -q -p acp-remote --bin acp-bridge --example prompt
bridge=$target/debug/acp-bridge
prompt=$target/debug/examples/prompt

if [ ! -d "$work/npm/node_modules/@agentclientprotocol/sdk" ]; then
  mkdir -p "$work/npm"
  (cd "$work/npm" && npm init -y >/dev/null && npm install -q @agentclientprotocol/sdk@1.9.0 ws@8 >/dev/null)
fi
if [ ! -x "$work/py/bin/python" ]; then
  python3 -m venv "$work/py"
  "$work/py/bin/pip" install -q "agent-client-protocol[http]==0.12.1" "hypercorn>=0.17"
  "$work/py/bin/pip" download -q --no-deps --no-binary :all: agent-client-protocol==0.12.1 -d "$work/sdist"
  tar xzf "$work"/sdist/agent_client_protocol-0.12.1.tar.gz -C "$work/sdist"
fi
ts=$work/npm/node_modules/@agentclientprotocol/sdk/dist/examples
py=$work/sdist/agent_client_protocol-0.12.1/examples
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
failures=0
check() { # NAME EXPECTED COMMAND...
  local name=$1 expected=$2; shift 2
  local out
  if out=$(timeout 60 "$@" 2>&1) && grep -q "$expected" <<<"$out"; then
    echo "ok   $name"
  else
    echo "FAIL $name"; echo "$out" | tail -20 | sed 's/^/     /'; failures=$((failures + 1))
  fi
}
wait_port() { for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return; sleep 0.2; done; }

# Their clients, our server (the TS example agent, bridged; the TS clients send a token).
"$bridge" serve --listen 127.0.0.1:7331 --token example-token -- node "$ts/agent.js" 2>/dev/null &
pids+=($!); wait_port 7331
check "TS ws-client -> acp-bridge (WebSocket)" "Done: end_turn" \
  env ACP_WS_URL=ws://127.0.0.1:7331/acp node "$ts/ws-client.js"
check "TS http-client -> acp-bridge (Streamable HTTP)" "Done: end_turn" \
  env ACP_HTTP_URL=http://127.0.0.1:7331/acp node "$ts/http-client.js"
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true

"$bridge" serve --listen 127.0.0.1:8000 -- "$work/py/bin/python" "$py/echo_agent.py" 2>/dev/null &
pids+=($!); wait_port 8000
check "Python ws_client -> acp-bridge (WebSocket)" "stop reason: end_turn" \
  "$work/py/bin/python" "$py/ws_client.py"
check "Python http_client -> acp-bridge (Streamable HTTP)" "stop reason: end_turn" \
  "$work/py/bin/python" "$py/http_client.py"
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true

# Our client, their servers (WebSocket and Streamable HTTP).
PORT=7332 node "$ts/http-server.js" >/dev/null 2>&1 &
pids+=($!); wait_port 7332
check "our client -> TS http-server (WebSocket)" "EndTurn" \
  "$prompt" ws://127.0.0.1:7332/acp --token example-token "Hi from Rust"
check "our client -> TS http-server (Streamable HTTP)" "EndTurn" \
  "$prompt" http://127.0.0.1:7332/acp --token example-token "Hi from Rust"
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true

(cd "$py" && exec "$work/py/bin/python" http_server.py >/dev/null 2>&1) &
pids+=($!); wait_port 8000
check "our client -> Python http_server (WebSocket)" "EndTurn" \
  "$prompt" ws://127.0.0.1:8000/acp "Hi from Rust"
check "our client -> Python http_server (Streamable HTTP)" "EndTurn" \
  "$prompt" http://127.0.0.1:8000/acp "Hi from Rust"

exit $failures
