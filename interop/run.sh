#!/usr/bin/env bash
# Interop test runner: the acp-runtime examples, `acp` and acp-remote against ACP peers written
# by others, installed from the npm registry and PyPI at the exact versions pinned beside this
# script (package.json + package-lock.json, requirements.txt). See docs/interop.md. Over stdio
# first, then over the network (WebSocket and Streamable HTTP): the SDKs' remote example
# clients against `acp-bridge serve`, and our clients against their example servers.
#
#   bash interop/run.sh
#
# Installs into target/interop/ (reused while the pins are unchanged), builds the examples
# (honouring CARGO_TARGET_DIR), runs every pairing with a timeout, prints a summary table, and
# exits non-zero if any pairing failed. Logs: target/interop/logs/<pairing>.log (and
# <pairing>.server.log for the server of a remote pairing). Then runs interop/rust-sdk.sh (the
# official Rust SDK: proxy chains and the system prompt), interop/rust-sdk-v2.sh and
# interop/v2-routing.sh (protocol v2 and version routing; INTEROP_RUST_SDK=0 skips all three).
# Needs cargo, node + npm, and python3 (3.10 to 3.14) with venv.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pins="$repo/interop"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
examples="$target/debug/examples"
work="$repo/target/interop"
timeout_secs="${INTEROP_TIMEOUT:-60}"

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'interop: %s\n' "$*" >&2; exit 2; }

for tool in cargo node npm python3 timeout; do
    command -v "$tool" >/dev/null || die "\`$tool\` is not installed"
done
python3 -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] < (3, 15))' ||
    die "the Python SDK needs Python 3.10 to 3.14, found $(python3 --version)"

mkdir -p "$work"

# --- npm: the TypeScript SDK (its compiled examples) and acpx --------------------------------
npm_dir="$work/npm"
if ! cmp -s "$pins/package-lock.json" "$npm_dir/package-lock.json" ||
    [[ ! -f "$npm_dir/.installed" ]]; then
    say "npm install ($(node -p 'Object.entries(require(process.argv[1]).dependencies).map(([n, v]) => n + "@" + v).join(", ")' "$pins/package.json"))"
    rm -rf "$npm_dir"
    mkdir -p "$npm_dir"
    cp "$pins/package.json" "$pins/package-lock.json" "$npm_dir/"
    # No install scripts: the only one (esbuild's, under acpx's tsx) merely checks its binary.
    # `npm install`, not `npm ci`: @openclaw/fs-safe (under acpx) names optional platform
    # packages that were never published at its version, which `npm ci` takes for a stale lock.
    (cd "$npm_dir" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error)
    touch "$npm_dir/.installed"
fi
ts_examples="$npm_dir/node_modules/@agentclientprotocol/sdk/dist/examples"
acpx_cli="$npm_dir/node_modules/acpx/dist/cli.js"

# --- PyPI: the Python SDK in a venv, and its sdist for the examples -------------------------
venv="$work/venv"
py_sdk_version="$(sed -n 's/^agent-client-protocol==//p' "$pins/requirements.txt")"
py_examples="$work/python-sdk/agent_client_protocol-$py_sdk_version/examples"
if ! cmp -s "$pins/requirements.txt" "$venv/requirements.txt" || [[ ! -d "$py_examples" ]]; then
    say "pip install -r interop/requirements.txt (agent-client-protocol==$py_sdk_version)"
    rm -rf "$venv" "$work/python-sdk"
    python3 -m venv "$venv"
    pip=("$venv/bin/python" -m pip --disable-pip-version-check --quiet)
    "${pip[@]}" install --no-deps -r "$pins/requirements.txt"
    # The examples ship only in the sdist; its metadata is built with the pinned pdm-backend.
    "${pip[@]}" download --no-deps --no-binary :all: --no-build-isolation \
        --dest "$work/python-sdk" "agent-client-protocol==$py_sdk_version"
    tar -xzf "$work/python-sdk/agent_client_protocol-$py_sdk_version.tar.gz" -C "$work/python-sdk"
    cp "$pins/requirements.txt" "$venv/requirements.txt"
fi
python="$venv/bin/python"

