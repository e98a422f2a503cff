#!/usr/bin/env bash
# Conformance verdicts of ACP agents published by others: runs `acp-conformance` against the
# TypeScript SDK's and the Python SDK's example agents, as installed by interop/run.sh under
# target/interop/, and (`--protocol 2`) against the official Rust SDK's `simple_agent_v2`, as
# built by interop/rust-sdk-v2.sh, and our own v2 agents (acp-runtime's example `agent_v2`,
# the demo agent `acp --serve-demo-agent`), and compares each agent's verdicts with the file
# pinned for it in fixtures/conformance/. See docs/conformance.md.
#
#   bash interop/conformance.sh                        # compare; exit 1 on any difference
#   CONFORMANCE_UPDATE=1 bash interop/conformance.sh   # re-pin the verdicts instead
#
# Runs interop/run.sh first when the installs are missing or older than the pins, and
# interop/rust-sdk-v2.sh when the SDK's v2 example is missing (interop/run.sh runs it too, so
# in CI the SDK is built once). Builds acp-conformance with protocol v2 (honouring
# CARGO_TARGET_DIR). Reports and tables go to
# target/interop/conformance/<agent>.{json,txt}. Needs cargo, node, python3.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pins="$repo/interop"
fixtures="$repo/fixtures/conformance"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
work="$repo/target/interop"
out="$work/conformance"
update="${CONFORMANCE_UPDATE:-}"

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'conformance: %s\n' "$*" >&2; exit 2; }

for tool in cargo node python3; do
    command -v "$tool" >/dev/null || die "\`$tool\` is not installed"
done

# --- the agents, installed by interop/run.sh --------------------------------------------------
py_sdk_version="$(sed -n 's/^agent-client-protocol==//p' "$pins/requirements.txt")"
ts_sdk_version="$(node -p 'require(process.argv[1]).dependencies["@agentclientprotocol/sdk"]' "$pins/package.json")"
ts_examples="$work/npm/node_modules/@agentclientprotocol/sdk/dist/examples"
py_examples="$work/python-sdk/agent_client_protocol-$py_sdk_version/examples"
python="$work/venv/bin/python"
if ! cmp -s "$pins/package-lock.json" "$work/npm/package-lock.json" ||
    [[ ! -f "$work/npm/.installed" ]] ||
    ! cmp -s "$pins/requirements.txt" "$work/venv/requirements.txt" ||
    [[ ! -d "$py_examples" ]]; then
    say "installing the pinned SDKs (bash interop/run.sh)"
    bash "$pins/run.sh" >&2
fi

sdk_v2_agent="$work/sdk-v2/target/debug/examples/simple_agent_v2"
if [[ ! -x "$sdk_v2_agent" ]]; then
    say "building the Rust SDK's v2 examples (bash interop/rust-sdk-v2.sh)"
    bash "$pins/rust-sdk-v2.sh" >&2
fi

say "cargo build: acp-conformance, and our v2 agents (feature unstable-protocol-v2)"
(cd "$repo" && cargo build --quiet -p acp-rs-conformance --features unstable-protocol-v2)
(cd "$repo" && cargo build --quiet -p acp-rs-runtime --features unstable-protocol-v2 --example agent_v2)
(cd "$repo" && cargo build --quiet -p acp-rs-cli --features unstable-protocol-v2 --bin acp)
checker="$target/debug/acp-conformance"

# --- one run per agent, in parallel (the agents mostly wait) -----------------------------------
rm -rf "$out"
mkdir -p "$out" "$fixtures"
names=() descriptions=() protocols=() pids=()

# [protocol=2] agent NAME DESCRIPTION COMMAND...: checks one agent in the background, with the
# checks of protocol version $protocol (default 1).
agent() {
    local name="$1" description="$2"
    shift 2
    names+=("$name")
    descriptions+=("$description")
    protocols+=("${protocol:-1}")
    local expect=(--expect "$fixtures/$name.json")
    if [[ -n "$update" ]]; then
        expect=()
    fi
    say "$name (protocol ${protocol:-1}): $*"
    (cd "$work" && "$checker" --protocol "${protocol:-1}" --color never \
        --json "$out/$name.json" "${expect[@]}" -- "$@") \
        >"$out/$name.txt" 2>"$out/$name.stderr" &
    pids+=($!)
}

agent ts-example-agent \
    "TypeScript SDK example agent: npm @agentclientprotocol/sdk $ts_sdk_version, dist/examples/agent.js" \
    node "$ts_examples/agent.js"
agent python-example-agent \
    "Python SDK example agent: PyPI agent-client-protocol $py_sdk_version, sdist examples/agent.py" \
    "$python" "$py_examples/agent.py"
agent python-echo-agent \
    "Python SDK echo agent: PyPI agent-client-protocol $py_sdk_version, sdist examples/echo_agent.py" \
    "$python" "$py_examples/echo_agent.py"
protocol=2 agent rust-sdk-simple-agent-v2 \
    "Rust SDK v2 example agent: crates.io agent-client-protocol 5.2.0 (feature unstable_protocol_v2), examples/simple_agent_v2.rs" \
    "$sdk_v2_agent"
protocol=2 agent acp-rs-agent-v2 \
    "acp-rs: acp-runtime's example agent_v2 (v1 and v2 through the version router)" \
    "$target/debug/examples/agent_v2"
protocol=2 agent acp-rs-demo-agent-v2 \
    "acp-rs: the demo agent, acp --serve-demo-agent (v1 and v2 through the version router)" \
    "$target/debug/acp" --serve-demo-agent

# summarize REPORT: one line of counts from a JSON report.
summarize() {
    python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print("{passed} pass, {failed} fail ({mustFailed} MUST), {skipped} skipped, "
      "{inconclusive} inconclusive".format(**s))
PY
}

failed=0
rows=()
for i in "${!names[@]}"; do
    name="${names[$i]}"
    rc=0
    wait "${pids[$i]}" || rc=$?
    summary="$(summarize "$out/$name.json" 2>/dev/null || echo "no report")"
    if [[ -n "$update" ]]; then
        if [[ ! -f "$out/$name.json" ]]; then
            failed=$((failed + 1))
            rows+=("$name|NO REPORT|$summary")
            cat "$out/$name.stderr" >&2
            continue
        fi
        python3 - "$out/$name.json" "$fixtures/$name.json" "${descriptions[$i]}" "${protocols[$i]}" <<'PY'
import json, sys
report, pinned, description, protocol = sys.argv[1:]
verdicts = json.load(open(report))["verdicts"]
with open(pinned, "w") as f:
    json.dump({"agent": description, "protocol": int(protocol), "verdicts": verdicts}, f, indent=2)
    f.write("\n")
PY
        rows+=("$name|pinned|$summary")
    elif ((rc == 0)); then
        rows+=("$name|as pinned|$summary")
    else
        failed=$((failed + 1))
        rows+=("$name|DIFFERS|$summary (see ${out#"$repo"/}/$name.txt)")
        {
            printf -- '--- %s: verdicts differ from fixtures/conformance/%s.json\n' "$name" "$name"
            cat "$out/$name.stderr"
        } >&2
    fi
done

printf '\n| %-26s | %-9s | %s |\n' "agent" "verdicts" "summary"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..28})" "-----------" "---------"
for row in "${rows[@]}"; do
    IFS='|' read -r n r s <<<"$row"
    printf '| %-26s | %-9s | %s |\n' "$n" "$r" "$s"
done
((failed == 0))
