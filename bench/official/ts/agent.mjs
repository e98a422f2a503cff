// Bench agent on the official TypeScript SDK (@agentclientprotocol/sdk 2.x),
// written as the SDK's README describes: agent({ name }), onRequest(...) with
// the method constants, connect(ndJsonStream(stdout, stdin)). The SDK does not
// await request handlers before reading the next message, so the prompt turn
// does not block the reader.
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { FS_PATH, SESSION_ID, parseScenario, reportRusage } from "./common.mjs";

const IMPL = "ts";

async function turn(client, sessionId, scenario) {
  switch (scenario.kind) {
    case "stream": {
      const text = "x".repeat(scenario.size);
      for (let i = 0; i < scenario.count; i++) {
        await client.notify(acp.methods.client.session.update, {
          sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
        });
      }
      break;
    }
    case "rpc":
      for (let i = 0; i < scenario.count; i++) {
        await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: FS_PATH });
      }
      break;
    case "rpcpar": {
      let sent = 0;
      const worker = async () => {
        while (sent < scenario.count) {
          sent++;
          await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: FS_PATH });
        }
      };
      const workers = [];
      for (let i = 0; i < Math.min(scenario.inFlight, scenario.count); i++) workers.push(worker());
      await Promise.all(workers);
      break;
    }
    default:
      break;
  }
}

const app = acp
  .agent({ name: "ts-bench-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {},
    authMethods: [],
  }))
  .onRequest(acp.methods.agent.session.new, () => ({ sessionId: SESSION_ID }))
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const first = params.prompt[0];
    const text = first && first.type === "text" ? first.text : "";
    await turn(client, params.sessionId, parseScenario(text));
    return { stopReason: "end_turn" };
  })
  .onNotification(acp.methods.agent.session.cancel, () => {});

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect(stream);
await connection.closed;
reportRusage("agent", IMPL);
process.exit(0);
