#!/usr/bin/env bash
# Protocol version routing against the official SDKs: the Rust SDK 5.2.0's agent router and
# client connector (`unstable_protocol_v2`) and the TypeScript SDK 2.4.0's
# `agentProtocolRouter()`, against our connector (`acp --protocol auto|1|2`, the client_v2
# example) and our router (`acp --serve-demo-agent` built with unstable-protocol-v2, the
# agent_v2 example), both ways; and the answer each router gives a repeated lower-version
# `initialize`, where the SDKs disagree. See docs/interop.md ("Protocol version routing").
#
#   bash interop/v2-routing.sh
#
# Peers: interop/rust-sdk (sdk-routed-agent, sdk-connector-client; built as interop/rust-sdk.sh
# builds them, --locked, into target/interop/rust-sdk/target, so a run after it builds
# nothing), interop/ts-routed-agent.mjs on the npm pins of interop/package.json (the TS SDK
# 2.4.0 as `@agentclientprotocol/sdk-v2`), interop/initialize-twice.py (the repeat probe).
# Logs: target/interop/logs/v2-routing-*.log.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$repo/target/interop"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
timeout_secs="${INTEROP_TIMEOUT:-60}"
say() { printf '==> %s\n' "$*" >&2; }
mkdir -p "$work/logs" "$work/bin"

