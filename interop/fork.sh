#!/usr/bin/env bash
# session/fork against stock agents: the acp-runtime `fork` example (features
# unstable-session-fork) drives claude-agent-acp and opencode, installed from the npm registry
# at the versions pinned in interop/fork/ (package.json + package-lock.json). See
# docs/interop.md, "Forking sessions of stock agents".
#
#   bash interop/fork.sh                 # run every check
#   FORK_RECORD=1 bash interop/fork.sh   # also refresh interop/fork/transcripts/*.trace
#
# Kept apart from interop/run.sh (which CI runs): the two agents take about 440 MB installed.
# Each agent runs offline: in a network namespace of its own with only loopback when
# `unshare -rn` works here (else only behind dead proxy and API addresses), with a dummy API
# key, and with HOME, the XDG directories and TMPDIR in a scratch directory under
# target/interop/fork/runs/. Logs (every JSON-RPC line, then the verdict):
# target/interop/fork/logs/<check>.log. Exits non-zero if any check failed.
# Needs cargo, node + npm, timeout; unshare and ip for the network namespace.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pins="$repo/interop/fork"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
work="$repo/target/interop/fork"
timeout_secs="${INTEROP_TIMEOUT:-90}"

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'fork: %s\n' "$*" >&2; exit 2; }

for tool in cargo node npm timeout; do
    command -v "$tool" >/dev/null || die "\`$tool\` is not installed"
done
mkdir -p "$work"

# --- npm: the two agents -----------------------------------------------------------------------
npm_dir="$work/npm"
if ! cmp -s "$pins/package-lock.json" "$npm_dir/package-lock.json" ||
    [[ ! -f "$npm_dir/.installed" ]]; then
    say "npm install ($(node -p 'Object.entries(require(process.argv[1]).dependencies).map(([n, v]) => n + "@" + v).join(", ")' "$pins/package.json"))"
    rm -rf "$npm_dir"
    mkdir -p "$npm_dir"
    cp "$pins/package.json" "$pins/package-lock.json" "$npm_dir/"
    # No install scripts: opencode-ai's postinstall only links its platform binary, which is
    # run directly below.
    (cd "$npm_dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error)
    touch "$npm_dir/.installed"
fi
claude_acp="$npm_dir/node_modules/@zed-industries/claude-agent-acp/dist/index.js"
platform="$(node -p 'process.platform + "-" + process.arch')"
opencode="$npm_dir/node_modules/opencode-$platform/bin/opencode"
[[ -x "$opencode" ]] || opencode="$(ls "$npm_dir"/node_modules/opencode-*/bin/opencode 2>/dev/null | head -n 1)"

# --- the example ------------------------------------------------------------------------------
say "cargo build -p acp-rs-runtime --features unstable-session-fork --example fork"
(cd "$repo" && cargo build --quiet -p acp-rs-runtime --features unstable-session-fork --example fork)
fork="$target/debug/examples/fork"

# --- offline ----------------------------------------------------------------------------------
# A network namespace with loopback only (opencode talks to its own server on 127.0.0.1).
isolate=()
if command -v unshare >/dev/null && command -v ip >/dev/null &&
    unshare -rn sh -c 'ip link set lo up' 2>/dev/null; then
    isolate=(unshare -rn sh -c 'ip link set lo up && exec "$@"' sh)
    offline="network namespace (loopback only)"
else
    offline="dead proxy and API addresses only (no \`unshare -rn\` here)"
fi
say "offline: $offline"
dead="http://127.0.0.1:9"
# Not through the dead proxy: opencode's ACP side talks to its own HTTP server on loopback.
local="127.0.0.1,localhost,::1"

# --- checks -----------------------------------------------------------------------------------
rm -rf "$work/runs" "$work/logs"
mkdir -p "$work/runs" "$work/logs"
rows=()
failed=0
name="" slug="" dir="" log="" problems=() verdict=""

# check NAME SLUG [--prompt TEXT] AGENT...: runs the fork example against AGENT in a fresh
# scratch project with a scratch HOME, offline, under the timeout.
check() {
    name="$1" slug="$2"
    shift 2
    dir="$work/runs/$slug" log="$work/logs/$slug.log" problems=()
    local home="$dir/home" rc=0
    mkdir -p "$dir/project" "$home/.config" "$home/.local/share" "$home/.local/state" \
        "$home/.cache" "$home/tmp"
    say "$name"
    (cd "$dir/project" && timeout --kill-after=5 "$timeout_secs" env -i \
        PATH="$(dirname "$(command -v node)"):/usr/local/bin:/usr/bin:/bin" \
        HOME="$home" XDG_CONFIG_HOME="$home/.config" XDG_DATA_HOME="$home/.local/share" \
        XDG_STATE_HOME="$home/.local/state" XDG_CACHE_HOME="$home/.cache" TMPDIR="$home/tmp" \
        HTTP_PROXY="$dead" HTTPS_PROXY="$dead" http_proxy="$dead" https_proxy="$dead" \
        NO_PROXY="$local" no_proxy="$local" \
        npm_config_registry="$dead/" npm_config_offline=true \
        ANTHROPIC_API_KEY=dummy ANTHROPIC_BASE_URL="$dead" \
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
        OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
        OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 \
        OPENCODE_DISABLE_SHARE=1 \
        FORK_TIMEOUT="$((timeout_secs - 10))" \
        ${isolate[@]+"${isolate[@]}"} "$fork" --trace "$@") >"$log" 2>&1 </dev/null || rc=$?
    verdict="$(grep '^fork: ' "$log" | tail -n 1 || true)"
    if ((rc == 124 || rc == 137)); then
        problems+=("timed out after ${timeout_secs}s")
    fi
    if [[ -n "${FORK_RECORD:-}" ]]; then
        mkdir -p "$pins/transcripts"
        # The JSON-RPC lines, as sent (->) and received (<-), for tests/fork_interop.rs.
        grep -E '^(->|<-) ' "$log" >"$pins/transcripts/$slug.trace" || true
    fi
}

# want TEXT: the verdict has TEXT (fixed string).
want() { grep -qF -- "$1" <<<"$verdict" || problems+=("no \`$1\`"); }

# end CHECKED: records the check's row.
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
            tail -n 5 "$log" | cut -c1-400
        } >&2
    fi
}

