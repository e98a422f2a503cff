//! Verdicts, the report they make up, and its two renderings: a table for people and JSON for CI.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Map, Value, json};

/// Evidence lines shown under a failed check in the table (the JSON report has them all).
const MAX_EVIDENCE_LINES: usize = 10;

/// How strongly the specification words the rule a check verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// An absolute requirement; failing it makes the run fail.
    Must,
    /// A recommendation; failing it is reported but does not fail the run.
    Should,
    /// Optional behaviour; reported for information.
    May,
}

impl Level {
    /// `MUST`, `SHOULD` or `MAY`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
            Level::May => "MAY",
        }
    }
}

/// The outcome of one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The agent did what the rule asks.
    Pass,
    /// The agent broke the rule; `evidence` holds the offending messages.
    Fail {
        /// What went wrong, in one sentence.
        reason: String,
        /// The offending lines (`<` received from the agent, `>` sent to it) or other facts.
        evidence: Vec<String>,
    },
    /// Not applicable: the agent does not advertise the capability the rule is about.
    Skipped {
        /// Which capability (or advertised feature) is missing.
        reason: String,
    },
    /// The checker could not tell: the agent needs authentication or a model, the turn ended
    /// before the checker could act, or the agent gave too little to judge.
    Inconclusive {
        /// Why no verdict could be reached.
        reason: String,
    },
}

impl Verdict {
    /// `pass`, `fail`, `skipped` or `inconclusive`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail { .. } => "fail",
            Verdict::Skipped { .. } => "skipped",
            Verdict::Inconclusive { .. } => "inconclusive",
        }
    }

    /// A failure with its evidence.
    pub fn fail(reason: impl Into<String>, evidence: Vec<String>) -> Self {
        Verdict::Fail {
            reason: reason.into(),
            evidence,
        }
    }

    /// Skipped for `reason`.
    pub fn skipped(reason: impl Into<String>) -> Self {
        Verdict::Skipped {
            reason: reason.into(),
        }
    }

    /// Inconclusive for `reason`.
    pub fn inconclusive(reason: impl Into<String>) -> Self {
        Verdict::Inconclusive {
            reason: reason.into(),
        }
    }

    /// Whether this is [`Verdict::Fail`].
    pub fn is_fail(&self) -> bool {
        matches!(self, Verdict::Fail { .. })
    }

    fn reason(&self) -> Option<&str> {
        match self {
            Verdict::Pass => None,
            Verdict::Fail { reason, .. }
            | Verdict::Skipped { reason }
            | Verdict::Inconclusive { reason } => Some(reason),
        }
    }
}

/// One check's result, with what it verifies.
#[derive(Clone, Debug)]
pub struct CheckResult {
    /// Stable identifier, e.g. `init.version.same`.
    pub id: &'static str,
    /// MUST, SHOULD or MAY.
    pub level: Level,
    /// Where the rule is: page and section, e.g. `initialization.mdx › Version Negotiation`.
    pub spec: &'static str,
    /// The rule, in our own words.
    pub requirement: &'static str,
    /// What the checker concluded.
    pub verdict: Verdict,
    /// How long the check took.
    pub duration: Duration,
}

/// What the agent said about itself, from its first `initialize` answer.
#[derive(Clone, Debug, Default)]
pub struct AgentSummary {
    /// The command line that was run.
    pub command: Vec<String>,
    /// `agentInfo.name` (v2: `info.name`), if given.
    pub name: Option<String>,
    /// `agentInfo.version` (v2: `info.version`), if given.
    pub version: Option<String>,
    /// The protocol version it answered to the run's first `initialize` (asking for 1, or 2
    /// with `--protocol 2`).
    pub protocol_version: Option<Value>,
    /// `agentCapabilities` (v2: `capabilities`) as sent.
    pub capabilities: Option<Value>,
    /// The ids of the advertised `authMethods`.
    pub auth_methods: Vec<String>,
    /// Set when `session/new` was refused with `-32000` (authentication required).
    pub auth_required: bool,
    /// The method given with `--auth`, if any.
    pub authenticated_with: Option<String>,
}

