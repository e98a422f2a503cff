//! The broken agent's misbehaviours by name: `--bug NAME` selects one (`hostile.rs` has
//! those that attack the checker itself).

/// Every misbehaviour, with what it does.
pub(super) const BUGS: &[(&str, &str)] = &[
    ("init-error", "answers `initialize` with an error"),
    (
        "old-version",
        "answers protocol version 0 to a version 1 `initialize`",
    ),
    (
        "echo-version",
        "echoes whatever protocol version the client asks for",
    ),
    (
        "bad-caps",
        "advertises `loadSession: \"yes\"` (a string, not a boolean)",
    ),
    ("no-agent-info", "leaves `agentInfo` out"),
    ("session-new-error", "refuses every `session/new`"),
    (
        "same-session-id",
        "answers every `session/new` with the same session id",
    ),
    ("accept-relative-cwd", "accepts a relative `cwd`"),
    (
        "unknown-session-accepted",
        "runs prompts for sessions it never created",
    ),
    (
        "no-replay",
        "answers `session/load` without replaying the history",
    ),
    (
        "replay-after-load",
        "replays the history after answering `session/load`",
    ),
    (
        "bad-current-mode",
        "names a current mode that is not among the available ones",
    ),
    ("set-mode-fails", "refuses `session/set_mode`"),
    (
        "accept-unknown-mode",
        "accepts `session/set_mode` with an unknown mode",
    ),
    (
        "bad-config",
        "gives a select option a current value that is not one of its values",
    ),
    (
        "boolean-config",
        "sends a boolean config option to clients that did not ask for them",
    ),
    ("set-config-fails", "refuses `session/set_config_option`"),
    (
        "list-ignores-cwd",
        "lists every session whatever `cwd` `session/list` filters by",
    ),
    (
        "resume-replays",
        "replays the history before answering `session/resume`",
    ),
    ("close-fails", "refuses `session/close`"),
    (
        "close-keeps-turn",
        "closes a session but lets its running turn go on to `end_turn`",
    ),
    (
        "delete-keeps-listing",
        "answers `session/delete` but still lists the session",
    ),
    (
        "delete-unknown-error",
        "refuses to delete a session that never existed",
    ),
    ("logout-fails", "advertises `logout` but answers it -32601"),
    ("bad-stop-reason", "ends turns with stop reason `done`"),
    (
        "late-update",
        "sends an update after the `session/prompt` response",
    ),
    ("cancel-error", "answers a cancelled turn with an error"),
    ("cancel-ignored", "ends a cancelled turn with `end_turn`"),
    (
        "cancel-refused",
        "pauses its turns after the first chunk; refuses `session/cancel` meanwhile with an error object without `id`, and ends the turn with `end_turn`",
    ),
    (
        "ignore-caps",
        "reads files through the client even when it did not advertise `fs`",
    ),
    (
        "elicit-unadvertised",
        "asks the user through `elicitation/create` though the client advertised no elicitation",
    ),
    (
        "reject-resource-link",
        "refuses prompts with resource links",
    ),
    (
        "reject-images",
        "advertises images but refuses prompts with one",
    ),
    (
        "reject-audio",
        "advertises audio but refuses prompts with it",
    ),
    (
        "reject-resource",
        "advertises embedded context but refuses prompts with it",
    ),
    (
        "wrong-unknown-code",
        "answers unknown methods with -32603 instead of -32601",
    ),
    (
        "ext-method-result",
        "answers unknown `_` requests with a result",
    ),
    (
        "notification-reply",
        "answers every notification with an error",
    ),
    (
        "notification-reply-idless",
        "answers every notification with an error object without `id`",
    ),
    (
        "crash-on-ext-notification",
        "exits on an unknown `_` notification",
    ),
    (
        "no-parse-error",
        "ignores lines that are not JSON instead of answering -32700",
    ),
    (
        "parse-error-idless",
        "answers lines that are not JSON with -32700 in an error object without `id`",
    ),
    ("crash-on-malformed", "exits on a line that is not JSON"),
    ("invalid-request-silent", "does not answer invalid requests"),
    (
        "invalid-params-accepted",
        "accepts `session/new` params of the wrong shape",
    ),
    (
        "system-prompt-any-mode",
        "advertises an `append`-only system prompt but takes one in any mode",
    ),
    (
        "system-prompt-refused",
        "advertises a system prompt but refuses `session/new` with one",
    ),
    (
        "plan-update-unadvertised",
        "sends `plan_update` to a client that did not advertise `plan`",
    ),
    (
        "reply-stray-response",
        "answers responses to requests it never made",
    ),
    (
        "cancel-request-unanswered",
        "drops a request cancelled with `$/cancel_request` without answering",
    ),
    ("no-exit", "keeps running after its stdin is closed"),
    ("duplicate-response", "answers `session/new` twice"),
    ("bad-update", "sends a message chunk without its text"),
    ("stdout-log", "prints a log line on stdout"),
];
