//! The permission-policy proxy: answers the agent's `session/request_permission` by the tool
//! call's kind (allow the kinds given, reject others given) and forwards the rest to the
//! client, so that an editor only asks about what the policy leaves open.

use std::collections::HashSet;
use std::sync::Arc;

use acp_runtime::prelude::*;
use acp_runtime::proxy::{Proxy, ProxyContext};

/// Which tool kinds are allowed or rejected without asking.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Answered with the request's `allow_once` option.
    pub allow: HashSet<ToolKind>,
    /// Answered with the request's `reject_once` option.
    pub reject: HashSet<ToolKind>,
}

impl Policy {
    /// Reads a kind as the protocol spells it (`read`, `edit`, `execute`, `switch_mode`...).
    ///
    /// ```
    /// use acp_conductor::policy::Policy;
    /// use acp_runtime::prelude::ToolKind;
    /// assert_eq!(Policy::kind("execute").unwrap(), ToolKind::Execute);
    /// assert!(Policy::kind("typo").is_err());
    /// ```
    pub fn kind(name: &str) -> Result<ToolKind, String> {
        match serde_json::from_value::<ToolKind>(name.into()) {
            Ok(ToolKind::Unknown(_)) | Err(_) => Err(format!("unknown tool kind `{name}`")),
            Ok(kind) => Ok(kind),
        }
    }

    /// The option this policy picks for `request`, if it decides it.
    pub fn decide(&self, request: &RequestPermissionRequest) -> Option<PermissionOptionId> {
        let kind = request.tool_call.kind.as_ref()?;
        let wanted = if self.allow.contains(kind) {
            PermissionOptionKind::AllowOnce
        } else if self.reject.contains(kind) {
            PermissionOptionKind::RejectOnce
        } else {
            return None;
        };
        request
            .options
            .iter()
            .find(|option| option.kind == wanted)
            .map(|option| option.option_id.clone())
    }

    /// The proxy.
    pub fn proxy(self) -> Proxy {
        let policy = Arc::new(self);
        Proxy::builder()
            .on_agent_request(move |cx: ProxyContext, request: RequestPermissionRequest| {
                let policy = policy.clone();
                async move {
                    match policy.decide(&request) {
                        Some(option) => Ok(RequestPermissionResponse::new(
                            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                                option,
                            )),
                        )),
                        None => cx.predecessor().request(&request).await,
                    }
                }
            })
            .build()
    }
}
