//! Platforms as the registry names them, and which of an agent's distributions to use here.

use std::fmt;
use std::str::FromStr;

use crate::format::{AgentEntry, BinaryTarget, PackageDistribution};

/// A platform of the registry's `binary` distributions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// `darwin-aarch64`: macOS on Apple silicon.
    DarwinAarch64,
    /// `darwin-x86_64`: macOS on Intel.
    DarwinX86_64,
    /// `linux-aarch64`.
    LinuxAarch64,
    /// `linux-x86_64`.
    LinuxX86_64,
    /// `windows-aarch64`.
    WindowsAarch64,
    /// `windows-x86_64`.
    WindowsX86_64,
}

impl Platform {
    /// Every platform, in the registry's order.
    pub const ALL: [Platform; 6] = [
        Platform::DarwinAarch64,
        Platform::DarwinX86_64,
        Platform::LinuxAarch64,
        Platform::LinuxX86_64,
        Platform::WindowsAarch64,
        Platform::WindowsX86_64,
    ];

    /// The platform this program was built for, if the registry names it.
    pub fn current() -> Option<Platform> {
        match (std::env::consts::OS, std::env::consts::ARCH) {
            ("macos", "aarch64") => Some(Platform::DarwinAarch64),
            ("macos", "x86_64") => Some(Platform::DarwinX86_64),
            ("linux", "aarch64") => Some(Platform::LinuxAarch64),
            ("linux", "x86_64") => Some(Platform::LinuxX86_64),
            ("windows", "aarch64") => Some(Platform::WindowsAarch64),
            ("windows", "x86_64") => Some(Platform::WindowsX86_64),
            _ => None,
        }
    }

    /// The registry's name: `linux-x86_64`...
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::DarwinAarch64 => "darwin-aarch64",
            Platform::DarwinX86_64 => "darwin-x86_64",
            Platform::LinuxAarch64 => "linux-aarch64",
            Platform::LinuxX86_64 => "linux-x86_64",
            Platform::WindowsAarch64 => "windows-aarch64",
            Platform::WindowsX86_64 => "windows-x86_64",
        }
    }

    /// The name of this platform's current operating system and architecture, for errors
    /// when the registry does not know it.
    pub(crate) fn describe(platform: Option<Platform>) -> String {
        match platform {
            Some(platform) => platform.as_str().to_owned(),
            None => format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Platform {
    type Err = String;

    fn from_str(text: &str) -> Result<Platform, String> {
        Platform::ALL
            .into_iter()
            .find(|p| p.as_str() == text)
            .ok_or_else(|| format!("unknown platform `{text}`"))
    }
}

/// A kind of distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// A download for this platform, unpacked into the cache.
    Binary,
    /// An npm package run by `npx`.
    Npx,
    /// A PyPI package run by `uvx`.
    Uvx,
}

impl Method {
    /// The order [`crate::Resolver`] tries them in by default: a binary first (no launcher
    /// needed, and the registry pins its exact bytes), then `npx`, then `uvx`. A method whose
    /// launcher is missing from `PATH` is passed over for the next.
    pub const DEFAULT_ORDER: [Method; 3] = [Method::Binary, Method::Npx, Method::Uvx];
}

/// One distribution of an agent that can run here.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Choice<'a> {
    /// The binary for `platform`.
    Binary {
        /// This platform.
        platform: Platform,
        /// Its download.
        target: &'a BinaryTarget,
    },
    /// The npm package.
    Npx(&'a PackageDistribution),
    /// The PyPI package.
    Uvx(&'a PackageDistribution),
}

impl Choice<'_> {
    /// The kind of distribution.
    pub fn method(&self) -> Method {
        match self {
            Choice::Binary { .. } => Method::Binary,
            Choice::Npx(_) => Method::Npx,
            Choice::Uvx(_) => Method::Uvx,
        }
    }
}

impl AgentEntry {
    /// The distributions that fit `platform` (`None`: one the registry does not name, where
    /// only `npx` and `uvx` can fit), in `order`.
    pub fn candidates(&self, platform: Option<Platform>, order: &[Method]) -> Vec<Choice<'_>> {
        let d = &self.distribution;
        order
            .iter()
            .filter_map(|method| match method {
                Method::Binary => {
                    let platform = platform?;
                    let target = d.binary.get(platform.as_str())?;
                    Some(Choice::Binary { platform, target })
                }
                Method::Npx => d.npx.as_ref().map(Choice::Npx),
                Method::Uvx => d.uvx.as_ref().map(Choice::Uvx),
            })
            .collect()
    }
}