# --- our examples ------------------------------------------------------------------------------
# `acp` with protocol v2 first, kept aside as acp-v2: the plain build below takes its place.
say "cargo build -p acp-rs-cli --features unstable-protocol-v2 (the demo agent behind the version router)"
(cd "$repo" && cargo build --quiet -p acp-rs-cli --features unstable-protocol-v2)
mkdir -p "$work/bin"
cp "$target/debug/acp" "$work/bin/acp-v2"
say "cargo build -p acp-rs-runtime --examples; cargo build -p acp-rs-cli; cargo build -p acp-rs-remote --features http2 --bin acp-bridge --example prompt"
(cd "$repo" && cargo build --quiet -p acp-rs-runtime --examples && cargo build --quiet -p acp-rs-cli &&
    cargo build --quiet -p acp-rs-remote --features http2 --bin acp-bridge --example prompt)
our_client="$examples/client"
acp="$target/debug/acp"
our_agent="$examples/agent"
# The same demo agent served through the version router (v1 and v2 sides), as one program
# without arguments, since some SDK clients take the agent as one path.
routed_agent="$work/bin/routed-agent"
printf '#!/bin/sh\n# The demo agent through the version router (see interop/run.sh).\nexec "%s" --serve-demo-agent\n' \
    "$work/bin/acp-v2" >"$routed_agent"
chmod +x "$routed_agent"
bridge="$target/debug/acp-bridge"
prompt="$examples/prompt"

# The TypeScript example client hardcodes its agent as `npx tsx <dir>/agent.ts`: a stand-in
# `npx`, first on its PATH, starts the agent named by ACP_INTEROP_AGENT instead.
shim="$work/shim"
mkdir -p "$shim"
cat >"$shim/npx" <<'SHIM'
#!/bin/sh
# Stand-in for `npx tsx agent.ts` (see interop/run.sh).
exec "$ACP_INTEROP_AGENT"
SHIM
chmod +x "$shim/npx"

# --- pairings ----------------------------------------------------------------------------------
rm -rf "$work/runs" "$work/logs"
mkdir -p "$work/runs" "$work/logs"
rows=()
failed=0
name="" dir="" log="" rc=0 problems=()

# begin NAME: a fresh scratch project (notes.txt with three lines) and log for one pairing.
begin() {
    local slug
    slug="$(printf %s "$1" | tr -c "[:alnum:]" - | tr -s - | tr "[:upper:]" "[:lower:]")"
    name="$1" dir="$work/runs/${slug%-}" log="$work/logs/${slug%-}.log" rc=0 problems=()
    mkdir -p "$dir"
    printf 'buy milk\nship the release\ncall Ada\n' >"$dir/notes.txt"
    say "$name"
}

# attempt INPUT CMD...: runs CMD in the scratch project with INPUT on stdin, under the timeout.
attempt() {
    local input="$1"
    shift
    rc=0
    (cd "$dir" && printf '%s' "$input" | timeout --kill-after=5 "$timeout_secs" "$@") \
        >"$log" 2>&1 </dev/null || rc=$?
    if ((rc == 124 || rc == 137)); then
        problems+=("timed out after ${timeout_secs}s")
    elif ((rc != 0)); then
        problems+=("exit status $rc")
    fi
}

# want TEXT: the output has TEXT (fixed string).
want() { grep -qF -- "$1" "$log" || problems+=("no \`$1\`"); }
# want_line TEXT: the output has TEXT as a whole line.
want_line() { grep -qxF -- "$1" "$log" || problems+=("no line \`$1\`"); }
# want_joined TEXT: the output, with line breaks removed, has TEXT (chunks printed one a line).
want_joined() { tr -d '\n' <"$log" | grep -qF -- "$1" || problems+=("no \`$1\` (joined)"); }
# refuse TEXT: the output does not have TEXT.
refuse() { ! grep -qF -- "$1" "$log" || problems+=("found \`$1\`"); }
# want_updates MIN: our client printed that it received at least MIN updates.
want_updates() {
    local n
    n="$(sed -n 's/^\[updates received: \([0-9]*\)\]$/\1/p' "$log")"
    [[ -n "$n" && "$n" -ge "$1" ]] || problems+=("updates received: ${n:-none}, want >= $1")
}
# want_file PATH TEXT: the scratch project's PATH holds TEXT.
want_file() {
    grep -qF -- "$2" "$dir/$1" 2>/dev/null || problems+=("$1 lacks \`$2\`")
}

