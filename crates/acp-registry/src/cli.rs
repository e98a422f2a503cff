//! The registry's command-line options, defined once for `acp`, `acp-bridge serve` and
//! `acp-conductor agent` (feature `cli`).

use crate::error::Error;
use crate::launch::Launch;
use crate::resolver::{Loaded, Origin, Resolver, Source};

/// `--registry FILE|URL` and `--refresh`: where the registry comes from.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RegistryOptions {
    /// `--registry`: the registry's file or URL (default: [`crate::DEFAULT_REGISTRY_URL`]).
    #[arg(
        long,
        value_name = "FILE|URL",
        help = "Read the agent registry from FILE or URL [default: the published registry, \
                https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json, cached \
                for an hour]"
    )]
    pub registry: Option<String>,
    /// Fetch the registry again even if the cached copy is fresh
    #[arg(long)]
    pub refresh: bool,
}

/// `--agent ID` with [`RegistryOptions`]: an agent of the registry instead of a command.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RegistryArgs {
    /// Run agent ID of the ACP agent registry (`acp agents` lists them): downloaded and
    /// unpacked into the cache for a binary, run through npx or uvx for a package
    #[arg(id = "agent_id", long = "agent", value_name = "ID")]
    pub agent_id: Option<String>,
    /// Where the registry comes from.
    #[command(flatten)]
    pub options: RegistryOptions,
}

impl RegistryOptions {
    /// The resolver these options describe.
    pub fn resolver(&self) -> Resolver {
        let resolver = Resolver::new().refresh(self.refresh);
        match &self.registry {
            Some(source) => resolver.source(Source::parse(source)),
            None => resolver,
        }
    }

    /// Loads the registry; a stale copy's warning goes to `report` (one line, starting
    /// `warning: `).
    pub fn load(&self, report: impl Fn(&str)) -> Result<Loaded, Error> {
        let loaded = self.resolver().registry()?;
        if let Origin::Stale { age, error } = &loaded.origin {
            report(&format!("warning: {}", stale_warning(*age, error)));
        }
        Ok(loaded)
    }
}

impl RegistryArgs {
    /// With `--agent ID`: the command that starts it (after any download). What the user
    /// should know on the way goes to `report`, one line each: a stale registry
    /// (`warning: ...`), a download (`installing ID VERSION from URL`). Without: `None`.
    pub fn launch(
        &self,
        report: impl Fn(&str) + Clone + Send + Sync + 'static,
    ) -> Result<Option<Launch>, Error> {
        let Some(id) = &self.agent_id else {
            return Ok(None);
        };
        let loaded = self.options.load(report.clone())?;
        self.options
            .resolver()
            .on_download(move |agent, url| {
                report(&format!(
                    "installing {} {} from {url}",
                    agent.id, agent.version
                ))
            })
            .launch(&loaded.registry, id)
            .map(Some)
    }
}

/// The warning for a registry used from the cache because fetching it failed.
pub fn stale_warning(age: std::time::Duration, error: &Error) -> String {
    let minutes = age.as_secs() / 60;
    let age = match minutes {
        0 => "less than a minute".to_owned(),
        m if m < 120 => format!("{m} minutes"),
        m => format!("{} hours", m / 60),
    };
    format!("{error}; using the registry cached {age} ago")
}

#[cfg(test)]
mod tests {
    use clap::Args;

    /// The help states the default URL as a literal (clap wants one); it must be the constant.
    #[test]
    fn the_help_names_the_default_registry() {
        let command = super::RegistryOptions::augment_args(clap::Command::new("t"));
        let registry = command
            .get_arguments()
            .find(|arg| arg.get_id() == "registry")
            .unwrap();
        let help = registry.get_help().unwrap().to_string();
        assert!(help.contains(crate::DEFAULT_REGISTRY_URL), "{help}");
    }

    #[test]
    fn stale_warnings_say_how_old() {
        let error = crate::Error::Download {
            url: "https://r/registry.json".into(),
            reason: "the server answered HTTP 503".into(),
        };
        let warning = |secs| super::stale_warning(std::time::Duration::from_secs(secs), &error);
        assert_eq!(
            warning(30),
            "cannot download https://r/registry.json: the server answered HTTP 503; using the \
             registry cached less than a minute ago"
        );
        assert!(warning(600).ends_with("cached 10 minutes ago"));
        assert!(warning(3 * 3600).ends_with("cached 3 hours ago"));
    }
}