# --- npm: the TypeScript SDK 2.4.0 (shared with run.sh, reinstalled when the lock changes) ---
npm_dir="$work/npm"
if ! cmp -s "$repo/interop/package-lock.json" "$npm_dir/package-lock.json" ||
    [[ ! -f "$npm_dir/.installed" ]]; then
    say "npm install (interop/package-lock.json)"
    rm -rf "$npm_dir" && mkdir -p "$npm_dir"
    cp "$repo/interop/package.json" "$repo/interop/package-lock.json" "$npm_dir/"
    (cd "$npm_dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error)
    touch "$npm_dir/.installed"
fi
# Beside node_modules, so that its imports resolve to the pinned packages.
cp "$repo/interop/ts-routed-agent.mjs" "$npm_dir/"
ts_agent="$npm_dir/ts-routed-agent.mjs"

# --- the Rust SDK's peers (the same scratch project as interop/rust-sdk.sh) -------------------
sdk="$work/rust-sdk"
mkdir -p "$sdk"
rm -rf "$sdk/src"
cp -r "$repo/interop/rust-sdk/Cargo.toml" "$repo/interop/rust-sdk/Cargo.lock" \
    "$repo/interop/rust-sdk/src" "$sdk/"
say "building the official SDK's peers (interop/rust-sdk, --locked)"
(cd "$sdk" && CARGO_TARGET_DIR="$sdk/target" cargo build --locked --quiet)
sdk_bin="$sdk/target/debug"

# --- the Rust SDK's v2_session_coordination example (the crate as interop/rust-sdk-v2.sh lays
# it out; copied only when that script has not, since a fresh copy rebuilds the crate) ------
crate="$work/sdk-v2/crate"
if [[ ! -f "$crate/Cargo.lock" ]]; then
    (cd "$repo/interop/rust-sdk" && cargo fetch --locked --quiet)
    registry="${CARGO_HOME:-$HOME/.cargo}/registry/src"
    crate_src="$(ls -d "$registry"/*/agent-client-protocol-5.2.0 | head -1)"
    mkdir -p "$work/sdk-v2" && rm -rf "$crate" && cp -r "$crate_src" "$crate"
    cp "$repo/interop/rust-sdk/Cargo.lock" "$crate/Cargo.lock"
    grep -q '^\[workspace\]' "$crate/Cargo.toml" || printf '\n[workspace]\n' >>"$crate/Cargo.toml"
fi
say "building the SDK's v2_session_coordination example"
(cd "$crate" && CARGO_TARGET_DIR="$work/sdk-v2/target" cargo build --quiet \
    --example v2_session_coordination --features process,stdio,unstable_protocol_v2)
sdk_examples="$work/sdk-v2/target/debug/examples"

# --- ours: acp with v2 kept aside as acp-v2 (the plain build takes its place again) ----------
say "building acp (unstable-protocol-v2) and acp-runtime's examples agent, agent_v2, client_v2"
(cd "$repo" && cargo build --quiet -p acp-rs-cli --features unstable-protocol-v2 &&
    cp "$target/debug/acp" "$work/bin/acp-v2" &&
    cargo build --quiet -p acp-rs-runtime --features unstable-protocol-v2 \
        --example agent --example agent_v2 --example client_v2 &&
    cargo build --quiet -p acp-rs-cli)
acp="$work/bin/acp-v2"
ours="$target/debug/examples"

# --- pairings ----------------------------------------------------------------------------------
run_dir="$work/runs/v2-routing"
rm -rf "$run_dir" && mkdir -p "$run_dir"
printf 'buy milk\nship the release\ncall Ada\n' >"$run_dir/notes.txt"
rows=()
failed=0
# check NAME SLUG EXPECTED COMMAND...: runs COMMAND in the scratch project; passes when it
# exits 0 and its output has every line of EXPECTED (fixed strings).
check() {
    local name="$1" log="$work/logs/v2-routing-$2.log" expected="$3" missing=()
    shift 3
    say "$name"
    if ! (cd "$run_dir" && timeout --kill-after=5 "$timeout_secs" "$@") >"$log" 2>&1 </dev/null; then
        missing+=("exit status")
    fi
    while IFS= read -r line; do
        grep -qF -- "$line" "$log" || missing+=("\`$line\`")
    done <<<"$expected"
    if ((${#missing[@]} == 0)); then
        rows+=("$name|pass|${expected//$'\n'/; }")
    else
        rows+=("$name|FAIL|missing $(printf '%s ' "${missing[@]}")(see $log)")
        failed=$((failed + 1))
    fi
}

# The Rust SDK's router (v1 and v2 sides) against our connector.
check "acp --protocol auto -> SDK sdk-routed-agent" acp-auto-sdk \
    $'(protocol 2)\nsdk-routed-agent v2: hello\n[turn ended: end_turn]' \
    "$acp" --protocol auto -p hello -- "$sdk_bin/sdk-routed-agent"
check "acp --protocol 1 -> SDK sdk-routed-agent" acp-1-sdk \
    $'(protocol 1)\nsdk-routed-agent v1: hello\n[turn ended: end_turn]' \
    "$acp" --protocol 1 -p hello -- "$sdk_bin/sdk-routed-agent"
check "acp --protocol 2 -> SDK sdk-routed-agent" acp-2-sdk \
    $'(protocol 2)\nsdk-routed-agent v2: hello\n[turn ended: end_turn]' \
    "$acp" --protocol 2 -p hello -- "$sdk_bin/sdk-routed-agent"
# The Rust SDK's connector against our router, and against a v1-only agent (its fallback).
check "SDK sdk-connector-client -> acp --serve-demo-agent (router)" sdk-acp-demo \
    $'protocol: v2\nagent: Done. notes.txt has 3 lines\nstop reason: Some(EndTurn)' \
    "$sdk_bin/sdk-connector-client" "Summarize my notes" -- "$acp" --serve-demo-agent
check "SDK sdk-connector-client -> our agent_v2 (router)" sdk-agent-v2 \
    $'protocol: v2\nagent: I looked around.\nstop reason: Some(EndTurn)' \
    "$sdk_bin/sdk-connector-client" hello -- "$ours/agent_v2"
check "SDK sdk-connector-client -> our agent (v1 only: fallback)" sdk-agent-v1 \
    $'protocol: v1\nagent: Done. I could not read notes.txt\nstop reason: EndTurn' \
    "$sdk_bin/sdk-connector-client" "Summarize my notes" -- "$ours/agent"
# The TypeScript SDK's router against our connector and our v2 client.
check "acp --protocol auto -> TS agentProtocolRouter" acp-auto-ts \
    $'(protocol 2)\nts-routed-agent v2: hello\n[turn ended: end_turn]' \
    "$acp" --protocol auto -p hello -- node "$ts_agent"
check "acp --protocol 1 -> TS agentProtocolRouter" acp-1-ts \
    $'(protocol 1)\nts-routed-agent v1: hello\n[turn ended: end_turn]' \
    "$acp" --protocol 1 -p hello -- node "$ts_agent"
check "acp --protocol 2 -> TS agentProtocolRouter" acp-2-ts \
    $'(protocol 2)\nts-routed-agent v2: hello\n[turn ended: end_turn]' \
    "$acp" --protocol 2 -p hello -- node "$ts_agent"
check "our client_v2 -> TS agentProtocolRouter" client-v2-ts \
    $'agent: ts-routed-agent v2: hello\nstop: EndTurn' \
    "$ours/client_v2" hello -- node "$ts_agent"
check "SDK sdk-connector-client -> TS agentProtocolRouter" sdk-ts \
    $'protocol: v2\nagent: ts-routed-agent v2: hello' \
    "$sdk_bin/sdk-connector-client" hello -- node "$ts_agent"
# The SDK's v2_session_coordination example resumes an existing session (twice at once, then
# again after closing it) with replay: a first process of our agent_v2 opens the session and
# runs a turn (acp --protocol 2), its history kept in a file (ACP_EXAMPLE_HISTORY), and a
# second process serves the example from that file. 9 updates: the turn's 8 as recorded, then
# the session's current state, which every session/resume sends after its replay.
history="$run_dir/agent-v2-history.jsonl"
rm -f "$history"
check "acp --protocol 2 -> our agent_v2 (history to a file)" coordination-setup \
    $'(protocol 2)\nI looked around.\n[turn ended: end_turn]' \
    env ACP_EXAMPLE_HISTORY="$history" "$acp" --protocol 2 --yes -p hello -- "$ours/agent_v2"
session_id="$(sed -n 's/^session \([^ ]*\) in .*/\1/p' "$work/logs/v2-routing-coordination-setup.log")"
check "SDK v2_session_coordination -> our agent_v2 (router)" coordination \
    $'Shared replay: 9 updates\nFresh replay after close: 9 updates' \
    env ACP_EXAMPLE_HISTORY="$history" "$sdk_examples/v2_session_coordination" \
    --command "$ours/agent_v2" --session-id "${session_id:-none}"
# A repeated `initialize` asking for 1 after 2 was chosen: each router's own answer, pinned.
check "repeat initialize 1 after 2: Rust SDK router" repeat-sdk \
    $'first: protocolVersion 2\nrepeat: error -32022' \
    python3 "$repo/interop/initialize-twice.py" "$sdk_bin/sdk-routed-agent"
check "repeat initialize 1 after 2: TS SDK router" repeat-ts \
    $'first: protocolVersion 2\nrepeat: error -32600' \
    python3 "$repo/interop/initialize-twice.py" node "$ts_agent"
check "repeat initialize 1 after 2: our router (demo agent)" repeat-acp \
    $'first: protocolVersion 2\nrepeat: error -32600' \
    python3 "$repo/interop/initialize-twice.py" "$acp" --serve-demo-agent
check "repeat initialize 1 after 2: our router (agent_v2)" repeat-agent-v2 \
    $'first: protocolVersion 2\nrepeat: error -32600' \
    python3 "$repo/interop/initialize-twice.py" "$ours/agent_v2"

printf '\n| %-60s | %-6s | %s |\n' "version routing pairing" "result" "checked"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..62})" "--------" "---------"
for row in "${rows[@]}"; do
    IFS='|' read -r n r c <<<"$row"
    printf '| %-60s | %-6s | %s |\n' "$n" "$r" "$c"
done
printf '\n%d passed, %d failed\n' "$((${#rows[@]} - failed))" "$failed"
((failed == 0))
