// The TypeScript SDK's server (AcpServer, with its Node adapters for Streamable HTTP and
// WebSocket, as its dist/examples/http-server.js wires them) in front of a bench agent written
// with the same SDK: the turn of acp-remote's `load` example (K message chunks of ~100 bytes
// per prompt), served in this process. Run by interop/remote-load.sh from the npm install
// directory (so that the SDK resolves); `PORT` (default 7331) and `CHUNKS` (default 50).
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { WebSocketServer } from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import {
    createNodeHttpHandler,
    createNodeWebSocketUpgradeHandler,
} from "@agentclientprotocol/sdk/experimental/node";

const chunks = Number.parseInt(process.env.CHUNKS ?? "50", 10);
const port = Number.parseInt(process.env.PORT ?? "7331", 10);
const filler = "x".repeat(90);

const agent = acp
    .agent({ name: "chunky", version: "0" })
    .onRequest(acp.methods.agent.initialize, () => ({
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: {},
    }))
    .onRequest(acp.methods.agent.session.new, () => ({ sessionId: randomUUID() }))
    .onRequest(acp.methods.agent.session.prompt, async (ctx) => {
        for (let i = 0; i < chunks; i++) {
            await ctx.client.notify(acp.methods.client.session.update, {
                sessionId: ctx.params.sessionId,
                update: {
                    sessionUpdate: "agent_message_chunk",
                    content: { type: "text", text: `chunk ${String(i).padStart(4, "0")} ${filler}` },
                },
            });
        }
        return { stopReason: "end_turn" };
    })
    .onNotification(acp.methods.agent.session.cancel, () => {});

const acpServer = new AcpServer({ agent });
const httpHandler = createNodeHttpHandler(acpServer);
const webSockets = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });
const upgradeHandler = createNodeWebSocketUpgradeHandler(acpServer, webSockets);
const isAcp = (url) => new URL(url ?? "/", "http://127.0.0.1").pathname === "/acp";

const server = createServer((req, res) => {
    if (!isAcp(req.url)) {
        res.writeHead(404).end();
        return;
    }
    httpHandler(req, res);
});
server.on("upgrade", (req, socket, head) => {
    if (!isAcp(req.url)) {
        socket.destroy();
        return;
    }
    upgradeHandler(req, socket, head);
});
// The backlog acp_remote::Server listens with (Node's default is 511).
server.listen({ port, host: "127.0.0.1", backlog: 1024 }, () => {
    console.log(`listening on http://127.0.0.1:${port}/acp and ws://127.0.0.1:${port}/acp`);
});
