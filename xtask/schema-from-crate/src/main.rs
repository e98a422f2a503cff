//! Writes ACP's JSON schema and method table, as upstream publishes them, from the schema crate's
//! `schemars` derives: `acp-schema-from-crate OUT_DIR` writes `schema.json` and `meta.json`
//! for the features it was built with (see Cargo.toml.in). Run by `cargo xtask codegen --refresh`.

#[cfg(not(feature = "v2"))]
use agent_client_protocol_schema::v1 as acp;
#[cfg(feature = "v2")]
use agent_client_protocol_schema::v2 as acp;

use acp::{
    AgentNotification, AgentRequest, AgentResponse, ClientNotification, ClientRequest,
    ClientResponse, JsonRpcMessage, Notification, ProtocolLevelNotification, Request, Response,
};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::{RemoveRefSiblings, ReplaceBoolSchemas};

// The three kinds of message one side sends, a schema `anyOf` titled by kind. (Plain comments:
// a doc comment here would become a description in the schema.)
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
#[allow(dead_code, clippy::large_enum_variant)]
enum Outgoing<Req, Res, Note> {
    Request(Request<Req>),
    Response(Response<Res>),
    Notification(Notification<Note>),
}

// The root: every message on an ACP connection, by who sends it.
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(title = "Agent Client Protocol")]
#[allow(dead_code, clippy::large_enum_variant)]
enum AcpTypes {
    Agent(JsonRpcMessage<Outgoing<AgentRequest, AgentResponse, AgentNotification>>),
    Client(JsonRpcMessage<Outgoing<ClientRequest, ClientResponse, ClientNotification>>),
    ProtocolLevel(JsonRpcMessage<Notification<ProtocolLevelNotification>>),
    #[cfg(any(feature = "proxy", feature = "unstable"))]
    Proxy(JsonRpcMessage<Outgoing<acp::ProxyRequest, acp::ProxyResponse, acp::ProxyNotification>>),
}

fn main() {
    let out = std::env::args_os().nth(1).expect("usage: acp-schema-from-crate OUT_DIR");
    let out = std::path::PathBuf::from(out);
    std::fs::create_dir_all(&out).expect("creating the output directory");

    let mut settings = SchemaSettings::draft2020_12();
    settings.untagged_enum_variant_titles = true;
    let mut bool_schemas = ReplaceBoolSchemas::default();
    bool_schemas.skip_additional_properties = true;
    let generator = settings
        .with_transform(RemoveRefSiblings::default())
        .with_transform(bool_schemas)
        .into_generator();
    let mut schema = serde_json::to_value(generator.into_root_schema_for::<AcpTypes>())
        .expect("a schema is JSON");
    let version = if cfg!(feature = "v2") { 2 } else { 1 };
    if cfg!(feature = "unstable") {
        // Upstream publishes the unstable schema with its documentation links pointing at the
        // draft pages of the protocol's site.
        let stable_docs = format!("https://agentclientprotocol.com/protocol/v{version}/");
        let draft_docs = format!("{stable_docs}draft/");
        replace_in_strings(&mut schema, &stable_docs, &draft_docs);
    }

    let meta = serde_json::json!({
        "version": version,
        "agentMethods": acp::AGENT_METHOD_NAMES,
        "clientMethods": acp::CLIENT_METHOD_NAMES,
        "protocolMethods": acp::PROTOCOL_LEVEL_METHOD_NAMES,
    });
    for (name, value) in [("schema.json", &schema), ("meta.json", &meta)] {
        let text = serde_json::to_string_pretty(value).expect("JSON");
        std::fs::write(out.join(name), text).expect("writing the output");
    }
}

fn replace_in_strings(value: &mut serde_json::Value, from: &str, to: &str) {
    match value {
        serde_json::Value::String(text) if text.contains(from) => *text = text.replace(from, to),
        serde_json::Value::Array(items) => items
            .iter_mut()
            .for_each(|item| replace_in_strings(item, from, to)),
        serde_json::Value::Object(members) => members
            .values_mut()
            .for_each(|member| replace_in_strings(member, from, to)),
        _ => {}
    }
}
