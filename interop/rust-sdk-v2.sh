#!/usr/bin/env bash
# Protocol v2 interop with the official Rust SDK 5.2.0 (`agent-client-protocol`, feature
# `unstable_protocol_v2`): its own published examples, unchanged, against ours, both ways.
# See docs/interop.md ("Protocol v2") and docs/protocol-v2.md.
#
#   bash interop/rust-sdk-v2.sh
#
# The SDK crate's package ships its examples; they are built from the crate as downloaded from
# crates.io (copied to target/interop/sdk-v2/crate, resolved with interop/rust-sdk/Cargo.lock,
# built into target/interop/sdk-v2/target). Ours: acp-runtime's examples agent_v2 (a v2 agent
# beside a v1 one, through the version router) and client_v2 (a one-shot v2 client).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$repo/target/interop/sdk-v2"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
timeout_secs="${INTEROP_TIMEOUT:-60}"
say() { printf '==> %s\n' "$*" >&2; }
mkdir -p "$work/logs"

# --- the SDK's examples, from the crate crates.io serves --------------------------------------
say "fetching agent-client-protocol 5.2.0 (interop/rust-sdk/Cargo.lock)"
(cd "$repo/interop/rust-sdk" && cargo fetch --locked --quiet)
registry="${CARGO_HOME:-$HOME/.cargo}/registry/src"
crate_src="$(ls -d "$registry"/*/agent-client-protocol-5.2.0 | head -1)"
[[ -d "$crate_src" ]] || { echo "agent-client-protocol 5.2.0 is not in $registry" >&2; exit 2; }
rm -rf "$work/crate" && cp -r "$crate_src" "$work/crate"
# Its own lockfile pins versions since yanked; ours resolves the same SDK.
cp "$repo/interop/rust-sdk/Cargo.lock" "$work/crate/Cargo.lock"
grep -q '^\[workspace\]' "$work/crate/Cargo.toml" || printf '\n[workspace]\n' >>"$work/crate/Cargo.toml"
say "building the SDK's v2 examples"
(cd "$work/crate" && CARGO_TARGET_DIR="$work/target" cargo build --quiet \
    --example simple_agent_v2 --example v2_one_shot_client \
    --features process,stdio,unstable_protocol_v2)
sdk="$work/target/debug/examples"

say "building our v2 examples"
(cd "$repo" && cargo build --quiet -p acp-rs-runtime --features unstable-protocol-v2 \
    --example agent_v2 --example client_v2)
ours="$target/debug/examples"

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

# The SDK's one-shot client rejects permission requests: our agent's tool call fails, the reply
# says so, and the work ends idle end_turn.
check "SDK v2_one_shot_client -> our agent_v2 (router)" sdk-client-our-agent \
    "$sdk/v2_one_shot_client" --command "$ours/agent_v2" "hello from the SDK" \
    "I looked nowhere."
# Our one-shot client against the SDK's v2 agent.
check "our client_v2 -> SDK simple_agent_v2" our-client-sdk-agent \
    "$ours/client_v2" "hello from acp-rs" -- "$sdk/simple_agent_v2" \
    "agent: Echo: hello from acp-rs"
# Both ours, through the router, for the table.
check "our client_v2 -> our agent_v2 (router)" our-client-our-agent \
    "$ours/client_v2" "hello" -- "$ours/agent_v2" \
    "tool call look-1: Some(\"Look around\") Some(Completed)"

printf '\n| %-52s | %-6s | %s |\n' "protocol v2 pairing" "result" "checked"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..54})" "--------" "---------"
for row in "${rows[@]}"; do
    IFS='|' read -r n r c <<<"$row"
    printf '| %-52s | %-6s | %s |\n' "$n" "$r" "$c"
done
printf '\n%d passed, %d failed\n' "$((${#rows[@]} - failed))" "$failed"
((failed == 0))
