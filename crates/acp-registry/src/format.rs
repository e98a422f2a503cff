//! The registry's JSON, read leniently: unknown fields are kept, a malformed entry is set
//! aside with its reason instead of failing the whole registry.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;

/// Fields this version does not know, kept as they were (a newer registry's additions, such
/// as an entry's `preview`).
pub type Extra = BTreeMap<String, Value>;

/// A registry: `{"version": "1.0.0", "agents": [...]}`.
///
/// ```
/// let registry = acp_registry::Registry::from_json(br#"{"version": "1.0.0", "agents": [
///     {"id": "demo", "name": "Demo", "version": "1.2.0", "description": "A demo agent",
///      "distribution": {"npx": {"package": "demo-agent@1.2.0", "args": ["--acp"]}}}
/// ]}"#, "inline").unwrap();
/// assert_eq!(registry.agent("demo").unwrap().version, "1.2.0");
/// assert!(registry.agent("dmeo").unwrap_err().to_string().contains("did you mean `demo`?"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Registry {
    /// The format's version (`1.0.0`).
    pub version: String,
    /// The agents that decoded, in the registry's order.
    pub agents: Vec<AgentEntry>,
    /// Entries that did not decode: their id (when it could be read) and the reason. They
    /// are left out of [`agents`](Self::agents); one bad entry never hides the others.
    pub skipped: Vec<SkippedEntry>,
    /// Top-level fields this version does not know (`extensions`...).
    pub extra: Extra,
}

/// An entry of the registry that did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedEntry {
    /// Its `id`, if it had a string one.
    pub id: Option<String>,
    /// What the decoder said.
    pub reason: String,
}

/// One agent of the registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEntry {
    /// Its id, `^[a-z][a-z0-9-]*$`.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// Its version (semantic versioning).
    pub version: String,
    /// A short description.
    #[serde(default)]
    pub description: String,
    /// Its source repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Its home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
    /// Its authors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    /// Its license (an SPDX id, or `proprietary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Its icon's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// How to obtain and start it.
    pub distribution: Distribution,
    /// Fields this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The ways an agent is distributed; at least one is present.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// Archives or bare executables, by platform (`linux-x86_64`...). Platforms this version
    /// does not know are kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub binary: BTreeMap<String, BinaryTarget>,
    /// An npm package, run with `npx`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npx: Option<PackageDistribution>,
    /// A PyPI package, run with `uvx`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uvx: Option<PackageDistribution>,
    /// Distribution kinds this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An npm or PyPI package.
///
/// The published schema has no `cmd` here, while launchers and some entries use one (the
/// executable to run when the package installs several, or one not named after it); it is
/// accepted and honoured: `npx --package PACKAGE CMD`, `uvx --from PACKAGE CMD`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackageDistribution {
    /// The package, with its version: `@scope/name@1.2.3`, `name==1.2.3`.
    pub package: String,
    /// The executable of the package to run, when it is not the package's default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmd: Option<String>,
    /// Arguments after the executable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables to set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Fields this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A downloadable archive (or bare executable) for one platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinaryTarget {
    /// Its URL: `.zip`, `.tar.gz`, `.tgz`, `.tar.bz2`, `.tbz2`, or a bare executable.
    pub archive: String,
    /// The executable to run, relative to the extracted directory (`./agent`, `bin/agent`).
    pub cmd: String,
    /// Arguments after the executable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables to set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The archive's SHA-256, hex; checked when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Fields this version does not know.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Registry {
    /// Decodes a registry. `source_name` (a path or URL) only labels errors.
    ///
    /// Fails only when the document is not a registry at all: not JSON, not an object, or
    /// without an `agents` list. Entries that do not decode go to
    /// [`skipped`](Self::skipped).
    pub fn from_json(bytes: &[u8], source_name: &str) -> Result<Registry, Error> {
        let invalid = |reason: String| Error::InvalidRegistry {
            source_name: source_name.to_owned(),
            reason,
        };
        let Value::Object(mut top) =
            serde_json::from_slice::<Value>(bytes).map_err(|e| invalid(e.to_string()))?
        else {
            return Err(invalid("the document is not a JSON object".into()));
        };
        let Some(Value::Array(entries)) = top.remove("agents") else {
            return Err(invalid("it has no `agents` list".into()));
        };
        let version = match top.remove("version") {
            Some(Value::String(version)) => version,
            _ => String::new(),
        };
        let mut registry = Registry {
            version,
            extra: top.into_iter().collect(),
            ..Registry::default()
        };
        for entry in entries {
            let id = entry.get("id").and_then(Value::as_str).map(str::to_owned);
            match serde_json::from_value::<AgentEntry>(entry) {
                Ok(agent) => match agent.check() {
                    Ok(()) => registry.agents.push(agent),
                    Err(reason) => registry.skipped.push(SkippedEntry { id, reason }),
                },
                Err(error) => registry.skipped.push(SkippedEntry {
                    id,
                    reason: error.to_string(),
                }),
            }
        }
        Ok(registry)
    }

    /// The agent with this id, or [`Error::UnknownAgent`] naming the nearest ids.
    pub fn agent(&self, id: &str) -> Result<&AgentEntry, Error> {
        if let Some(agent) = self.agents.iter().find(|agent| agent.id == id) {
            return Ok(agent);
        }
        let mut scored: Vec<(f64, &str)> = self
            .agents
            .iter()
            .map(|agent| {
                let score = strsim::jaro_winkler(id, &agent.id).max(
                    if agent.id.contains(id) || id.contains(&agent.id) {
                        0.9
                    } else {
                        0.0
                    },
                );
                (score, agent.id.as_str())
            })
            .filter(|(score, _)| *score >= 0.7)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        Err(Error::UnknownAgent {
            id: id.to_owned(),
            nearest: scored
                .into_iter()
                .take(3)
                .map(|(_, id)| id.to_owned())
                .collect(),
        })
    }
}

impl AgentEntry {
    /// The checks serde's shapes do not express: an id of the registry's form, and at least
    /// one distribution.
    fn check(&self) -> Result<(), String> {
        let mut chars = self.id.chars();
        let well_formed = chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !well_formed {
            return Err(format!(
                "id `{}` is not of the form [a-z][a-z0-9-]*",
                self.id
            ));
        }
        let d = &self.distribution;
        if d.binary.is_empty() && d.npx.is_none() && d.uvx.is_none() && d.extra.is_empty() {
            return Err(format!("agent `{}` has no distribution", self.id));
        }
        Ok(())
    }

    /// What the agent offers, for lists and errors: `binary (linux-x86_64, ...)`, `npx`,
    /// `uvx`, and kinds this version does not know by their names.
    pub fn offered(&self) -> Vec<String> {
        let d = &self.distribution;
        let mut offered = Vec::new();
        if !d.binary.is_empty() {
            let platforms: Vec<&str> = d.binary.keys().map(String::as_str).collect();
            offered.push(format!("binary ({})", platforms.join(", ")));
        }
        if d.npx.is_some() {
            offered.push("npx".to_owned());
        }
        if d.uvx.is_some() {
            offered.push("uvx".to_owned());
        }
        offered.extend(d.extra.keys().cloned());
        offered
    }
}
