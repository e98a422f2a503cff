#!/usr/bin/env bash
# Live check of `acp --agent ID`: real agents of the ACP agent registry, resolved from a copy of
# its entries (crates/acp-registry/fixtures/registry-2026-08.json) and started from the package
# registries: an npx entry (claude-acp, from npm) and a uvx entry (fast-agent, from PyPI).
#
#   bash interop/registry.sh
#
# claude-acp needs a Claude login for a session, so the check is `initialize` and its auth
# methods (from the --trace transcript). fast-agent runs without a provider on its
# `passthrough` model: a turn completes (the agent echoes the prompt). Needs network access to
# npm and PyPI, node + npm, and uv (installed with pip into target/interop/uv when missing);
# fast-agent needs Python 3.12 or newer (UV_PYTHON picks one, e.g. UV_PYTHON=python3.12).
# Not part of .ci/run: it installs a few hundred MB of agents whose versions the registry moves.
# Logs and transcripts: target/interop/registry/.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
work="$repo/target/interop/registry"
registry="$repo/crates/acp-registry/fixtures/registry-2026-08.json"
timeout_secs="${INTEROP_TIMEOUT:-600}"
mkdir -p "$work"
export ACP_REGISTRY_CACHE="$work/cache"

say() { printf '==> %s\n' "$*" >&2; }

if ! command -v uvx >/dev/null; then
    if [[ ! -x "$repo/target/interop/uv/bin/uvx" ]]; then
        say "pip install uv (into target/interop/uv)"
        python3 -m venv "$repo/target/interop/uv"
        "$repo/target/interop/uv/bin/pip" install --quiet uv
    fi
    export PATH="$repo/target/interop/uv/bin:$PATH"
fi

cargo build -q -p acp-rs-cli
acp="$target/debug/acp"
failed=0

# What the agent answered to `initialize`, from a --trace transcript.
initialize_summary() {
    python3 - "$1" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    entry = json.loads(line)
    message = entry["msg"]
    if entry["dir"] == "agent->client" and message.get("id") == 0 and "result" in message:
        result = message["result"]
        info = result.get("agentInfo", {})
        methods = [m.get("id") for m in result.get("authMethods", [])]
        print(f"initialize: {info.get('name')} {info.get('version')}, "
              f"protocol {result.get('protocolVersion')}, auth methods {methods}")
        sys.exit(0)
print("initialize: no answer")
sys.exit(1)
EOF
}

say "npx: acp --agent claude-acp (initialize and auth methods)"
status=0
timeout "$timeout_secs" "$acp" --agent claude-acp --registry "$registry" --yes -C "$work" \
    --trace "$work/claude-acp.jsonl" -p "Say hi" </dev/null >"$work/claude-acp.out" \
    2>"$work/claude-acp.err" || status=$?
head -2 "$work/claude-acp.err"
if initialize_summary "$work/claude-acp.jsonl"; then
    echo "claude-acp: ok (exit $status after initialize)"
else
    echo "claude-acp: FAILED (exit $status)"; tail -5 "$work/claude-acp.err"; failed=1
fi

say "uvx: acp --agent fast-agent (a turn on the passthrough model)"
status=0
timeout "$timeout_secs" "$acp" --agent fast-agent --registry "$registry" --yes -C "$work" \
    --trace "$work/fast-agent.jsonl" -p "/model switch passthrough" -p "Say hi" \
    </dev/null >"$work/fast-agent.out" 2>"$work/fast-agent.err" || status=$?
head -2 "$work/fast-agent.err"
initialize_summary "$work/fast-agent.jsonl" || true
if [[ $status -eq 0 ]] && grep -qx "Say hi" "$work/fast-agent.out"; then
    echo "fast-agent: ok (the turn ended end_turn, echoing the prompt)"
else
    echo "fast-agent: FAILED (exit $status)"; tail -5 "$work/fast-agent.err"; failed=1
fi
exit "$failed"
