#!/usr/bin/env python3
"""Sends `initialize` twice to an agent: first for protocol 2, then again for protocol 1.

    python3 interop/initialize-twice.py AGENT [ARGS...]

Prints one line per answer, `first: protocolVersion N` and `repeat: error CODE` (or
`repeat: protocolVersion N` when the repeat is accepted), then exits 0; exits 1 when the agent
closes or answers something that is not a response to the request. The ACP SDKs disagree on the
repeat (docs/protocol-v2.md, "A repeated lower-version initialize"): interop/rust-sdk-v2.sh runs
this against their version routers and ours and records each answer.
"""

import json
import subprocess
import sys

FIRST = {
    "protocolVersion": 2,
    "info": {"name": "initialize-twice", "version": "0"},
    "capabilities": {},
}
REPEAT = {"protocolVersion": 1, "clientCapabilities": {}}


def answer(agent, request_id):
    """The response to request_id; notifications before it are skipped."""
    for line in agent.stdout:
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            return message
    return None


def shown(message):
    if message is None:
        return None
    if "error" in message:
        return "error %s" % message["error"].get("code")
    return "protocolVersion %s" % message.get("result", {}).get("protocolVersion")


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    agent = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    status = 0
    for request_id, label, params in ((1, "first", FIRST), (2, "repeat", REPEAT)):
        frame = {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}
        agent.stdin.write(json.dumps(frame) + "\n")
        agent.stdin.flush()
        result = shown(answer(agent, request_id))
        if result is None:
            print("%s: no answer" % label)
            status = 1
            break
        print("%s: %s" % (label, result))
    agent.stdin.close()
    try:
        agent.wait(timeout=10)
    except subprocess.TimeoutExpired:
        agent.kill()
    return status


if __name__ == "__main__":
    sys.exit(main())
