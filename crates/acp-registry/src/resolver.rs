//! From a registry source and an agent id to the command that starts it: loading (file, URL,
//! cache, stale cache), choosing the distribution, installing a binary.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::cache::Cache;
use crate::error::{Error, Refusal};
use crate::extract::{self, ExtractLimits};
use crate::format::{AgentEntry, BinaryTarget, Registry};
use crate::http::{self, HttpOptions};
use crate::launch::{self, Launch};
use crate::select::{Choice, Method, Platform};

/// Where the registry is published (the registry repository's README): what
/// [`Resolver::new`] reads.
pub const DEFAULT_REGISTRY_URL: &str =
    "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json";

/// How long a fetched registry is used before it is fetched again, by default: one hour.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(60 * 60);

/// Where a registry is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Fetched (`https://`, or `http://` on loopback), cached, refreshed after
    /// [`Resolver::max_age`].
    Url(String),
    /// Read from a local file, never cached.
    File(PathBuf),
}

impl Source {
    /// `http://` and `https://` are URLs; anything else is a file path.
    pub fn parse(text: &str) -> Source {
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("https://") || lower.starts_with("http://") {
            Source::Url(text.to_owned())
        } else {
            Source::File(text.into())
        }
    }
}

/// A registry, and where it came from.
#[derive(Debug)]
pub struct Loaded {
    /// The registry.
    pub registry: Registry,
    /// Where it came from.
    pub origin: Origin,
}

/// Where a [`Loaded`] registry came from.
#[derive(Debug)]
#[non_exhaustive]
pub enum Origin {
    /// A local file.
    File(PathBuf),
    /// Fetched just now.
    Fetched,
    /// The cache, fresh enough not to be fetched again.
    Cached {
        /// How old it is.
        age: Duration,
    },
    /// The cache, because fetching failed: show `error` as a warning.
    Stale {
        /// How old it is.
        age: Duration,
        /// Why it could not be fetched.
        error: Error,
    },
}

/// Resolves agent ids to commands. Blocking: it may download and unpack (call it from a
/// thread, or `smol::unblock`, in async code).
///
/// ```no_run
/// use acp_registry::Resolver;
///
/// let resolver = Resolver::new();
/// let loaded = resolver.registry()?;
/// let launch = resolver.launch(&loaded.registry, "gemini")?;
/// println!("{launch}");
/// # Ok::<(), acp_registry::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Resolver {
    source: Source,
    cache: Option<Cache>,
    max_age: Duration,
    refresh: bool,
    http: HttpOptions,
    extract: ExtractLimits,
    order: Vec<Method>,
    platform: Option<Platform>,
    search_path: Option<OsString>,
    on_download: Option<DownloadHook>,
}

/// Called before an archive is downloaded: the agent entry and the URL.
type DownloadFn = dyn Fn(&AgentEntry, &str) + Send + Sync;

#[derive(Clone)]
struct DownloadHook(Arc<DownloadFn>);

impl std::fmt::Debug for DownloadHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DownloadHook")
    }
}

impl Default for Resolver {
    fn default() -> Self {
        Resolver::new()
    }
}

impl Resolver {
    /// The published registry, the user's cache directory ([`Cache::default_dir`]), a
    /// one-hour refresh, this platform, and [`Method::DEFAULT_ORDER`].
    pub fn new() -> Resolver {
        Resolver {
            source: Source::Url(DEFAULT_REGISTRY_URL.to_owned()),
            cache: Cache::default_dir().map(Cache::new),
            max_age: DEFAULT_MAX_AGE,
            refresh: false,
            http: HttpOptions::default(),
            extract: ExtractLimits::default(),
            order: Method::DEFAULT_ORDER.to_vec(),
            platform: Platform::current(),
            search_path: std::env::var_os("PATH"),
            on_download: None,
        }
    }

    /// Calls `hook` with the agent and the archive's URL before a binary is downloaded (not
    /// when it is already installed): a download may take a while, and a user should know why.
    pub fn on_download(
        mut self,
        hook: impl Fn(&AgentEntry, &str) + Send + Sync + 'static,
    ) -> Resolver {
        self.on_download = Some(DownloadHook(Arc::new(hook)));
        self
    }

