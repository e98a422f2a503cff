// An agent behind the TypeScript SDK 2.4.0's version router (`agentProtocolRouter()` from
// `@agentclientprotocol/sdk/experimental/v2`, installed as `@agentclientprotocol/sdk-v2`), for
// the protocol v2 interop (docs/interop.md, "Protocol v2"). Both sides answer every prompt with
// one text chunk naming the side that ran it (`ts-routed-agent v1: PROMPT` or
// `ts-routed-agent v2: PROMPT`), so a client's output shows which version the router picked.
// The v2 side answers `session/prompt` with the user message's id, then sends `user_message`,
// `running`, the agent message and idle `end_turn`; it answers `session/close`.
//
//   node interop/ts-routed-agent.mjs   (NODE_PATH or a node_modules beside it with the SDK)
import { Readable, Writable } from "node:stream";
import * as v1 from "@agentclientprotocol/sdk-v2";
import * as v2 from "@agentclientprotocol/sdk-v2/experimental/v2";

const text = (prompt) =>
  prompt
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join(" ");

let sessions = 0;
let messages = 0;

const v1Agent = v1
  .agent()
  .onRequest("initialize", ({ params }) => ({
    protocolVersion: params.protocolVersion,
    agentCapabilities: {},
    agentInfo: { name: "ts-routed-agent", version: "2.4.0" },
  }))
  .onRequest("session/new", () => ({ sessionId: `ts-v1-session-${++sessions}` }))
  .onRequest("session/prompt", async ({ params, client }) => {
    await client.notify("session/update", {
      sessionId: params.sessionId,
      update: {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: `ts-routed-agent v1: ${text(params.prompt)}` },
      },
    });
    return { stopReason: "end_turn" };
  });

const v2Agent = v2
  .agent()
  .onRequest("initialize", ({ params }) => ({
    protocolVersion: params.protocolVersion,
    info: { name: "ts-routed-agent", version: "2.4.0" },
    capabilities: { session: {} },
  }))
  .onRequest("session/new", ({ client }) => {
    const sessionId = `ts-v2-session-${++sessions}`;
    // The idle state after the answer, as the SDK's own v2 agents do.
    setImmediate(() =>
      client.notify("session/update", {
        sessionId,
        update: { sessionUpdate: "state_update", state: "idle" },
      }),
    );
    return { sessionId };
  })
  .onRequest("session/prompt", ({ params, client }) => {
    const n = ++messages;
    const sessionId = params.sessionId;
    const updates = [
      { sessionUpdate: "user_message", messageId: `user-${n}`, content: params.prompt },
      { sessionUpdate: "state_update", state: "running" },
      {
        sessionUpdate: "agent_message_chunk",
        messageId: `agent-${n}`,
        content: { type: "text", text: `ts-routed-agent v2: ${text(params.prompt)}` },
      },
      { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" },
    ];
    setImmediate(async () => {
      for (const update of updates) await client.notify("session/update", { sessionId, update });
    });
    return { messageId: `user-${n}` };
  })
  .onRequest("session/close", () => ({}))
  .onNotification("session/cancel", () => {});

const stream = v2.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
await v2.agentProtocolRouter().withV1(v1Agent).withV2(v2Agent).connect(stream).closed;