# end CHECKED: records the pairing's row.
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

# (a) our demo client against the TypeScript SDK's example agent: text, two tool calls, and a
# permission request that our AutoAllow answers (the agent then completes the call).
begin "our client -> TS example agent"
attempt "" "$our_client" node "$ts_examples/agent.js"
want_line "[turn ended: end_turn]"
want_updates 6
want "I'll help you with that."
want "tool call call_2 (edit): Modifying critical configuration file"
want "call_2 -> completed"
want "Perfect! I've successfully updated the configuration."
end "exit 0, stop reason end_turn, >= 6 updates, permission answered (call_2 completed), agent text"

# (a) our demo client against the Python SDK's example agents.
begin "our client -> Python agent.py"
attempt "" "$our_client" "$python" "$py_examples/agent.py"
want "connected to example-agent"
want_line "[turn ended: end_turn]"
want_updates 2
want "Client sent:Summarize my notes"
end "exit 0, agent info, stop reason end_turn, 2 updates, agent text"

begin "our client -> Python echo_agent.py"
attempt "" "$our_client" "$python" "$py_examples/echo_agent.py"
want_line "[turn ended: end_turn]"
want_updates 1
want_line "Summarize my notes"
end "exit 0, stop reason end_turn, 1 update, the prompt echoed"

# (a) `acp`, the command-line client, against the same agents: one turn each, everything the
# agent sends shown, the permission request granted by --yes.
begin "acp -> TS example agent"
attempt "" "$acp" --yes --prompt "Summarize my notes" --cwd "$dir" -- node "$ts_examples/agent.js"
want_line "[turn ended: end_turn]"
want "tool call call_2 (edit): Modifying critical configuration file"
want "call_2 -> status: completed"
want "Perfect! I've successfully updated the configuration."
end "exit 0, stop reason end_turn, permission answered (call_2 completed), agent text"

begin "acp -> Python agent.py"
attempt "" "$acp" --yes --prompt "Summarize my notes" --cwd "$dir" -- "$python" "$py_examples/agent.py"
want "connected to example-agent"
want "Client sent:Summarize my notes"
want_line "[turn ended: end_turn]"
end "exit 0, agent info, agent text, stop reason end_turn"

begin "acp -> Python echo_agent.py"
attempt "" "$acp" --yes --prompt "Summarize my notes" --cwd "$dir" -- "$python" "$py_examples/echo_agent.py"
want_line "Summarize my notes"
want_line "[turn ended: end_turn]"
end "exit 0, the prompt echoed, stop reason end_turn"

