//! The list of checks: what each verifies, and the function that runs it.

use super::{
    CheckInfo, Ctx, caps, init, lifecycle, prompt, rpc, session, system_prompt, transport,
};
use crate::report::{Level, Verdict};

pub(crate) struct Check {
    pub(super) info: CheckInfo,
    pub(super) run: fn(&mut Ctx<'_>) -> Verdict,
}

pub(super) const fn check(
    id: &'static str,
    level: Level,
    spec: &'static str,
    requirement: &'static str,
    run: fn(&mut Ctx<'_>) -> Verdict,
) -> Check {
    Check {
        info: CheckInfo {
            id,
            level,
            spec,
            requirement,
        },
        run,
    }
}

use Level::{Must, Should};

/// Every check, in the order they run. The last five judge what all the others saw.
pub(super) static CHECKS: &[Check] = &[
    // Initialization.
    check(
        "init.response",
        Must,
        "initialization.mdx › Initialization",
        "The agent answers `initialize` with a result naming the protocol version it chose and its capabilities.",
        init::response,
    ),
    check(
        "init.version.same",
        Must,
        "initialization.mdx › Version Negotiation",
        "Asked for a protocol version it supports (1), the agent answers with that same version.",
        init::version_same,
    ),
    check(
        "init.version.future",
        Must,
        "initialization.mdx › Version Negotiation",
        "Asked for a version it cannot support (999), the agent answers with the latest version it does support, not with the requested one and not with an error.",
        init::version_future,
    ),
    check(
        "init.capabilities",
        Must,
        "initialization.mdx › Agent Capabilities; schema.mdx › InitializeResponse",
        "The capabilities, auth methods and agent info in the `initialize` result have the shapes and types the schema gives them.",
        init::capabilities,
    ),
    check(
        "init.agent_info",
        Should,
        "initialization.mdx › Implementation Information",
        "The agent identifies itself in `agentInfo` with a name and a version.",
        init::agent_info,
    ),
    // Sessions.
    check(
        "session.new",
        Must,
        "session-setup.mdx › Creating a Session",
        "`session/new` with an absolute working directory and no MCP servers is answered with a session id.",
        session::new,
    ),
    check(
        "session.new.unique_ids",
        Must,
        "session-setup.mdx › Creating a Session; › Session ID",
        "Every `session/new` is answered with a session id of its own.",
        session::unique_ids,
    ),
    check(
        "session.new.relative_cwd",
        Should,
        "session-setup.mdx › Working Directory; overview.mdx › Argument requirements",
        "The working directory has to be absolute, so a relative one is refused with an error.",
        session::relative_cwd,
    ),
    check(
        "session.unknown_id",
        Should,
        "session-setup.mdx › Session ID; schema.mdx › ErrorCode",
        "A prompt naming a session id the agent never handed out is refused with an error (resource not found fits).",
        session::unknown_id,
    ),
    check(
        "session.load.replay",
        Must,
        "session-setup.mdx › Loading a Session",
        "An agent advertising `loadSession` replays the whole conversation as `session/update` notifications, and answers `session/load` only after the replay.",
        session::load_replay,
    ),
    check(
        "session.modes.consistent",
        Must,
        "session-modes.mdx › Initial state",
        "Advertised modes are well formed: ids are unique and `currentModeId` is one of `availableModes`.",
        session::modes_consistent,
    ),
    check(
        "session.modes.set",
        Should,
        "session-modes.mdx › Setting the current mode",
        "Switching to one of the advertised modes with `session/set_mode` succeeds.",
        session::modes_set,
    ),
    check(
        "session.modes.unknown",
        Should,
        "session-modes.mdx › From the Client",
        "Only advertised modes can be selected, so `session/set_mode` with a mode id that was not advertised is refused with an error.",
        session::modes_unknown,
    ),
    check(
        "session.config.consistent",
        Must,
        "session-config-options.mdx › ConfigOption; › Default Values and Graceful Degradation",
        "Every config option has a unique id and a current value; a select option's current value is one of its values.",
        session::config_consistent,
    ),
    check(
        "session.config.boolean_gated",
        Must,
        "session-config-options.mdx › Boolean Config Options",
        "Options of type `boolean` are only sent to clients that advertised support for them (the checker does not).",
        session::config_boolean_gated,
    ),
    check(
        "session.config.set",
        Should,
        "session-config-options.mdx › Setting a Config Option",
        "Setting a select option to another of its values succeeds, and the answer holds the complete option state with the new value.",
        session::config_set,
    ),
    // Session lifecycle methods, when advertised.
    check(
        "session.list",
        Must,
        "session-list.mdx › Listing Sessions",
        "An agent advertising `sessionCapabilities.list` answers `session/list` with a `sessions` array of objects with a `sessionId` and an absolute `cwd`; filtered by `cwd`, only sessions of that directory, and an empty array when none matches.",
        lifecycle::list_sessions,
    ),
    check(
        "session.resume",
        Must,
        "session-setup.mdx › Resuming a Session",
        "An agent advertising `sessionCapabilities.resume` answers `session/resume` of a session that had a turn with a result, without replaying the conversation before it.",
        lifecycle::resume,
    ),
    check(
        "session.close",
        Must,
        "session-setup.mdx › Closing a Session",
        "An agent advertising `sessionCapabilities.close` closes an active session: `session/close` is answered with an (empty) result object.",
        lifecycle::close,
    ),
    check(
        "session.close.cancels",
        Must,
        "session-setup.mdx › Closing a Session",
        "Closing a session whose turn is running cancels the turn as `session/cancel` would: the turn ends with stop reason `cancelled`, and `session/close` is answered with a result.",
        lifecycle::close_cancels,
    ),
    check(
        "session.delete",
        Must,
        "session-delete.mdx › Semantics",
        "An agent advertising `sessionCapabilities.delete` no longer lists a deleted session in `session/list`.",
        lifecycle::delete,
    ),
    check(
        "session.delete.unknown",
        Should,
        "session-delete.mdx › Semantics",
        "Deleting a session that never existed succeeds silently.",
        lifecycle::delete_unknown,
    ),
    check(
        "auth.logout",
        Should,
        "authentication.mdx › Logging Out",
        "An agent advertising `auth.logout` answers `logout` with an (empty) result object.",
        lifecycle::logout,
    ),
    // Prompt turns.
    check(
        "prompt.stop_reason",
        Must,
        "prompt-turn.mdx › Check for Completion; › Stop Reasons",
        "A prompt turn ends with a `session/prompt` result carrying one of the defined stop reasons.",
        prompt::stop_reason,
    ),
    check(
        "prompt.updates_before_response",
        Must,
        "prompt-turn.mdx › Check for Completion; › Cancellation",
        "The updates of a turn (message chunks, thoughts, tool calls, plans) are all sent before the turn's response; none follows it.",
        prompt::updates_before_response,
    ),
    check(
        "prompt.cancel",
        Must,
        "prompt-turn.mdx › Cancellation",
        "After `session/cancel`, the turn ends with stop reason `cancelled` (not an error), its last updates sent before that response.",
        prompt::cancel,
    ),
    check(
        "prompt.cancel.permission",
        Must,
        "prompt-turn.mdx › Cancellation; tool-calls.mdx › Requesting Permission",
        "Cancelled while a permission request is pending (the client then answers it `cancelled`), the turn still ends with stop reason `cancelled`.",
        prompt::cancel_permission,
    ),
    // Capabilities.
    check(
        "caps.client_methods",
        Must,
        "initialization.mdx › Capabilities; file-system.mdx › Checking Support; terminals.mdx › Checking Support",
        "Capabilities the client leaves out count as unsupported: with none advertised, the agent never calls `fs/*`, `terminal/*` or `elicitation/*`.",
        caps::client_methods,
    ),
    check(
        "caps.prompt.baseline",
        Must,
        "initialization.mdx › Prompt capabilities",
        "Every agent accepts text and resource links in prompts, whatever it advertises.",
        caps::prompt_baseline,
    ),
    check(
        "caps.prompt.image",
        Must,
        "initialization.mdx › Prompt capabilities; content.mdx › Image Content",
        "An agent advertising `promptCapabilities.image` accepts prompts that carry an image.",
        caps::prompt_image,
    ),
    check(
        "caps.prompt.audio",
        Must,
        "initialization.mdx › Prompt capabilities; content.mdx › Audio Content",
        "An agent advertising `promptCapabilities.audio` accepts prompts that carry audio.",
        caps::prompt_audio,
    ),
    check(
        "caps.prompt.embedded_context",
        Must,
        "initialization.mdx › Prompt capabilities; content.mdx › Embedded Resource",
        "An agent advertising `promptCapabilities.embeddedContext` accepts prompts that carry an embedded resource.",
        caps::prompt_embedded_context,
    ),
    check(
        "session.system_prompt.append",
        Must,
        "schema.mdx (1.20) › SessionSystemPromptCapabilities; SystemPrompt",
        "An agent advertising `sessionCapabilities.systemPrompt` accepts a text system prompt in `append` mode on `session/new`.",
        system_prompt::append,
    ),
    check(
        "session.system_prompt.mode",
        Must,
        "schema.mdx (1.20) › SystemPromptMode; SessionSystemPromptModeCapabilities",
        "A system prompt in a mode the agent does not advertise (an unknown mode; `override` without `mode.override`) is answered with an error (-32602), not with a session.",
        system_prompt::unsupported_mode,
    ),
    // JSON-RPC.
    check(
        "rpc.method_not_found",
        Must,
        "overview.mdx › Error Handling (JSON-RPC 2.0 error codes)",
        "A request for a method that does not exist is answered with error -32601.",
        rpc::method_not_found,
    ),
    check(
        "rpc.ext_method_not_found",
        Should,
        "extensibility.mdx › Custom Requests",
        "An extension request (`_` prefix) the agent does not know is answered with the Method not found error (-32601).",
        rpc::ext_method_not_found,
    ),
    check(
        "rpc.notifications_unanswered",
        Must,
        "overview.mdx › Error Handling; extensibility.mdx › Custom Notifications",
        "Notifications never get a response, not even an error: an unknown `_` notification, an unknown notification, `session/cancel` of an idle session.",
        rpc::notifications_unanswered,
    ),
    check(
        "rpc.ext_notification_ignored",
        Should,
        "extensibility.mdx › Custom Notifications",
        "An unrecognized extension notification is ignored: the agent carries on serving requests.",
        rpc::ext_notification_ignored,
    ),
    check(
        "rpc.parse_error",
        Should,
        "overview.mdx › Error Handling (JSON-RPC 2.0 parse error)",
        "A line that is not valid JSON is answered with error -32700 and id null, and the agent keeps serving.",
        rpc::parse_error,
    ),
    check(
        "rpc.invalid_request",
        Should,
        "overview.mdx › Error Handling (JSON-RPC 2.0 invalid request)",
        "A JSON object that is not a valid request (no method) is answered with error -32600, and the agent keeps serving.",
        rpc::invalid_request,
    ),
    check(
        "rpc.invalid_params",
        Must,
        "overview.mdx › Error Handling (JSON-RPC 2.0 invalid params)",
        "A known method called with params of the wrong shape is answered with error -32602, and the agent keeps serving.",
        rpc::invalid_params,
    ),
    check(
        "rpc.stray_response",
        Should,
        "overview.mdx › Communication Model (JSON-RPC 2.0 responses)",
        "A response whose id matches no request of the agent gets no answer and does not disturb the agent.",
        rpc::stray_response,
    ),
    check(
        "rpc.cancel_request",
        Must,
        "cancellation.mdx › $/cancel_request Notification",
        "A request cancelled with `$/cancel_request` is still answered, with a result or with error -32800; the notification itself is not.",
        rpc::cancel_request,
    ),
    // Transport.
    check(
        "transport.exit_on_eof",
        Should,
        "transports.mdx › stdio",
        "The client ends the connection by closing the agent's stdin; the agent then exits.",
        transport::exit_on_eof,
    ),
    // Everything seen by every connection.
    check(
        "caps.elicitation",
        Must,
        "elicitation.mdx › Checking support",
        "The agent sends no `elicitation/create` (or other `elicitation/*`) request to a client that did not advertise `clientCapabilities.elicitation`; the checker never does.",
        transport::no_elicitation,
    ),
    check(
        "caps.plan_and_subagents",
        Must,
        "schema.mdx (1.20) › ClientCapabilities (plan, subagents); agent-plan.mdx; subagents.mdx",
        "The agent sends no `plan_update` or `plan_removed` to a client that did not advertise `plan`, and no `subagent_update`, `session_message`, `session_message_chunk` or tool call content of type `session` to one that did not advertise `subagents`; the checker advertises neither.",
        transport::no_plan_or_subagent_updates,
    ),
    check(
        "rpc.response_ids",
        Must,
        "overview.mdx › Communication Model (JSON-RPC 2.0 responses)",
        "Every response the agent sends carries the id of a request the client sent, and every request is answered once.",
        rpc::response_ids,
    ),
    check(
        "schema.agent_messages",
        Must,
        "schema.mdx; overview.mdx › Argument requirements",
        "Every request and notification the agent sends is a protocol method (or a `_` extension) with params that match the schema, naming sessions that exist, with absolute file paths.",
        transport::agent_messages,
    ),
    check(
        "transport.stdout_clean",
        Must,
        "transports.mdx › stdio",
        "The agent writes nothing to stdout but JSON-RPC messages, one per line, in UTF-8.",
        transport::stdout_clean,
    ),
];
