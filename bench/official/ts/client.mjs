// Bench client on the official TypeScript SDK (@agentclientprotocol/sdk 2.x),
// written as the SDK's README describes: client({ name }), onRequest(...) and
// onNotification(...) handlers, connectWith(ndJsonStream(...), workflow) over
// the pipes of the spawned agent process.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import {
  FS_CONTENT,
  SESSION_CWD,
  SHUTDOWN_GRACE_MS,
  nowMs,
  parseScenario,
  reportRusage,
} from "./common.mjs";

const IMPL = "ts";
const [prompt, program, ...agentArgs] = process.argv.slice(2);
if (prompt === undefined || program === undefined) {
  console.error('usage: client.mjs "<prompt text>" AGENT_PROGRAM [AGENT_ARGS...]');
  process.exit(2);
}
const scenario = parseScenario(prompt);
const expectedUpdates = scenario.kind === "stream" ? scenario.count : 0;

const child = spawn(program, agentArgs, { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));

let updates = 0;
let rpcs = 0;
let wake = null;
const app = acp
  .client({ name: "ts-bench-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    if (params.update.sessionUpdate === "agent_message_chunk") {
      updates++;
      if (wake && updates >= expectedUpdates) wake();
    }
  })
  .onRequest(acp.methods.client.fs.readTextFile, () => {
    rpcs++;
    return { content: FS_CONTENT };
  });

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
let promptMs = 0;
let totalMs = 0;
try {
  await app.connectWith(stream, async (agent) => {
    await agent.request(acp.methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false },
    });
    const session = await agent.request(acp.methods.agent.session.new, {
      cwd: SESSION_CWD,
      mcpServers: [],
    });
    const tp = nowMs();
    const response = await agent.request(acp.methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: prompt }],
    });
    if (response.stopReason !== "end_turn") throw new Error(`stop reason ${response.stopReason}`);
    if (updates < expectedUpdates) await new Promise((resolve) => (wake = resolve));
    const now = nowMs();
    promptMs = now - tp;
    totalMs = now;
  });
} catch (error) {
  console.error("ts client:", error);
  child.kill("SIGKILL");
  process.exit(1);
}

// Close the agent's stdin, then wait for it to exit (kill it after the grace period).
child.stdin.end();
const timer = setTimeout(() => child.kill("SIGKILL"), SHUTDOWN_GRACE_MS);
const status = await exited;
clearTimeout(timer);
console.log(
  `impl=${IMPL} prompt="${prompt}" updates=${updates} rpcs=${rpcs} ` +
    `prompt_ms=${promptMs.toFixed(3)} total_ms=${totalMs.toFixed(3)}`,
);
reportRusage("client", IMPL);
process.exit(status.code === 0 ? 0 : 1);