# v1_pairings AGENT VIA: the SDK clients' v1 pairings against our demo agent AGENT, each row's
# name ending in VIA. Run twice: the example agent alone, then the demo agent through the
# version router (`acp --serve-demo-agent` built with unstable-protocol-v2), whose v1 side must
# answer these clients as the agent alone does (issue 35). Three different SDK clients, so the
# router is crossed by each without doubling every v1 pairing.
v1_pairings() {
    local agent="$1" via="$2"
    # (b) the TypeScript SDK's example client against our demo agent. It exits 0 whatever
    # happens, so the output decides. Its fs calls are mocks (reads return one line), and it asks
    # for permission on stdin: option 1 is Allow.
    begin "TS example client -> our agent$via"
    attempt $'1\n' env PATH="$shim:$PATH" ACP_INTEROP_AGENT="$agent" node "$ts_examples/client.js"
    want "Connected to agent (protocol v1)"
    want "Read text file called"
    want "Permission requested"
    want "Write text file called"
    want_joined "Done. notes.txt has 1 lines, and I wrote summary.txt."
    want "Agent completed with: end_turn"
    refuse "[Client] Error"
    end "exit 0, fs read + permission + fs write served, our reply text, end_turn, no error"

    # (b) the Python SDK's example client against our demo agent: it advertises no capability, so
    # our agent skips files and terminals (and says it could not read the notes), and it reads the
    # prompt from stdin.
    begin "Python client.py -> our agent$via"
    attempt $'Summarize my notes\n' "$python" "$py_examples/client.py" "$agent"
    want_joined "| Agent: Done. | Agent: I | Agent: could | Agent: not | Agent: read | Agent: notes.txt: | Agent: this | Agent: client | Agent: offers | Agent: no | Agent: file | Agent: reading"
    refuse "Prompt failed"
    end "exit 0, our reply text (no capabilities advertised), no prompt error"

    # (c) acpx against our demo agent: fs, terminal and permission all served by acpx. Its state
    # goes to a HOME of its own.
    begin "acpx -> our agent$via"
    attempt "" env HOME="$dir/home" node "$acpx_cli" --agent "$agent" --approve-all \
        --cwd "$dir" exec "Summarize my notes"
    want "[tool] ls -1 (completed)"
    want "Done. notes.txt has 3 lines, and I wrote summary.txt."
    want "[done] end_turn"
    want_file summary.txt '3 lines of notes; the user asked "Summarize my notes"'
    end "exit 0, terminal run, summary.txt written via fs, our reply text, end_turn"
}
v1_pairings "$our_agent" ""
v1_pairings "$routed_agent" " (through the version router)"

# --- remote pairings: WebSocket and Streamable HTTP ------------------------------------------
# Each server listens on a free loopback port of its own, so that runs on one machine do not
# collide. The Python SDK's remote examples hardcode localhost:8000: the pairing runs a copy
# with that address replaced, nothing else changed. The TypeScript examples take the URL (or
# PORT) from the environment, and always send `Authorization: Bearer example-token`.
server_pid=""

