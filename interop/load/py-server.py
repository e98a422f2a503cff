"""The Python SDK's server (acp.http.asgi.create_asgi_app: Streamable HTTP and WebSocket) under
Hypercorn, in front of a bench agent written with the same SDK: the turn of acp-remote's
`load` example (K message chunks of ~100 bytes per prompt), served in this process.

Run by interop/remote-load.sh with the interop venv's python: py-server.py PORT CHUNKS.
"""

import asyncio
import sys
import uuid
from typing import Any

from hypercorn.asyncio import serve
from hypercorn.config import Config

from acp import PROTOCOL_VERSION
from acp.helpers import update_agent_message_text
from acp.http.asgi import create_asgi_app
from acp.schema import InitializeResponse, NewSessionResponse, PromptResponse

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 7331
CHUNKS = int(sys.argv[2]) if len(sys.argv) > 2 else 50
FILLER = "x" * 90


class Chunky:
    """Streams CHUNKS message chunks per prompt, then ends the turn."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=PROTOCOL_VERSION)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=str(uuid.uuid4()))

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        for i in range(CHUNKS):
            await self._conn.session_update(session_id, update_agent_message_text(f"chunk {i:04} {FILLER}"))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


def main() -> None:
    config = Config()
    config.bind = [f"127.0.0.1:{PORT}"]
    # The backlog acp_remote::Server listens with (Hypercorn's default, 100, overflows under a
    # burst of 500 clients' connections).
    config.backlog = 1024
    config.accesslog = None
    print(f"listening on http://127.0.0.1:{PORT}/acp and ws://127.0.0.1:{PORT}/acp", flush=True)
    asyncio.run(serve(create_asgi_app(Chunky), config))


if __name__ == "__main__":
    main()
