#!/usr/bin/env bash
# Interop with the official Rust SDK (crates.io `agent-client-protocol` 5.2.0, schema 1.17) and
# its conductor (`agent-client-protocol-conductor` 5.0.0). See docs/interop.md and docs/proxy.md.
#
#   bash interop/rust-sdk.sh            # every pairing
#   bash interop/rust-sdk.sh chain      # only the proxy chains (issue 25)
#   bash interop/rust-sdk.sh prompt     # only the system prompt (issue 23)
#
# 1. Proxy chains: our conductor with a proxy on the SDK's `Proxy.v1()`, and the official
#    conductor running our proxies, in front of the TypeScript SDK's example agent or our demo
#    agent, driven by `acp` (Ctrl-C mid-turn included).
# 2. System prompt: an SDK client sends one to our demo agent, and `acp` sends one to an SDK
#    agent, in each mode the agent advertises and in modes it does not.
#
# The SDK peers (interop/rust-sdk/: Cargo.toml, the committed Cargo.lock, four small mains) are
# copied to target/interop/rust-sdk/ and built there with `--locked`, into their own target
# directory (target/interop/rust-sdk/target). The TypeScript SDK comes from
# interop/package-lock.json as in run.sh. Logs: target/interop/logs/rust-sdk-*.log (wire
# transcripts beside them as *.trace.jsonl).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$repo/target/interop"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
timeout_secs="${INTEROP_TIMEOUT:-60}"
groups="${1:-all}"
say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'interop: %s\n' "$*" >&2; exit 2; }
case "$groups" in all | chain | prompt) ;; *) die "unknown group \`$groups\` (all, chain, prompt)" ;; esac
for tool in cargo node npm timeout; do
    command -v "$tool" >/dev/null || die "\`$tool\` is not installed"
done
mkdir -p "$work"

# --- the TypeScript SDK's example agent, installed as run.sh installs it -----------------------
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

# --- the official SDK's peers: a scratch project, never committed ----------------------------
sdk="$work/rust-sdk"
mkdir -p "$sdk"
rm -rf "$sdk/src"
cp -r "$repo/interop/rust-sdk/Cargo.toml" "$repo/interop/rust-sdk/Cargo.lock" \
    "$repo/interop/rust-sdk/src" "$sdk/"
say "building the official SDK's peers (interop/rust-sdk, --locked)"
(cd "$sdk" && CARGO_TARGET_DIR="$sdk/target" cargo build --locked --quiet)
sdk_bin="$sdk/target/debug"

say "building acp, the demo agent and acp-conductor"
(cd "$repo" && cargo build --quiet -p acp-rs-cli --bin acp &&
    cargo build --quiet -p acp-rs-runtime --example agent &&
    cargo build --quiet -p acp-rs-conductor --features unstable --bin acp-conductor)
acp="$target/debug/acp"
our_agent="$target/debug/examples/agent"
ours="$target/debug/acp-conductor"

# --- pairings ----------------------------------------------------------------------------------
mkdir -p "$work/logs" "$work/runs"
rm -f "$work"/logs/rust-sdk-*
rows=()
failed=0
name="" dir="" log="" trace="" rc=0 problems=()