free_port() {
    "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# serve PORT CMD...: starts a pairing's server in its scratch project, output to
# <pairing>.server.log, and waits (up to 20 s) until PORT accepts connections.
serve() {
    local port="$1"
    shift
    (cd "$dir" && exec "$@") >"${log%.log}.server.log" 2>&1 </dev/null &
    server_pid=$!
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.2
    done
    problems+=("the server did not listen on port $port (log: ${log%.log}.server.log)")
}

# unserve: stops the pairing's server (acp-bridge takes its agent processes down with it).
unserve() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
trap unserve EXIT

# py_example NAME PORT: a copy of the Python SDK's example NAME in the scratch project, talking
# to (or listening on) 127.0.0.1:PORT.
py_example() {
    sed "s/localhost:8000/127.0.0.1:$2/g" "$py_examples/$1" >"$dir/$1"
    printf '%s' "$dir/$1"
}

# (d) The SDKs' remote example clients against `acp-bridge serve`, which runs their example
# agent (one process per client) behind our WebSocket and Streamable HTTP server. The
# TypeScript agent streams text, two tool calls and a permission request, which the client
# answers with its first option.
for transport in WebSocket "Streamable HTTP"; do
    if [[ $transport == WebSocket ]]; then client=ws-client.js; else client=http-client.js; fi
    begin "TS $client -> acp-bridge ($transport)"
    port="$(free_port)"
    serve "$port" "$bridge" serve --listen "127.0.0.1:$port" --token example-token -- \
        node "$ts_examples/agent.js"
    attempt "" env ACP_WS_URL="ws://127.0.0.1:$port/acp" ACP_HTTP_URL="http://127.0.0.1:$port/acp" \
        node "$ts_examples/$client"
    unserve
    want "I'll help you with that."
    want "[tool_call]"
    want "Perfect! I've successfully updated the configuration."
    want "Done: end_turn"
    end "exit 0, the agent's text, tool calls and the answered permission (its closing text), end_turn"
done

for transport in WebSocket "Streamable HTTP"; do
    if [[ $transport == WebSocket ]]; then client=ws_client.py; else client=http_client.py; fi
    begin "Python $client -> acp-bridge ($transport)"
    port="$(free_port)"
    serve "$port" "$bridge" serve --listen "127.0.0.1:$port" -- "$python" "$py_examples/echo_agent.py"
    attempt "" "$python" "$(py_example "$client" "$port")"
    unserve
    want "initialized (protocol v1)"
    want "session: "
    want "<< hello over "
    want "stop reason: end_turn"
    end "exit 0, initialized, a session, its prompt echoed by the agent, stop reason end_turn"
done

# The Python client over Streamable HTTP against an agent that asks permission (our demo
# agent behind acp-bridge): the Python SDK 0.12.1 client answers the agent's requests without
# `Acp-Session-Id`, which the bridge once refused, leaving the permission request waiting for
# ever; the echo agent above never asks, which is why that went unseen.
begin "Python http_client.py -> acp-bridge (Streamable HTTP) -> our agent (asks permission)"
port="$(free_port)"
serve "$port" "$bridge" serve --listen "127.0.0.1:$port" -- "$our_agent"
perm_client="$(py_example http_client.py "$port")"
# The example opens its session in "." and our agent takes absolute directories only (the
# protocol's rule): the scratch project's path instead, nothing else changed.
sed -i "s|cwd=\".\"|cwd=\"$dir\"|" "$perm_client"
attempt "" "$python" "$perm_client"
unserve
want "initialized (protocol v1)"
want "session: "
want "summary.txt"
want "stop reason: end_turn"
end "exit 0, initialized, a session, a turn with a permission request answered, end_turn"

# The same Python client over HTTP/2: its transport takes a ready httpx client, here one that
# speaks only HTTP/2 with prior knowledge (h2c; httpx and python-hyper's h2 on their side), so
# the pairing passes only if the bridge's server answers in HTTP/2.
begin "Python http_client.py -> acp-bridge (HTTP/2, h2c)"
port="$(free_port)"
serve "$port" "$bridge" serve --listen "127.0.0.1:$port" -- "$python" "$py_examples/echo_agent.py"
h2_client="$(py_example http_client.py "$port")"
sed -i -e 's|^from acp.http import create_http_stream|import httpx\n&|' \
    -e 's|create_http_stream("\([^"]*\)")|create_http_stream("\1", client=httpx.AsyncClient(http1=False, http2=True, timeout=None))|' \
    "$h2_client"
grep -q 'http1=False' "$h2_client" || problems+=("the example's transport line changed; the HTTP/2 edit did not apply")
attempt "" "$python" "$h2_client"
unserve
want "initialized (protocol v1)"
want "<< hello over "
want "stop reason: end_turn"
end "exit 0, over HTTP/2 only (h2c prior knowledge): initialized, the prompt echoed, end_turn"

# (e) Our clients against the SDKs' example servers: acp-remote's `prompt` example (grants
# permissions, serves fs) and `acp`, each over both transports. The TypeScript server's agent
# greets with the session's cwd; the Python one (Hypercorn) echoes the prompt. Our client
# speaks HTTP/1.1 to an http:// URL unless told otherwise (the pairing after the loop).
for transport in WebSocket "Streamable HTTP"; do
    if [[ $transport == WebSocket ]]; then scheme=ws; else scheme=http; fi
    begin "our prompt -> TS http-server.js ($transport)"
    port="$(free_port)"
    serve "$port" env PORT="$port" node "$ts_examples/http-server.js"
    attempt "" "$prompt" "$scheme://127.0.0.1:$port/acp" --token example-token "Hi from Rust"
    want "Hello from the ACP HTTP/WebSocket example server at $dir."
    want "[EndTurn]"
    end "exit 0, the agent's text (with our cwd), EndTurn"

    begin "acp -> TS http-server.js ($transport)"
    attempt "" env ACP_TOKEN=example-token "$acp" --yes --prompt "Hi from acp" --cwd "$dir" -- \
        "$scheme://127.0.0.1:$port/acp"
    unserve
    want "connected to agent (protocol 1)"
    want "Hello from the ACP HTTP/WebSocket example server at $dir."
    want_line "[turn ended: end_turn]"
    end "exit 0, initialized, the agent's text (with our cwd), stop reason end_turn"

    begin "our prompt -> Python http_server.py ($transport)"
    port="$(free_port)"
    serve "$port" "$python" "$(py_example http_server.py "$port")"
    attempt "" "$prompt" "$scheme://127.0.0.1:$port/acp" "Hi from Rust"
    want "echo: Hi from Rust"
    want "[EndTurn]"
    end "exit 0, the prompt echoed, EndTurn"

    begin "acp -> Python http_server.py ($transport)"
    attempt "" "$acp" --yes --prompt "Hi from acp" --cwd "$dir" -- "$scheme://127.0.0.1:$port/acp"
    unserve
    want "echo: Hi from acp"
    want_line "[turn ended: end_turn]"
    end "exit 0, the prompt echoed, stop reason end_turn"
done

# Our Streamable HTTP client over HTTP/2 with prior knowledge (h2c) against Hypercorn's
# HTTP/2 (python-hyper's h2): `acp` runs `acp-bridge connect --http2-prior-knowledge` as its
# agent command.
begin "acp -> acp-bridge connect -> Python http_server.py (HTTP/2, h2c)"
port="$(free_port)"
serve "$port" "$python" "$(py_example http_server.py "$port")"
attempt "" "$acp" --yes --prompt "Hi over h2c" --cwd "$dir" -- \
    "$bridge" connect "http://127.0.0.1:$port/acp" --http2-prior-knowledge
unserve
want "echo: Hi over h2c"
want_line "[turn ended: end_turn]"
end "exit 0, the prompt echoed over HTTP/2 only (h2c prior knowledge), stop reason end_turn"

# --- summary -----------------------------------------------------------------------------------
printf '\n| %-54s | %-6s | %s |\n' "pairing" "result" "checked"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..56})" "--------" "---------"
for row in "${rows[@]}"; do
    IFS='|' read -r n r c <<<"$row"
    printf '| %-54s | %-6s | %s |\n' "$n" "$r" "$c"