    /// Reads the registry from `source` instead.
    pub fn source(mut self, source: Source) -> Resolver {
        self.source = source;
        self
    }

    /// Caches in `dir` instead.
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Resolver {
        self.cache = Some(Cache::new(dir));
        self
    }

    /// The cache it installs into and reads registries from, if there is one.
    pub fn cache(&self) -> Option<&Cache> {
        self.cache.as_ref()
    }

    /// Fetches the registry again once the cached copy is older than `age`.
    pub fn max_age(mut self, age: Duration) -> Resolver {
        self.max_age = age;
        self
    }

    /// Fetches the registry even if the cached copy is fresh (falling back to it, with a
    /// warning, if the fetch fails).
    pub fn refresh(mut self, refresh: bool) -> Resolver {
        self.refresh = refresh;
        self
    }

    /// Download limits and trust.
    pub fn http(mut self, options: HttpOptions) -> Resolver {
        self.http = options;
        self
    }

    /// Extraction limits.
    pub fn extract_limits(mut self, limits: ExtractLimits) -> Resolver {
        self.extract = limits;
        self
    }

    /// Tries the distributions in this order (those not listed are never used).
    pub fn order(mut self, order: impl IntoIterator<Item = Method>) -> Resolver {
        self.order = order.into_iter().collect();
        self
    }

    /// Picks binaries for `platform` instead of this one.
    pub fn platform(mut self, platform: Option<Platform>) -> Resolver {
        self.platform = platform;
        self
    }

    /// Looks `npx` and `uvx` up in this `PATH` value instead of this process's.
    pub fn search_path(mut self, path: impl Into<OsString>) -> Resolver {
        self.search_path = Some(path.into());
        self
    }

    /// Loads the registry: from the file, or from the cache while it is younger than
    /// [`max_age`](Self::max_age) (and no [`refresh`](Self::refresh) was asked), else fetched
    /// and cached; when fetching fails and a cached copy exists, that copy, as
    /// [`Origin::Stale`].
    pub fn registry(&self) -> Result<Loaded, Error> {
        let url = match &self.source {
            Source::File(path) => {
                let bytes = read_capped(path, self.http.max_registry_bytes)?;
                return Ok(Loaded {
                    registry: Registry::from_json(&bytes, &path.display().to_string())?,
                    origin: Origin::File(path.clone()),
                });
            }
            Source::Url(url) => url,
        };
        let cached = self.cache.as_ref().and_then(|c| c.read_registry(url));
        if let Some((bytes, age)) = &cached
            && !self.refresh
            && *age < self.max_age
            && let Ok(registry) = Registry::from_json(bytes, url)
        {
            let age = *age;
            return Ok(Loaded {
                registry,
                origin: Origin::Cached { age },
            });
        }
        match self.fetch_registry(url) {
            Ok(registry) => Ok(Loaded {
                registry,
                origin: Origin::Fetched,
            }),
            Err(error) => {
                let Some((bytes, age)) = cached else {
                    return Err(error);
                };
                Ok(Loaded {
                    registry: Registry::from_json(&bytes, url)?,
                    origin: Origin::Stale { age, error },
                })
            }
        }
    }

    /// Fetches and decodes the registry, then caches it: a document that is not a registry
    /// never replaces a good cached copy.
    fn fetch_registry(&self, url: &str) -> Result<Registry, Error> {
        let mut bytes = Vec::new();
        http::fetch(url, &self.http, self.http.max_registry_bytes, &mut bytes)?;
        let registry = Registry::from_json(&bytes, url)?;
        if let Some(cache) = &self.cache {
            cache.write_registry(url, &bytes)?;
        }
        Ok(registry)
    }

