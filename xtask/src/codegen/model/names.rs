//! Where a schema definition lands in Rust: its name, and whether it lives in the crate root or
//! in the `rpc` module. Both tables exist so that `use acp_types::*` brings in no name that
//! collides with `acp_jsonrpc` or `acp_runtime`.

/// Schema names whose Rust name differs, with the reason in each row's comment.
const RENAMES: &[(&str, &str)] = &[
    // The `ToolCallContent::Terminal` payload: a terminal created with `terminal/create`,
    // embedded in a tool call by its id. `Terminal` is the runtime's handle to a live terminal;
    // this is only a reference to one inside content, hence "embedded".
    ("Terminal", "EmbeddedTerminal"),
];

/// JSON-RPC envelope types: the schema defines them for its request/response wrappers, and
/// `acp_jsonrpc` has its own of each. They go to `acp_types::rpc`, out of the glob export.
pub const RPC_MODULE: &[&str] = &["Error", "ErrorCode", "RequestId"];

/// The Rust name of the schema definition `schema_name`.
pub fn rust_name(schema_name: &str) -> String {
    RENAMES
        .iter()
        .find(|(from, _)| *from == schema_name)
        .map_or(schema_name, |(_, to)| to)
        .to_owned()
}

/// Whether the item named `rust_name` is emitted into the `rpc` module.
pub fn in_rpc_module(rust_name: &str) -> bool {
    RPC_MODULE.contains(&rust_name)
}