done
printf '\n%d passed, %d failed\n' "$((${#rows[@]} - failed))" "$failed"

# --- the official Rust SDK: proxy chains and the system prompt ---------------------------------
# interop/rust-sdk.sh prints a table of its own. It builds its SDK peers once (about 2 CPU
# minutes from nothing, then reused) and runs its pairings in under a minute.
# INTEROP_RUST_SDK=0 skips it.
rust_sdk=0
if [[ "${INTEROP_RUST_SDK:-1}" != 0 ]]; then
    say "the official Rust SDK (interop/rust-sdk.sh)"
    bash "$pins/rust-sdk.sh" || rust_sdk=$?
fi
# Protocol v2 against the official Rust SDK's own v2 examples, both ways (interop/rust-sdk-v2.sh;
# about 2 CPU minutes to build them). INTEROP_RUST_SDK=0 skips it too.
rust_sdk_v2=0
if [[ "${INTEROP_RUST_SDK:-1}" != 0 ]]; then
    say "protocol v2 with the official Rust SDK (interop/rust-sdk-v2.sh)"
    bash "$pins/rust-sdk-v2.sh" || rust_sdk_v2=$?
fi
# v2 proxy chains: the official Rust SDK's v2 proxies in our conductor (interop/proxy-v2.sh;
# about a CPU minute to build them). INTEROP_RUST_SDK=0 skips it too.
proxy_v2=0
if [[ "${INTEROP_RUST_SDK:-1}" != 0 ]]; then
    say "protocol v2 proxy chains with the official Rust SDK (interop/proxy-v2.sh)"
    bash "$pins/proxy-v2.sh" || proxy_v2=$?
fi
# Version routing: the Rust SDK's router and connector and the TypeScript SDK 2.4.0's router
# against our connector and router, and the repeated-`initialize` answers
# (interop/v2-routing.sh; its SDK peers were built by rust-sdk.sh). INTEROP_RUST_SDK=0 skips it.
v2_routing=0
if [[ "${INTEROP_RUST_SDK:-1}" != 0 ]]; then
    say "protocol version routing with the official SDKs (interop/v2-routing.sh)"
    bash "$pins/v2-routing.sh" || v2_routing=$?
fi
((failed == 0 && rust_sdk == 0 && rust_sdk_v2 == 0 && proxy_v2 == 0 && v2_routing == 0))