# claude-agent-acp keeps a session on disk (~/.claude/projects/…/<id>.jsonl) only once it saw
# a turn, and forks by resuming that file: a fork before any turn is refused with -32002. The
# turn is `/context`, a command Claude Code answers locally, without a model.
check "claude-agent-acp: fork before any turn" claude-fresh node "$claude_acp"
want "fork: FAIL — session/fork: Resource not found"
want "(code -32002)"
end "refused with -32002 (Resource not found: the fork's new id): nothing on disk to fork yet"

check "claude-agent-acp: fork after a local turn" claude --prompt /context node "$claude_acp"
want "fork: ok — @zed-industries/claude-agent-acp 0.23.1: session "
want 'after a turn ("/context": '
want "(4 modes, 2 config options), then a turn on the fork (\"/context\": "
want "original listed: yes"
# The fork's transcript is a copy of the original's: it holds the original's first entry (by
# its uuid), then its own.
ids="$(sed -n 's/.*: session \([^ ]*\) after .* forked into \([^ ]*\) .*/\1 \2/p' <<<"$verdict")"
read -r original_id fork_id <<<"${ids:-- -}"
projects="$dir/home/.claude/projects"
first="$(grep -o '"uuid":"[^"]*"' "$projects"/*/"$original_id.jsonl" 2>/dev/null | head -n 1 || true)"
[[ -n "$first" ]] && grep -qF -- "$first" "$projects"/*/"$fork_id.jsonl" 2>/dev/null ||
    problems+=("the fork's transcript lacks the original's first entry (${first:-none})")
end "initialize, new, /context turn, fork (new id, answer whole), /context on the fork, list; the fork's transcript copies the original's"

check "opencode: fork" opencode "$opencode" acp
want "fork: ok — OpenCode 1.18.33: session ses_"
want "(0 modes, 2 config options)"
want "original listed: yes, fork listed: yes"
end "initialize, new, fork (new id, answer whole), list shows both"

# --- summary -----------------------------------------------------------------------------------
printf '\noffline: %s\n' "$offline"
printf '\n| %-40s | %-6s | %s |\n' "check" "result" "checked"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..42})" "--------" "---------"
for row in "${rows[@]}"; do
    IFS='|' read -r n r c <<<"$row"
    printf '| %-40s | %-6s | %s |\n' "$n" "$r" "$c"
done
printf '\n%d passed, %d failed\n' "$((${#rows[@]} - failed))" "$failed"
((failed == 0))