    /// The command that starts agent `id`: the first of its distributions, in
    /// [`order`](Self::order), that fits this platform and whose launcher is on `PATH`; a
    /// binary is downloaded, checked and unpacked into the cache first (once per version).
    pub fn launch(&self, registry: &Registry, id: &str) -> Result<Launch, Error> {
        let agent = registry.agent(id)?;
        let candidates = agent.candidates(self.platform, &self.order);
        if candidates.is_empty() {
            return Err(Error::NoDistribution {
                id: id.to_owned(),
                platform: Platform::describe(self.platform),
                offered: agent.offered(),
            });
        }
        let mut missing = None;
        for choice in candidates {
            let tool = match choice {
                Choice::Binary { platform, target } => {
                    return self.install(agent, platform, target);
                }
                Choice::Npx(_) => "npx",
                Choice::Uvx(_) => "uvx",
            };
            match launch::find_on_path(tool, self.search_path.as_deref()) {
                Some(program) => {
                    return Ok(match choice {
                        Choice::Npx(dist) => Launch::npx(program, dist),
                        Choice::Uvx(dist) => Launch::uvx(program, dist),
                        Choice::Binary { .. } => unreachable!("returned above"),
                    });
                }
                None => {
                    missing.get_or_insert(Error::ToolMissing {
                        id: id.to_owned(),
                        tool,
                        hint: match tool {
                            "npx" => "install Node.js, whose npm brings npx (https://nodejs.org)",
                            _ => "install uv, which brings uvx (https://docs.astral.sh/uv/)",
                        },
                    });
                }
            }
        }
        Err(missing.expect("every candidate left returned or noted a missing tool"))
    }

    /// Downloads, checks and unpacks a binary distribution into the cache (unless it is
    /// there), and returns the command inside it.
    fn install(
        &self,
        agent: &AgentEntry,
        platform: Platform,
        target: &BinaryTarget,
    ) -> Result<Launch, Error> {
        let cache = self.cache.as_ref().ok_or_else(|| Error::Io {
            path: PathBuf::from("(cache)"),
            source: io::Error::new(
                io::ErrorKind::NotFound,
                "no cache directory to install into: set ACP_REGISTRY_CACHE or HOME",
            ),
        })?;
        let url = &target.archive;
        let refused = |reason: Refusal| Error::ArchiveRefused {
            url: url.clone(),
            reason,
        };
        let format = extract::format_of(url).map_err(refused)?;
        let relative_cmd = launch::command_in(Path::new(""), &target.cmd, &agent.id)?;
        let dir = cache.agent_dir(&agent.id, &agent.version, platform.as_str(), |scratch| {
            if let Some(hook) = &self.on_download {
                (hook.0)(agent, url);
            }
            let archive = scratch.join("download");
            let digest = self.download(url, &archive)?;
            if let Some(expected) = &target.sha256 {
                let expected = expected.to_ascii_lowercase();
                if expected != digest {
                    return Err(Error::ChecksumMismatch {
                        url: url.clone(),
                        expected,
                        actual: digest,
                    });
                }
            }
            let root = scratch.join("root");
            std::fs::create_dir(&root).map_err(Error::io(&root))?;
            extract::extract(&archive, format, &root, &relative_cmd, self.extract)
                .map_err(refused)?;
            make_runnable(&root.join(&relative_cmd))
                .map_err(|_| refused(Refusal::MissingCommand(target.cmd.clone())))?;
            Ok(root)
        })?;
        Ok(Launch::new(dir.join(&relative_cmd))
            .args(&target.args)
            .envs(&target.env))
    }

    /// Downloads `url` into `path`; returns its sha256, hex.
    fn download(&self, url: &str, path: &Path) -> Result<String, Error> {
        let file = File::create(path).map_err(Error::io(path))?;
        let mut sink = HashingWriter {
            file,
            hasher: Sha256::new(),
        };
        http::fetch(url, &self.http, self.http.max_archive_bytes, &mut sink)?;
        sink.file.sync_all().map_err(Error::io(path))?;
        Ok(sink
            .hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    }
}

struct HashingWriter {
    file: File,
    hasher: Sha256,
}

impl Write for HashingWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let n = self.file.write(bytes)?;
        self.hasher.update(&bytes[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// The unpacked command exists (following links, all inside) and is a file; on Unix it is
/// made executable if the archive did not say so (zip files made on Windows).
fn make_runnable(path: &Path) -> io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "not a file"));
    }
    #[cfg(unix)]
    if !launch::is_executable(path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let file = File::open(path).map_err(Error::io(path))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(Error::io(path))?;
    if bytes.len() as u64 > max {
        return Err(Error::InvalidRegistry {
            source_name: path.display().to_string(),
            reason: format!("larger than {max} bytes"),
        });
    }
    Ok(bytes)
}
