#!/usr/bin/env bash
# Proxy-chain interop (issue 25; docs/proxy.md): our conductor with a proxy on the official
# Rust SDK's `Proxy.v1()` (crates.io agent-client-protocol 5.2.0), and the official conductor
# (agent-client-protocol-conductor 5.0.0) running our proxies, each in front of the TypeScript
# SDK's example agent, driven by `acp`.
#
#   bash interop/proxy-chain.sh
#
# The SDK peers are built from interop/proxy-chain/ (Cargo.toml, the committed Cargo.lock, our
# two small mains) copied to target/interop/proxy-chain/, with `--locked`. The TypeScript SDK
# comes from interop/package-lock.json as in run.sh. Logs: target/interop/logs/chain-*.log.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$repo/target/interop"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
timeout_secs="${INTEROP_TIMEOUT:-60}"
say() { printf '==> %s\n' "$*" >&2; }

# The TypeScript SDK's example agent, installed as run.sh installs it.
npm_dir="$work/npm"
if ! cmp -s "$repo/interop/package-lock.json" "$npm_dir/package-lock.json" ||
    [[ ! -f "$npm_dir/.installed" ]]; then
    say "npm install (interop/package-lock.json)"
    rm -rf "$npm_dir" && mkdir -p "$npm_dir"
    cp "$repo/interop/package.json" "$repo/interop/package-lock.json" "$npm_dir/"
    (cd "$npm_dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error)
    touch "$npm_dir/.installed"
fi
ts_agent="$npm_dir/node_modules/@agentclientprotocol/sdk/dist/examples/agent.js"

# The official SDK's peers: a scratch project, never committed.
sdk="$work/proxy-chain"
mkdir -p "$sdk"
cp -r "$repo/interop/proxy-chain/Cargo.toml" "$repo/interop/proxy-chain/Cargo.lock" \
    "$repo/interop/proxy-chain/src" "$sdk/"
say "building the official SDK's proxy and conductor (--locked)"
(cd "$sdk" && cargo build --locked --quiet)
sdk_proxy="$sdk/target/debug/sdk-proxy"
sdk_conductor="$sdk/target/debug/sdk-conductor"

say "building acp and acp-conductor"
(cd "$repo" && cargo build --quiet -p acp-rs-cli --bin acp && cargo build --quiet -p acp-rs-conductor --features unstable --bin acp-conductor)
acp="$target/debug/acp"
ours="$target/debug/acp-conductor"

mkdir -p "$work/logs"
rows=()
failed=0
# pair NAME WANT... -- COMMAND...: runs `acp` on COMMAND, passes when every WANT is in its output.
pair() {
    local name="$1" wants=()
    shift
    while [[ "$1" != "--" ]]; do wants+=("$1"); shift; done
    shift
    local log="$work/logs/chain-${name//[^a-zA-Z0-9]/_}.log"
    local dir
    dir="$(mktemp -d)"
    printf 'notes\n' >"$dir/notes.txt"
    local status=0
    timeout "$timeout_secs" "$acp" --yes --prompt "Hi from acp" --cwd "$dir" -- "$@" >"$log" 2>&1 || status=$?
    rm -rf "$dir"
    local missing=()
    ((status == 0)) || missing+=("exit $status")
    for want in "${wants[@]}"; do grep -qF -- "$want" "$log" || missing+=("no \`$want\`"); done
    if ((${#missing[@]} == 0)); then
        rows+=("$name|pass")
    else
        failed=$((failed + 1))
        rows+=("$name|FAIL: ${missing[*]} (log: ${log#"$repo"/})")
        tail -n 20 "$log" >&2
    fi
}

pair "our conductor: SDK Proxy.v1() -> TS example agent" "[turn ended: end_turn]" "I'll help you with that." -- \
    "$ours" agent "'$sdk_proxy'" "node '$ts_agent'"
pair "our conductor: our policy proxy, SDK Proxy.v1(), our pass-through -> TS example agent" "[turn ended: end_turn]" -- \
    "$ours" agent "'$ours' policy-proxy --allow edit" "'$sdk_proxy'" "'$ours' pass-through" "node '$ts_agent'"
pair "official conductor: our pass-through -> TS example agent" "[turn ended: end_turn]" "I'll help you with that." -- \
    "$sdk_conductor" agent "'$ours' pass-through" "node '$ts_agent'"
pair "official conductor: our trace proxy, SDK Proxy.v1() -> TS example agent" "[turn ended: end_turn]" -- \
    "$sdk_conductor" agent "'$ours' trace-proxy '$work/logs/chain-trace.jsonl'" "'$sdk_proxy'" "node '$ts_agent'"

printf '\n| pairing | result |\n|---|---|\n'
for row in "${rows[@]}"; do printf '| %s | %s |\n' "${row%%|*}" "${row#*|}"; done
exit $((failed > 0))
