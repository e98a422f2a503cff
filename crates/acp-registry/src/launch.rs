//! The command that starts an agent: program, arguments, environment, working directory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::format::PackageDistribution;

/// What to spawn to start an agent: a plain description, for any spawner.
///
/// With the `runtime` feature it converts into acp-runtime's `AgentCommand`
/// (`AgentCommand::from(launch)`), which spawns and supervises it.
///
/// ```
/// use acp_registry::Launch;
///
/// let launch = Launch::new("/usr/bin/npx").args(["--yes", "demo-agent@1.2.0", "--acp"]);
/// assert_eq!(launch.to_string(), "/usr/bin/npx --yes demo-agent@1.2.0 --acp");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The executable, an absolute path once resolved.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables added to the inherited environment (the registry entry's `env`).
    pub env: Vec<(OsString, OsString)>,
    /// The working directory; `None` inherits the caller's (the registry does not set one).
    pub cwd: Option<PathBuf>,
}

impl Launch {
    /// Runs `program` with no arguments, nothing added to the environment, in the caller's
    /// working directory.
    pub fn new(program: impl Into<PathBuf>) -> Launch {
        Launch {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        }
    }

    /// Appends arguments.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<OsString>>) -> Launch {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds environment variables.
    pub fn envs(
        mut self,
        vars: impl IntoIterator<Item = (impl Into<OsString>, impl Into<OsString>)>,
    ) -> Launch {
        self.env
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// `npx --yes PACKAGE ARGS...`, or `npx --yes --package PACKAGE CMD ARGS...` with a `cmd`.
    /// `--yes`: npx would otherwise ask on stdin, which is the agent's protocol pipe.
    pub(crate) fn npx(npx: PathBuf, dist: &PackageDistribution) -> Launch {
        let mut launch = Launch::new(npx).args(["--yes"]);
        launch = match &dist.cmd {
            Some(cmd) => launch.args(["--package", &dist.package, cmd]),
            None => launch.args([&dist.package]),
        };
        launch.args(&dist.args).envs(&dist.env)
    }

    /// `uvx PACKAGE ARGS...`, or `uvx --from PACKAGE CMD ARGS...` with a `cmd`.
    pub(crate) fn uvx(uvx: PathBuf, dist: &PackageDistribution) -> Launch {
        let launch = Launch::new(uvx);
        let launch = match &dist.cmd {
            Some(cmd) => launch.args(["--from", &dist.package, cmd]),
            None => launch.args([&dist.package]),
        };
        launch.args(&dist.args).envs(&dist.env)
    }
}

impl std::fmt::Display for Launch {
    /// The command line, words joined by spaces (for messages, not for a shell).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.program.display())?;
        for arg in &self.args {
            write!(f, " {}", arg.to_string_lossy())?;
        }
        Ok(())
    }
}

#[cfg(feature = "runtime")]
impl From<Launch> for acp_runtime::process::AgentCommand {
    fn from(launch: Launch) -> Self {
        let mut command = acp_runtime::process::AgentCommand::new(launch.program).args(launch.args);
        for (name, value) in launch.env {
            command = command.env(name, value);
        }
        match launch.cwd {
            Some(dir) => command.cwd(dir),
            None => command,
        }
    }
}

/// `tool` found on `PATH` (`path`: its value), as an absolute path when `PATH` holds
/// absolute directories.
pub(crate) fn find_on_path(tool: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    let path = path?;
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .flat_map(|dir| executable_names(tool).map(move |name| dir.join(name)))
        .find(|candidate| is_executable(candidate))
}

fn executable_names(tool: &str) -> impl Iterator<Item = String> + '_ {
    let suffixes: &[&str] = if cfg!(windows) {
        &[".exe", ".cmd", ".bat", ""]
    } else {
        &[""]
    };
    suffixes.iter().map(move |suffix| format!("{tool}{suffix}"))
}

#[cfg(unix)]
pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
pub(crate) fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// The registry's `cmd` of a binary, as a path inside the extracted directory: relative,
/// without `..`; `./agent` and `agent` are the same.
pub(crate) fn command_in(dir: &Path, cmd: &str, id: &str) -> Result<PathBuf, Error> {
    let relative = crate::extract::safe_relative(cmd).map_err(|refusal| Error::InvalidEntry {
        id: id.to_owned(),
        reason: format!("its cmd `{cmd}` is unusable: {refusal}"),
    })?;
    if relative.as_os_str().is_empty() {
        return Err(Error::InvalidEntry {
            id: id.to_owned(),
            reason: "its cmd is empty".into(),
        });
    }
    Ok(dir.join(relative))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(package: &str, cmd: Option<&str>) -> PackageDistribution {
        serde_json::from_value(serde_json::json!({
            "package": package, "cmd": cmd, "args": ["--acp"], "env": {"A": "1"}
        }))
        .unwrap()
    }

    #[test]
    fn npx_and_uvx_command_lines() {
        let plain = Launch::npx("npx".into(), &dist("@s/a@1.0.0", None));
        assert_eq!(plain.to_string(), "npx --yes @s/a@1.0.0 --acp");
        assert_eq!(plain.env, [("A".into(), "1".into())]);
        let cmd = Launch::npx("npx".into(), &dist("@s/a@1.0.0", Some("a-acp")));
        assert_eq!(
            cmd.to_string(),
            "npx --yes --package @s/a@1.0.0 a-acp --acp"
        );
        let plain = Launch::uvx("uvx".into(), &dist("a==1.0.0", None));
        assert_eq!(plain.to_string(), "uvx a==1.0.0 --acp");
        let cmd = Launch::uvx("uvx".into(), &dist("a[acp]==1.0.0", Some("a-acp")));
        assert_eq!(cmd.to_string(), "uvx --from a[acp]==1.0.0 a-acp --acp");
    }

    #[test]
    fn binary_commands_stay_inside_their_directory() {
        let dir = Path::new("/cache/x");
        assert_eq!(command_in(dir, "./agent", "x").unwrap(), dir.join("agent"));
        assert_eq!(
            command_in(dir, "bin/agent", "x").unwrap(),
            dir.join("bin/agent")
        );
        assert!(command_in(dir, "../agent", "x").is_err());
        assert!(command_in(dir, "/usr/bin/agent", "x").is_err());
        assert!(command_in(dir, "./", "x").is_err());
    }
}