# begin NAME: a fresh scratch project (notes.txt) and log for one pairing.
begin() {
    local slug
    slug="$(printf %s "$1" | tr -c "[:alnum:]" - | tr -s - | tr "[:upper:]" "[:lower:]")"
    slug="rust-sdk-${slug%-}"
    name="$1" dir="$work/runs/$slug" log="$work/logs/$slug.log" trace="$work/logs/$slug.trace.jsonl"
    rc=0 problems=()
    rm -rf "$dir" && mkdir -p "$dir"
    printf 'buy milk\nship the release\ncall Ada\n' >"$dir/notes.txt"
    say "$name"
}
# attempt WANT_STATUS CMD...: runs CMD in the scratch project under the timeout.
attempt() {
    local want_status="$1"
    shift
    rc=0
    (cd "$dir" && timeout --kill-after=5 "$timeout_secs" "$@") >"$log" 2>&1 </dev/null || rc=$?
    if ((rc == 124 || rc == 137)); then
        problems+=("timed out after ${timeout_secs}s")
    elif ((rc != want_status)); then
        problems+=("exit status $rc, want $want_status")
    fi
}
# attempt_cancel CMD...: runs `acp` (CMD, with --trace) in the background, and sends it SIGINT
# (Ctrl-C: acp cancels the running turn with session/cancel) once the prompt is on the wire;
# acp then exits 130.
attempt_cancel() {
    rc=0
    (cd "$dir" && exec "$@") >"$log" 2>&1 </dev/null &
    local pid=$! waited=0
    until grep -qF '"method":"session/prompt"' "$trace" 2>/dev/null; do
        ((waited++ < 200)) && kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq $((timeout_secs * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        problems+=("still running ${timeout_secs}s after SIGINT")
    fi
    wait "$pid" || rc=$?
    ((rc == 130)) || problems+=("exit status $rc, want 130")
}
want() { grep -qF -- "$1" "$log" || problems+=("no \`$1\`"); }
refuse() { ! grep -qF -- "$1" "$log" || problems+=("found \`$1\`"); }
# want_trace TEXT / refuse_trace TEXT: the wire transcript (`acp --trace`) has / lacks TEXT.
want_trace() { grep -qF -- "$1" "$trace" 2>/dev/null || problems+=("transcript lacks \`$1\`"); }
refuse_trace() {
    [[ -s "$trace" ]] || { problems+=("no transcript"); return; }
    ! grep -qF -- "$1" "$trace" || problems+=("transcript has \`$1\`")
}
# want_file PATH TEXT: the scratch project's PATH holds TEXT.
want_file() { grep -qF -- "$2" "$dir/$1" 2>/dev/null || problems+=("$1 lacks \`$2\`"); }
# hop TEXT: the trace proxy's transcript of its hop ($dir/hop.jsonl, kept beside the log) has TEXT.
hop() {
    cp "$dir/hop.jsonl" "${log%.log}.hop.jsonl" 2>/dev/null || { problems+=("no hop.jsonl"); return; }
    grep -qF -- "$1" "$dir/hop.jsonl" || problems+=("hop.jsonl lacks \`$1\`")
}
end() {
    if ((${#problems[@]} == 0)); then
        rows+=("$name|pass|$1")
    else
        failed=$((failed + 1))
        local why
        why="$(printf '%s; ' "${problems[@]}")"
        rows+=("$name|FAIL|${why%; } (log: ${log#"$repo"/})")
        {
            printf -- '--- %s failed: %s\n--- last lines of %s:\n' "$name" "${why%; }" "$log"
            tail -n 30 "$log"
        } >&2
    fi
}

if [[ $groups != prompt ]]; then
    # Our conductor (`acp-conductor agent`, each argument one component's command line) with the
    # SDK's `Proxy.v1()` proxy, which prefixes every prompt with `[sdk-proxy]`; the TS example
    # agent streams text, a tool call and a permission request (granted by `acp --yes`).
    begin "our conductor: SDK proxy -> TS agent"
    attempt 0 "$acp" --yes --prompt "Hi from acp" --cwd "$dir" --trace "$trace" -- \
        "$ours" agent "'$sdk_bin/sdk-proxy'" "node '$ts_agent'"
    want "[turn ended: end_turn]"
    want "I'll help you with that."
    want "call_2 -> status: completed"
    end "exit 0; the agent's text; its permission request granted through the chain (call_2 completed); end_turn"

    # Our policy proxy first (it grants edits), our trace proxy last (it records what the agent
    # sees): acp rejects every permission request it gets, so call_2 completes only if the
    # agent's request crossed two wrapped hops to the policy proxy and its answer came back.
    begin "our conductor: our policy, SDK proxy, our trace -> TS agent"
    attempt 0 "$acp" --reject --prompt "Hi from acp" --cwd "$dir" --trace "$trace" -- \
        "$ours" agent "'$ours' policy-proxy --allow edit" "'$sdk_bin/sdk-proxy'" \
        "'$ours' trace-proxy '$dir/hop.jsonl'" "node '$ts_agent'"
    want "[turn ended: end_turn]"
    want "call_2 -> status: completed"
    refuse_trace "session/request_permission"
    hop "[sdk-proxy] Hi from acp"
    end "exit 0; acp rejects every permission yet call_2 completes: our policy proxy (P0) granted the edit asked two hops away; no permission request reached acp; the agent got the prompt as the SDK proxy rewrote it; end_turn"

    # The official conductor (its binary's `agent` subcommand) running our proxies.
    begin "official conductor: our pass-through -> TS agent"
    attempt 0 "$acp" --yes --prompt "Hi from acp" --cwd "$dir" --trace "$trace" -- \
        "$sdk_bin/sdk-conductor" agent "$ours pass-through" "node $ts_agent"
    want "[turn ended: end_turn]"
    want "I'll help you with that."
    want "call_2 -> status: completed"
    end "exit 0; the agent's text; its permission request granted (call_2 completed); end_turn"

    begin "official conductor: our trace proxy, SDK proxy -> TS agent"
    attempt 0 "$acp" --yes --prompt "Hi from acp" --cwd "$dir" --trace "$trace" -- \
        "$sdk_bin/sdk-conductor" agent "$ours trace-proxy $dir/hop.jsonl" "$sdk_bin/sdk-proxy" \
        "node $ts_agent"
    want "[turn ended: end_turn]"
    want "call_2 -> status: completed"
    hop '"method":"session/prompt"'
    end "exit 0; call_2 completed; end_turn; our trace proxy (P0 of the official conductor) recorded its hop"

    begin "official conductor: our policy proxy -> TS agent"
    attempt 0 "$acp" --reject --prompt "Hi from acp" --cwd "$dir" --trace "$trace" -- \
        "$sdk_bin/sdk-conductor" agent "$ours policy-proxy --allow edit" "node $ts_agent"
    want "[turn ended: end_turn]"
    want "call_2 -> status: completed"
    refuse_trace "session/request_permission"
    end "exit 0; acp rejects every permission yet call_2 completes: our policy proxy answered the agent's request that came wrapped in proxy/successor; end_turn"

    # Ctrl-C in acp during the turn: `session/cancel` crosses the chain to the agent, which
    # ends the turn `cancelled`.
    begin "official conductor: our pass-through, SDK proxy -> TS agent, cancelled"
    attempt_cancel "$acp" --yes --prompt "Hi from acp" --cwd "$dir" --trace "$trace" -- \
        "$sdk_bin/sdk-conductor" agent "$ours pass-through" "$sdk_bin/sdk-proxy" "node $ts_agent"
    want "[turn ended: cancelled]"
    want_trace '"method":"session/cancel"'
    want_trace '"stopReason":"cancelled"'
    end "exit 130; session/cancel sent on Ctrl-C reached the agent through both proxies; the turn ended cancelled"

    begin "our conductor: SDK proxy, our pass-through -> TS agent, cancelled"
    attempt_cancel "$acp" --yes --prompt "Hi from acp" --cwd "$dir" --trace "$trace" -- \
        "$ours" agent "'$sdk_bin/sdk-proxy'" "'$ours' pass-through" "node '$ts_agent'"
    want "[turn ended: cancelled]"
    want_trace '"method":"session/cancel"'
    want_trace '"stopReason":"cancelled"'
    end "the same through our conductor"

    # Both conductors in front of our demo agent, which calls back a lot (fs reads and writes,
    # a terminal, a permission request, plans, a subagent), with a system prompt: the chain
    # passes the agent's capabilities up and the client's `systemPrompt` down untouched.
    begin "official conductor: SDK proxy, our pass-through -> our agent, system prompt"
    attempt 0 "$acp" --yes --prompt "Hi" --cwd "$dir" --trace "$trace" --system-prompt "Be terse." \
        --system-prompt-mode override -- \
        "$sdk_bin/sdk-conductor" agent "$sdk_bin/sdk-proxy" "$ours pass-through" "$our_agent"
    want 'The user asked: "[sdk-proxy] Hi"'
    want "[terminal term-1: exit code 0]"
    want 'Your system prompt, instead of my own instructions: "Be terse.".'
    want "[turn ended: end_turn]"
    want_file summary.txt '3 lines of notes; the user asked "[sdk-proxy] Hi"'
    end "exit 0; our agent advertised override through the chain and its session got it; the SDK proxy's rewritten prompt; fs read and write, terminal, permission, plans and subagent updates through both proxies; end_turn"

    begin "our conductor: SDK proxy -> our agent, system prompt"
    attempt 0 "$acp" --yes --prompt "Hi" --cwd "$dir" --trace "$trace" --system-prompt "Be terse." -- \
        "$ours" agent "'$sdk_bin/sdk-proxy'" "'$our_agent'"
    want 'The user asked: "[sdk-proxy] Hi"'
    want 'Your system prompt, after my own instructions: "Be terse.".'
    want "[turn ended: end_turn]"
    want_file summary.txt '3 lines of notes; the user asked "[sdk-proxy] Hi"'
    end "exit 0; the same through our conductor, append mode"

    # A chain that is itself a proxy (`conductor proxy PROXY...`), each conductor's inside the
    # other's: the inner chain's last proxy reaches the agent through both conductors.
    begin "official conductor: our conductor in proxy mode (SDK proxy, our trace) -> our agent"
    attempt 0 "$acp" --yes --prompt "Hi" --cwd "$dir" --trace "$trace" -- \
        "$sdk_bin/sdk-conductor" agent \
        "$ours proxy '$sdk_bin/sdk-proxy' '$ours trace-proxy $dir/hop.jsonl'" "$our_agent"
    want 'The user asked: "[sdk-proxy] Hi"'
    want "[turn ended: end_turn]"
    want_file summary.txt '3 lines of notes; the user asked "[sdk-proxy] Hi"'
    hop '"method":"initialize"'
    end "exit 0; the SDK proxy inside our proxy-mode chain rewrote the prompt; our trace proxy, last in it, recorded initialize reaching the agent through the official conductor; end_turn"

    begin "our conductor: the official conductor in proxy mode (SDK proxy, our trace) -> our agent"
    attempt 0 "$acp" --yes --prompt "Hi" --cwd "$dir" --trace "$trace" -- \
        "$ours" agent \
        "'$sdk_bin/sdk-conductor' proxy '$sdk_bin/sdk-proxy' '$ours trace-proxy $dir/hop.jsonl'" \
        "'$our_agent'"
    want 'The user asked: "[sdk-proxy] Hi"'
    want "[turn ended: end_turn]"
    want_file summary.txt '3 lines of notes; the user asked "[sdk-proxy] Hi"'
    hop '"method":"initialize"'
    end "exit 0; the same with the official conductor's proxy mode inside ours"
fi

if [[ $groups != chain ]]; then
    # An SDK client (no client capabilities) sends a system prompt to our demo agent, which
    # advertises both modes and says in its reply which system prompt its session got.
    begin "SDK client -> our agent: system prompt, append"
    attempt 0 "$sdk_bin/sdk-client" --system-prompt "Be terse." -- "$our_agent"
    want 'systemPrompt: Some(SessionSystemPromptCapabilities { mode: Some(SessionSystemPromptModeCapabilities { override_: Some('
    want 'Your system prompt, after my own instructions: "Be terse.".'
    want "stop reason: EndTurn"
    end "exit 0; the SDK decodes our capability {\"mode\":{\"override\":{}}}; our agent's session got the append prompt; end_turn"

    begin "SDK client -> our agent: system prompt, override"
    attempt 0 "$sdk_bin/sdk-client" --system-prompt "Be terse." --mode override -- "$our_agent"
    want 'Your system prompt, instead of my own instructions: "Be terse.".'
    want "stop reason: EndTurn"
    end "exit 0; our agent's session got the override prompt; end_turn"

    begin "SDK client -> our agent: system prompt, unknown mode"
    attempt 3 "$sdk_bin/sdk-client" --system-prompt "Be terse." --mode _replace -- "$our_agent"
    want "session/new error -32602"
    end "exit 3: a mode our agent does not advertise (\`_replace\`, which the SDK sends as it is) is answered -32602, no session"

    # `acp` sends a system prompt to an SDK agent, which shows in its reply the one its session
    # got. `--trace` keeps the wire transcript.
    begin "acp -> SDK agent: system prompt, append"
    attempt 0 "$acp" --prompt "Hi" --cwd "$dir" --trace "$trace" --system-prompt "Be terse." -- \
        "$sdk_bin/sdk-agent"
    want 'sdk-agent: system prompt append "Be terse."'
    want "[turn ended: end_turn]"
    want_trace '"systemPrompt":{"mode":"append","content":[{"type":"text","text":"Be terse."}]}'
    end "exit 0; the SDK agent's session got the append prompt; on the wire as {\"mode\":\"append\",\"content\":[text]}"

    begin "acp -> SDK agent: override, not advertised"
    attempt 6 "$acp" --prompt "Hi" --cwd "$dir" --trace "$trace" --system-prompt "Be terse." \
        --system-prompt-mode override -- "$sdk_bin/sdk-agent"
    want "override"
    want_trace '"systemPrompt":{}'
    refuse_trace "session/new"
    end "exit 6: the agent advertised {} (append only), so acp refuses locally; no session/new on the wire"

    begin "acp -> SDK agent: override, advertised"
    attempt 0 "$acp" --prompt "Hi" --cwd "$dir" --trace "$trace" --system-prompt "Be terse." \
        --system-prompt-mode override -- "$sdk_bin/sdk-agent" --override
    want 'sdk-agent: system prompt override "Be terse."'
    want "[turn ended: end_turn]"
    end "exit 0; the SDK agent advertised override and its session got it"

    begin "acp -> SDK agent: no capability"
    attempt 6 "$acp" --prompt "Hi" --cwd "$dir" --trace "$trace" --system-prompt "Be terse." -- \
        "$sdk_bin/sdk-agent" --no-system-prompt
    want "systemPrompt"
    refuse_trace "session/new"
    end "exit 6: the agent advertised no systemPrompt, so acp refuses locally; no session/new on the wire"
fi

printf '\n| pairing | result | checked |\n|---|---|---|\n'
for row in "${rows[@]}"; do
    IFS='|' read -r n r c <<<"$row"
    printf '| %s | %s | %s |\n' "$n" "$r" "$c"
done
printf '\n%d passed, %d failed\n' "$((${#rows[@]} - failed))" "$failed"
((failed == 0))
