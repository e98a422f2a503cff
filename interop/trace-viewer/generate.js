// node generate.js N OUT.jsonl: a synthetic transcript of N messages for load-time
// measurements (docs/performance.md) and the virtualization check: turns of a prompt, streamed
// chunks, tool calls, file reads (every tenth one failing) and the answers, with times.
"use strict";
const fs = require("fs");

const [count, out] = [Number(process.argv[2]), process.argv[3]];
const lines = [];
let t = Date.now() * 1000;
let id = 0;
const put = (dir, msg) => { t += 137; lines.push(JSON.stringify({ dir, msg, time_us: t })); };
const rpc = (o) => Object.assign({ jsonrpc: "2.0" }, o);
put("client->agent", rpc({ id: id++, method: "initialize", params: { protocolVersion: 1 } }));
put("agent->client", rpc({ id: 0, result: { protocolVersion: 1, agentInfo: { name: "synthetic" } } }));
for (let turn = 0; lines.length < count; turn++) {
  const session = "sess_" + (turn % 3);
  const prompt = id++;
  put("client->agent", rpc({ id: prompt, method: "session/prompt", params: { sessionId: session, prompt: [{ type: "text", text: "Turn " + turn }] } }));
  for (let k = 0; k < 12 && lines.length < count - 4; k++) {
    put("agent->client", rpc({ method: "session/update", params: { sessionId: session, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "word" + k + " " } } } }));
  }
  put("agent->client", rpc({ method: "session/update", params: { sessionId: session, update: { sessionUpdate: "tool_call", toolCallId: "call_" + turn, title: "Read file " + turn, kind: "read", status: "pending" } } }));
  const read = 1000000 + turn;
  put("agent->client", rpc({ id: read, method: "fs/read_text_file", params: { sessionId: session, path: "/work/file" + turn + ".txt" } }));
  put("client->agent", turn % 10 === 9
    ? rpc({ id: read, error: { code: -32002, message: "Resource not found" } })
    : rpc({ id: read, result: { content: "line\n".repeat(3) } }));
  put("agent->client", rpc({ id: prompt, result: { stopReason: "end_turn" } }));
}
fs.writeFileSync(out, lines.slice(0, count).join("\n") + "\n");
