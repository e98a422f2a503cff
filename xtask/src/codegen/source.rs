//! Where the schemas come from. `xtask/schema-pins.json` names each schema by its source (an
//! npm package, a URL such as a GitHub release asset, or the Rust crate
//! `agent-client-protocol-schema` at a version, from which the JSON is regenerated) and its
//! sha256. The files themselves are committed under `xtask/schemas/`, so that codegen, its
//! `--check` and the tests need neither the network nor Node.js; `cargo xtask codegen --refresh`
//! obtains them again from their sources ([`obtain`]).

pub mod obtain;

use super::json::Json;
use crate::project_root;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Where one pinned schema's bytes come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A file inside a published npm package.
    Npm {
        package: String,
        version: String,
        path: String,
    },
    /// A file regenerated from the crate at `version` (`path`: `v1/schema.json`,
    /// `v1/schema.unstable.json`, `v2/…`, or a `meta*.json`), the way upstream publishes it.
    Crate {
        name: String,
        version: String,
        path: String,
    },
    /// A file at a URL (e.g. a GitHub release asset).
    Url { url: String },
}

/// One pinned schema: its source and the sha256 of its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub name: String,
    pub source: Source,
    pub sha256: String,
}

pub fn pins_file() -> PathBuf {
    project_root().join("xtask/schema-pins.json")
}

/// The directory the pinned files are committed in.
pub fn schemas_dir() -> PathBuf {
    project_root().join("xtask/schemas")
}

pub fn load_pins() -> Result<Vec<Pin>, String> {
    let file = pins_file();
    let text =
        std::fs::read_to_string(&file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    parse_pins(&text, &file.display().to_string())
}

/// The pins in `text`, a pins file's contents; `origin` names it in errors.
pub fn parse_pins(text: &str, origin: &str) -> Result<Vec<Pin>, String> {
    let json: Json = serde_json::from_str(text).map_err(|e| format!("parsing {origin}: {e}"))?;
    let schemas = json
        .get("schemas")
        .and_then(Json::as_object)
        .ok_or_else(|| format!("{origin}: missing `schemas` object"))?;
    schemas
        .iter()
        .map(|(name, entry)| {
            let field = |key: &str| {
                entry
                    .get(key)
                    .and_then(Json::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{origin}: schema `{name}` lacks `{key}`"))
            };
            let source = if let Some(package) = entry.get("npm").and_then(Json::as_str) {
                Source::Npm {
                    package: package.to_owned(),
                    version: field("version")?,
                    path: field("path")?,
                }
            } else if let Some(crate_name) = entry.get("crate").and_then(Json::as_str) {
                Source::Crate {
                    name: crate_name.to_owned(),
                    version: field("version")?,
                    path: field("path")?,
                }
            } else if let Some(url) = entry.get("url").and_then(Json::as_str) {
                Source::Url {
                    url: url.to_owned(),
                }
            } else {
                return Err(format!(
                    "{origin}: schema `{name}` names no source (one of `npm`, `crate`, `url`)"
                ));
            };
            Ok(Pin {
                name: name.clone(),
                source,
                sha256: field("sha256")?,
            })
        })
        .collect()
}

pub fn pin(name: &str) -> Result<Pin, String> {
    load_pins()?
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| format!("no schema named `{name}` in {}", pins_file().display()))
}

impl Source {
    /// How generated files and reports name the source: `npm:package@version path`,
    /// `crate:name@version path` or `url:URL`.
    pub fn description(&self) -> String {
        match self {
            Source::Npm {
                package,
                version,
                path,
            } => format!("npm:{package}@{version} {path}"),
            Source::Crate {
                name,
                version,
                path,
            } => format!("crate:{name}@{version} {path}"),
            Source::Url { url } => format!("url:{url}"),
        }
    }

    /// The source a [`description`](Self::description) names. A description without a kind
    /// (`package@version path`, as files generated before URL and crate sources said) is npm.
    pub fn from_description(description: &str) -> Option<Source> {
        if let Some(url) = description.strip_prefix("url:") {
            return Some(Source::Url {
                url: url.to_owned(),
            });
        }
        let (kind, rest) = match description.split_once(':') {
            Some((kind @ ("npm" | "crate"), rest)) => (kind, rest),
            _ => ("npm", description),
        };
        let (name_version, path) = rest.split_once(' ')?;
        let (name, version) = name_version.rsplit_once('@')?;
        let (name, version, path) = (name.to_owned(), version.to_owned(), path.to_owned());
        Some(match kind {
            "crate" => Source::Crate {
                name,
                version,
                path,
            },
            _ => Source::Npm {
                package: name,
                version,
                path,
            },
        })
    }

    /// The committed file's path, relative to [`schemas_dir`]: derived from the source, so
    /// that two pins of one source share a file and a moved pin gets a new one.
    pub fn relative_file(&self) -> PathBuf {
        match self {
            Source::Npm {
                package,
                version,
                path,
            } => Path::new("npm")
                .join(format!(
                    "{}-{version}",
                    package.trim_start_matches('@').replace('/', "-")
                ))
                .join(path),
            Source::Crate {
                name,
                version,
                path,
            } => Path::new("crate")
                .join(format!("{name}-{version}"))
                .join(path),
            Source::Url { url } => {
                let without_scheme = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
                let safe: String = without_scheme
                    .chars()
                    .map(|c| match c {
                        'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' | '/' => c,
                        _ => '_',
                    })
                    .collect();
                Path::new("url").join(safe.replace("..", "_"))
            }
        }
    }

    /// The committed file.
    pub fn file(&self) -> PathBuf {
        schemas_dir().join(self.relative_file())
    }
}

impl Pin {
    pub fn description(&self) -> String {
        self.source.description()
    }
}

/// The text of the pinned schema, from its committed file, verified by its sha256. Needs
/// neither the network nor any tool: `cargo xtask codegen --refresh` is what obtains files.
pub fn fetch(pin: &Pin) -> Result<String, String> {
    let file = pin.source.file();
    let bytes = std::fs::read(&file).map_err(|e| {
        format!(
            "the `{}` schema ({}) should be committed as {}, but reading it failed: {e}. \
             `cargo xtask codegen --refresh` obtains it from its source",
            pin.name,
            pin.description(),
            file.display()
        )
    })?;
    let actual = sha256_hex(&bytes);
    if actual != pin.sha256 {
        return Err(format!(
            "sha256 mismatch for the `{}` schema ({}): {} pins {} but {} has {actual}. The \
             committed file was changed by hand, or the pin was edited without \
             `cargo xtask codegen --refresh`",
            pin.name,
            pin.description(),
            pins_file().display(),
            pin.sha256,
            file.display()
        ));
    }
    String::from_utf8(bytes).map_err(|e| format!("{} is not UTF-8: {e}", file.display()))
}

/// The text a source gives, with the file it is in: its committed file when one is there, else
/// obtained from the source into `target/acp-schema/previous/` (for the reports about a pin that
/// moved away from a schema no longer committed).
pub fn text_of(source: &Source) -> Result<(PathBuf, String), String> {
    let committed = source.file();
    if let Ok(text) = std::fs::read_to_string(&committed) {
        return Ok((committed, text));
    }
    let bytes = obtain::obtain(source)?;
    let file = project_root()
        .join("target/acp-schema/previous")
        .join(source.relative_file());
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    std::fs::write(&file, &bytes).map_err(|e| format!("writing {}: {e}", file.display()))?;
    let text = String::from_utf8(bytes)
        .map_err(|e| format!("{} is not UTF-8: {e}", source.description()))?;
    Ok((file, text))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