/// Every check's result for one agent.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The agent under test.
    pub agent: AgentSummary,
    /// The results, in the order the checks ran.
    pub results: Vec<CheckResult>,
    /// How long the whole run took.
    pub duration: Duration,
}

/// Counts per verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Checks that passed.
    pub passed: usize,
    /// Checks that failed, at any level.
    pub failed: usize,
    /// Failed checks of level MUST.
    pub must_failed: usize,
    /// Skipped checks.
    pub skipped: usize,
    /// Inconclusive checks.
    pub inconclusive: usize,
}

impl Report {
    /// Counts the verdicts.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for r in &self.results {
            match r.verdict {
                Verdict::Pass => s.passed += 1,
                Verdict::Fail { .. } => {
                    s.failed += 1;
                    if r.level == Level::Must {
                        s.must_failed += 1;
                    }
                }
                Verdict::Skipped { .. } => s.skipped += 1,
                Verdict::Inconclusive { .. } => s.inconclusive += 1,
            }
        }
        s
    }

    /// The result of check `id`, if it ran.
    pub fn get(&self, id: &str) -> Option<&CheckResult> {
        self.results.iter().find(|r| r.id == id)
    }

    /// The report as JSON: `tool`, `agent`, `summary`, `verdicts` (id → verdict name, the part
    /// that `--expect` compares) and `checks` (everything, evidence included).
    pub fn to_json(&self) -> Value {
        let s = self.summary();
        let a = &self.agent;
        let verdicts: Map<String, Value> = self
            .results
            .iter()
            .map(|r| (r.id.to_owned(), Value::from(r.verdict.name())))
            .collect();
        let checks: Vec<Value> = self
            .results
            .iter()
            .map(|r| {
                let mut check = json!({
                    "id": r.id,
                    "level": r.level.as_str(),
                    "spec": r.spec,
                    "requirement": r.requirement,
                    "verdict": r.verdict.name(),
                    "durationMs": r.duration.as_millis() as u64,
                });
                if let Some(reason) = r.verdict.reason() {
                    check["reason"] = reason.into();
                }
                if let Verdict::Fail { evidence, .. } = &r.verdict {
                    check["evidence"] = evidence.clone().into();
                }
                check
            })
            .collect();
        json!({
            "tool": { "name": "acp-conformance", "version": env!("CARGO_PKG_VERSION") },
            "agent": {
                "command": a.command,
                "name": a.name,
                "version": a.version,
                "protocolVersion": a.protocol_version,
                "capabilities": a.capabilities,
                "authMethods": a.auth_methods,
                "authRequired": a.auth_required,
                "authenticatedWith": a.authenticated_with,
            },
            "summary": {
                "checks": self.results.len(),
                "passed": s.passed,
                "failed": s.failed,
                "mustFailed": s.must_failed,
                "skipped": s.skipped,
                "inconclusive": s.inconclusive,
                "durationMs": self.duration.as_millis() as u64,
            },
            "verdicts": verdicts,
            "checks": checks,
        })
    }

    /// Compares the verdicts with the `verdicts` object of `expected` (a pinned file, or a
    /// whole earlier report) and describes every difference: a check whose verdict changed,
    /// one that is pinned but did not run, one that ran but is not pinned.
    pub fn compare(&self, expected: &Value) -> Result<Vec<String>, String> {
        let Some(pinned) = expected.get("verdicts").and_then(Value::as_object) else {
            return Err("the expectation file has no `verdicts` object".to_owned());
        };
        let mut differences = Vec::new();
        for r in &self.results {
            match pinned.get(r.id).and_then(Value::as_str) {
                Some(want) if want == r.verdict.name() => {}
                Some(want) => {
                    let why = r
                        .verdict
                        .reason()
                        .map(|reason| format!(" ({reason})"))
                        .unwrap_or_default();
                    differences.push(format!(
                        "{}: expected {want}, got {}{why}",
                        r.id,
                        r.verdict.name()
                    ));
                }
                None => differences.push(format!("{}: not pinned, got {}", r.id, r.verdict.name())),
            }
        }
        for id in pinned.keys() {
            if self.get(id).is_none() {
                differences.push(format!("{id}: pinned but did not run"));
            }
        }
        Ok(differences)
    }

    /// The human-readable report: a header about the agent, one row per check (with the
    /// reason and evidence under every row that did not pass), and a summary line. ANSI
    /// colours when `color`.
    pub fn render(&self, color: bool) -> String {
        let paint = |code: &str, text: &str| {
            if color {
                format!("\x1b[{code}m{text}\x1b[0m")
            } else {
                text.to_owned()
            }
        };
        let mut out = String::new();
        let a = &self.agent;
        let _ = writeln!(out, "agent: {}", a.command.join(" "));
        let identity = match (&a.name, &a.version) {
            (Some(n), Some(v)) => format!("{n} {v}"),
            (Some(n), None) => n.clone(),
            _ => "(no name given)".to_owned(),
        };
        let protocol = a
            .protocol_version
            .as_ref()
            .map_or_else(|| "?".to_owned(), Value::to_string);
        let auth = if a.auth_required {
            match &a.authenticated_with {
                Some(m) => format!("required (authenticated with `{m}`)"),
                None => format!(
                    "REQUIRED; rerun with --auth METHOD (advertised: {})",
                    if a.auth_methods.is_empty() {
                        "none".to_owned()
                    } else {
                        a.auth_methods.join(", ")
                    }
                ),
            }
        } else if let Some(m) = &a.authenticated_with {
            format!("authenticated with `{m}`")
        } else {
            "not required".to_owned()
        };
        let _ = writeln!(
            out,
            "identity: {identity}; protocol version: {protocol}; authentication: {auth}\n"
        );

        let id_width = self
            .results
            .iter()
            .map(|r| r.id.len())
            .max()
            .unwrap_or(5)
            .max(5);
        let _ = writeln!(
            out,
            "{:<12}  {:<6}  {:<id_width$}  SPEC",
            "VERDICT", "LEVEL", "CHECK"
        );
        for r in &self.results {
            let (label, code) = match (&r.verdict, r.level) {
                (Verdict::Pass, _) => ("pass", "32"),
                (Verdict::Fail { .. }, Level::Must) => ("FAIL", "1;31"),
                (Verdict::Fail { .. }, _) => ("fail", "31"),
                (Verdict::Skipped { .. }, _) => ("skipped", "2"),
                (Verdict::Inconclusive { .. }, _) => ("inconclusive", "33"),
            };
            let _ = writeln!(
                out,
                "{}  {:<6}  {:<id_width$}  {}",
                paint(code, &format!("{label:<12}")),
                r.level.as_str(),
                r.id,
                r.spec
            );
            if let Some(reason) = r.verdict.reason() {
                let _ = writeln!(out, "{:14}└ {reason}", "");
            }
            if let Verdict::Fail { evidence, .. } = &r.verdict {
                for line in evidence.iter().take(MAX_EVIDENCE_LINES) {
                    let _ = writeln!(out, "{:16}{}", "", paint("2", line));
                }
                if evidence.len() > MAX_EVIDENCE_LINES {
                    let more = evidence.len() - MAX_EVIDENCE_LINES;
                    let _ = writeln!(out, "{:16}… {more} more in the JSON report", "");
                }
            }
        }
        let s = self.summary();
        let _ = writeln!(
            out,
            "\n{} checks: {} passed, {} failed ({} MUST), {} skipped, {} inconclusive ({:.1} s)",
            self.results.len(),
            s.passed,
            s.failed,
            s.must_failed,
            s.skipped,
            s.inconclusive,
            self.duration.as_secs_f64()
        );
        out
    }
}
