#!/usr/bin/env bash
# Protocol v2 proxy chains with the official Rust SDK 5.2.0 (`agent-client-protocol`, feature
# `unstable_protocol_v2`): its `Proxy.protocol_router()` (a `Proxy.v1()` and a `Proxy.v2()`)
# and its `Proxy.v1()` alone, as components of our conductor, between our v2 client and our
# v2 agent. See docs/proxy.md ("Protocol v2").
#
#   bash interop/proxy-v2.sh
#
# The SDK's proxies: interop/proxy-v2/ (the router) and interop/rust-sdk/src/bin/sdk-proxy.rs
# (`Proxy.v1()`), built from interop/proxy-v2/Cargo.toml with interop/rust-sdk/Cargo.lock in
# target/interop/proxy-v2/sdk. Ours: acp-conductor (feature `unstable-protocol-v2`) and
# acp-runtime's examples client_v2, client (v1) and agent_v2 (v1 and v2 through the version
# router).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$repo/target/interop/proxy-v2"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
timeout_secs="${INTEROP_TIMEOUT:-60}"
say() { printf '==> %s\n' "$*" >&2; }
mkdir -p "$work/logs" "$work/sdk/src/bin"

say "building the SDK's proxies (agent-client-protocol 5.2.0, unstable_protocol_v2)"
cp "$repo/interop/proxy-v2/Cargo.toml" "$repo/interop/rust-sdk/Cargo.lock" "$work/sdk/"
cp "$repo/interop/proxy-v2/sdk-proxy-router.rs" "$repo/interop/rust-sdk/src/bin/sdk-proxy.rs" \
    "$work/sdk/src/bin/"
(cd "$work/sdk" && CARGO_TARGET_DIR="$work/sdk/target" cargo build --quiet)
sdk="$work/sdk/target/debug"

say "building our conductor and v2 examples"
(cd "$repo" && cargo build --quiet -p acp-rs-conductor --features unstable-protocol-v2 \
    --bin acp-conductor &&
    cargo build --quiet -p acp-rs-runtime --features unstable-protocol-v2 \
        --example agent_v2 --example client_v2 --example client)
conductor="$target/debug/acp-conductor"
client="$target/debug/examples/client_v2"
client_v1="$target/debug/examples/client"
agent="$target/debug/examples/agent_v2"

rows=()
failed=0
check() { # name, log, command..., then the expected line (grep -F) as the last argument
    local name="$1" log="$work/logs/$2.log"
    shift 2
    local expected="${*: -1}"
    set -- "${@:1:$#-1}"
    if timeout "$timeout_secs" "$@" >"$log" 2>&1 && grep -qF -- "$expected" "$log"; then
        rows+=("$name|pass|$expected")
    else
        rows+=("$name|FAIL|$expected (see $log)")
        failed=$((failed + 1))
    fi
}

# The SDK's router picks its v2 proxy, which marks the prompt; the turn (a permission request
# travelling back through it) completes.
check "our conductor: SDK proxy router, our agent_v2" router \
    "$client" "Look around" -- "$conductor" agent "$sdk/sdk-proxy-router" "$agent" \
    "user: [sdk-proxy v2] Look around"
check "our conductor: pass-through, SDK proxy router, pass-through" router-between-ours \
    "$client" "Look around" -- "$conductor" agent "$conductor pass-through" \
    "$sdk/sdk-proxy-router" "$conductor pass-through" "$agent" \
    "tool call look-1: Some(\"Look around\") Some(Completed)"
# A v1 client through the same chain: the router picks its v1 proxy, the agent its v1 side.
check "our conductor: SDK proxy router, our agent_v2 (a v1 client)" router-v1 \
    "$client_v1" "$conductor" agent "$sdk/sdk-proxy-router" "$agent" \
    "I speak v1 too."
# The SDK's `Proxy.v1()` in a v2 chain answers as v1: the agent after it is asked for v1 (the
# trace proxy records what it got), and the chain's answer names version 1.
trace="$work/logs/after-sdk-v1-proxy.jsonl"
rm -f "$trace"
init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ed","version":"1"},"capabilities":{}}}'
answered="$work/logs/after-sdk-v1-proxy.answer"
(echo "$init"; sleep 2) | timeout "$timeout_secs" "$conductor" agent "$sdk/sdk-proxy" \
    "$conductor trace-proxy $trace" "$agent" >"$answered" 2>&1 || true
check "our conductor: SDK Proxy.v1() in a v2 chain (the answer)" v1-proxy cat "$answered" \
    '"result":{"protocolVersion":1'
check "our conductor: SDK Proxy.v1() in a v2 chain (the agent's initialize)" v1-proxy-trace \
    cat "$trace" '"clientInfo":{"name":"ed","version":"1"},"protocolVersion":1}'

printf '\n| %-66s | %-6s | %s |\n' "v2 proxy chain" "result" "checked"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..68})" "--------" "---------"
for row in "${rows[@]}"; do
    IFS='|' read -r n r c <<<"$row"
    printf '| %-66s | %-6s | %s |\n' "$n" "$r" "$c"
done
printf '\n%d passed, %d failed\n' "$((${#rows[@]} - failed))" "$failed"
((failed == 0))
