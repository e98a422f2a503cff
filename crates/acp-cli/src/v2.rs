//! `acp --protocol 2|auto` on an agent that speaks v2 (feature `unstable-protocol-v2`): the
//! session (new, or `--load` as `session/resume` replaying from the start), the turns, the
//! permission policy and Ctrl-C. A turn ends at the `idle` that follows the echo of its own
//! user message; updates are rendered as they come, also while a request is awaited (a
//! resume's replay arrives before its answer).

use std::path::Path;
use std::sync::{Arc, Mutex};

use acp_runtime::Error;
use acp_runtime::acp_types::Patch;
use acp_runtime::acp_types::v2::*;
use acp_runtime::client::v2;
use acp_runtime::process::AgentProcess;
use futures_lite::future;

use crate::args::{Args, Policy};
use crate::render::v2::Renderer;
use crate::signal::Interrupts;
use crate::{Failure, exit, input, note};

/// How many updates wait for the renderer before the connection waits for it.
const UPDATES_QUEUED: usize = 256;

/// The v2 client acp is: permissions answered by the policy, updates handed to the renderer.
pub struct Client {
    policy: Policy,
    updates: async_channel::Sender<UpdateSessionNotification>,
}

/// The client, and where its updates come out.
pub fn client(policy: Policy) -> (Client, async_channel::Receiver<UpdateSessionNotification>) {
    let (updates, received) = async_channel::bounded(UPDATES_QUEUED);
    (Client { policy, updates }, received)
}

impl v2::Client for Client {
    async fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> acp_runtime::Result<RequestPermissionResponse> {
        let chosen = match self.policy {
            Policy::Yes => first_of(
                &request,
                &[
                    PermissionOptionKind::AllowOnce,
                    PermissionOptionKind::AllowAlways,
                ],
            ),
            Policy::Reject => first_of(
                &request,
                &[
                    PermissionOptionKind::RejectOnce,
                    PermissionOptionKind::RejectAlways,
                ],
            ),
            Policy::Ask => ask(&request).await,
        };
        let outcome = match chosen {
            Some(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
            None => RequestPermissionOutcome::Cancelled(CancelledPermissionOutcome::new()),
        };
        Ok(RequestPermissionResponse::new(outcome))
    }

    async fn session_update(&self, notification: UpdateSessionNotification) {
        // The receiver is gone only when acp is ending.
        let _ = self.updates.send(notification).await;
    }
}

/// The first option of one of `kinds`, in the agent's order.
fn first_of(
    request: &RequestPermissionRequest,
    kinds: &[PermissionOptionKind],
) -> Option<PermissionOptionId> {
    request
        .options
        .iter()
        .find(|option| kinds.contains(&option.kind))
        .map(|option| option.option_id.clone())
}

/// `--ask`: the request and its options on stderr, the choice from stdin.
async fn ask(request: &RequestPermissionRequest) -> Option<PermissionOptionId> {
    let mut question = format!("\nPermission requested: {}\n", request.title);
    if let Some(description) = &request.description {
        question.push_str(&format!("  {description}\n"));
    }
    for (i, option) in request.options.iter().enumerate() {
        let kind = serde_json::to_value(&option.kind).unwrap_or_default();
        let kind = kind.as_str().unwrap_or("?");
        question.push_str(&format!("  {}) {} [{kind}]\n", i + 1, option.name));
    }
    let count = request.options.len();
    if count == 0 {
        eprintln!("{question}(no options to choose from: answered `cancelled`)");
        return None;
    }
    eprint!("{question}choose 1-{count}: ");
    loop {
        // End of input: nobody is there to answer.
        let line = input::line().await?;
        match line.trim().parse::<usize>() {
            Ok(n) if (1..=count).contains(&n) => {
                return Some(request.options[n - 1].option_id.clone());
            }
            _ => eprint!("not one of the options; choose 1-{count}: "),
        }
    }
}

/// The running turn's session, for Ctrl-C, and whether a Ctrl-C cancelled it already.
type RunningTurn = Arc<Mutex<Option<(SessionId, bool)>>>;

/// An initialized v2 connection to an agent process, and where its updates come out.
pub struct Connection {
    pub agent: v2::Agent,
    pub init: InitializeResponse,
    pub driver: acp_runtime::client::connector::Driver,
    /// The agent's process, when acp started it (none for a URL).
    pub process: Option<AgentProcess>,
    pub updates: async_channel::Receiver<UpdateSessionNotification>,
}

/// Everything of a v2 run after `initialize`: returns the exit status.
pub async fn run(
    connection: Connection,
    args: &Args,
    cwd: &Path,
    mut interrupts: Interrupts,
) -> i32 {
    let Connection {
        agent,
        init,
        driver,
        process,
        updates,
    } = connection;
    let driver = smol::spawn(driver);
    let running: RunningTurn = Arc::default();
    let watcher = {
        let agent = agent.clone();
        let running = running.clone();
        smol::spawn(async move {
            loop {
                interrupts.next().await;
                let to_cancel = {
                    let mut turn = running.lock().unwrap();
                    match turn.as_mut() {
                        Some((session, cancelled)) if !*cancelled => {
                            *cancelled = true;
                            Some(session.clone())
                        }
                        _ => None,
                    }
                };
                match to_cancel {
                    Some(session) => {
                        eprintln!("\nacp: cancelling the turn (Ctrl-C again to quit)");
                        let _ = agent.cancel(&session).await;
                    }
                    None => return,
                }
            }
        })
    };
    let mut out = Renderer::new(args.json, !args.json && crate::color(std::io::stdout()));
    let work = session_and_turns(&agent, &init, args, cwd, &updates, &running, &mut out);
    let interrupted = async {
        watcher.await;
        Err(Failure::new(
            exit::CANCELLED,
            "interrupted, shutting the agent down",
        ))
    };
    let result = future::or(work, interrupted).await;
    out.finish_line();
    let code = match result {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("acp: {}", failure.message);
            failure.code
        }
    };
    agent.close();
    let grace = async {
        smol::Timer::after(acp_runtime::process::DEFAULT_SHUTDOWN_GRACE).await;
        Ok(())
    };
    let _ = future::or(driver, grace).await;
    if let Some(process) = process {
        let exit = process.shutdown().await;
        if code == exit::AGENT_GONE && !exit.stderr_tail.is_empty() {
            eprintln!("agent exited: {exit}");
            eprintln!(
                "agent stderr (last lines):\n{}",
                exit.stderr_tail.trim_end()
            );
        } else if !args.json && code != exit::AGENT_GONE {
            eprintln!("agent exited: {exit}");
        }
    }
    code
}

async fn session_and_turns(
    agent: &v2::Agent,
    init: &InitializeResponse,
    args: &Args,
    cwd: &Path,
    updates: &async_channel::Receiver<UpdateSessionNotification>,
    running: &RunningTurn,
    out: &mut Renderer,
) -> Result<i32, Failure> {
    note(
        args.json,
        &format!(
            "connected to {} {} (protocol 2)",
            init.info.name, init.info.version
        ),
    );
    if let Some(method) = &args.auth {
        let login = agent.login(LoginAuthRequest::new(method.as_str()));
        render_while(login, updates, out, &mut Ends::default())
            .await
            .map_err(|e| Failure::call(&format!("auth/login with `{method}`"), e))?;
        note(args.json, &format!("authenticated with {method}"));
    }
    let cwd_text = cwd.to_string_lossy().into_owned();
    // Checked before any session request, as on v1: an agent that did not advertise the
    // system prompt (or its mode) gets no session request at all.
    let system_prompt = crate::setup::given_system_prompt(args, |text, mode| {
        crate::setup::system_prompt_v2(text, mode, &init.capabilities)
    })?;
    let mut ends = Ends::default();
    let (session, options) = match &args.load {
        Some(id) => {
            let mut request = ResumeSessionRequest::new(id.as_str(), cwd_text);
            request.replay_from = Patch::Set(ReplayFrom::Start(ReplayFromStart::new()));
            request.system_prompt = system_prompt;
            let resumed = render_while(agent.resume_session(request), updates, out, &mut ends)
                .await
                .map_err(|e| Failure::call(&format!("session/resume {id}"), e))?;
            note(
                args.json,
                &format!("session {id} resumed in {}", cwd.display()),
            );
            (SessionId::new(id.as_str()), resumed.config_options)
        }
        None => {
            let mut request = NewSessionRequest::new(cwd_text);
            request.system_prompt = system_prompt;
            let created = render_while(agent.new_session(request), updates, out, &mut ends)
                .await
                .map_err(|e| Failure::call("session/new", e))?;
            note(
                args.json,
                &format!("session {} in {}", created.session_id, cwd.display()),
            );
            (created.session_id, created.config_options)
        }
    };
    configure(agent, &session, options.unwrap_or_default(), args).await?;
    let mut prompts = input::Prompts::new(&args.prompts);
    while let Some(prompt) = prompts.next().await {
        out.prompt(&prompt);
        *running.lock().unwrap() = Some((session.clone(), false));
        let reason = turn(agent, &session, prompt, updates, out, &mut ends).await;
        running.lock().unwrap().take();
        let reason = reason?;
        out.stop(&reason);
        // As on v1: prompts given with --prompt are a script, which a cancelled turn ends.
        if reason == IdleStateUpdateKind::Cancelled && !args.prompts.is_empty() {
            return Ok(exit::CANCELLED);
        }
    }
    Ok(exit::OK)
}

/// `--mode`, `--model` and `--config`, in that order, before the first turn. Protocol 2 has
/// no modes of its own: a mode, like a model, is the value of the config option the agent
/// marks with that category.
async fn configure(
    agent: &v2::Agent,
    session: &SessionId,
    mut options: Vec<SessionConfigOption>,
    args: &Args,
) -> Result<(), Failure> {
    let mut settings = Vec::new();
    for (flag, category, value) in [
        ("--mode", SessionConfigOptionCategory::Mode, &args.mode),
        ("--model", SessionConfigOptionCategory::Model, &args.model),
    ] {
        let Some(value) = value else { continue };
        let selector = options
            .iter()
            .find(|o| o.category.as_ref() == Some(&category));
        let Some(selector) = selector else {
            return Err(Failure::new(
                exit::OTHER,
                format!(
                    "{flag} {value}: the agent advertises no {} selector (a config option of category `{}`)",
                    category.as_str(),
                    category.as_str()
                ),
            ));
        };
        settings.push((selector.config_id.to_string(), value.clone()));
    }
    settings.extend(args.config.iter().cloned());
    for (id, value) in &settings {
        let boolean = options.iter().any(|o| {
            o.config_id.as_str() == id && matches!(o.kind, SessionConfigOptionKind::Boolean(_))
        });
        let kind = match crate::setup::config_value(id, value, boolean)
            .map_err(|message| Failure::new(exit::USAGE, message))?
        {
            crate::setup::ConfigValue::Boolean(value) => {
                SetSessionConfigOptionRequestKind::Boolean(
                    SetSessionConfigOptionRequestKindBoolean::new(value),
                )
            }
            crate::setup::ConfigValue::Id(value) => SetSessionConfigOptionRequestKind::Id(
                SetSessionConfigOptionRequestKindId::new(value),
            ),
        };
        let request = SetSessionConfigOptionRequest::new(session.clone(), id.as_str(), kind);
        let answer = agent
            .set_config_option(request)
            .await
            .map_err(|e| Failure::call(&format!("--config {id}={value}"), e))?;
        // The answer is the whole list after the change: a later setting reads it.
        options = answer.config_options;
        note(args.json, &format!("config: {id}={value}"));
    }
    Ok(())
}

/// Sends one prompt and renders its updates until the `idle` after its echo.
async fn turn(
    agent: &v2::Agent,
    session: &SessionId,
    prompt: String,
    updates: &async_channel::Receiver<UpdateSessionNotification>,
    out: &mut Renderer,
    ends: &mut Ends,
) -> Result<IdleStateUpdateKind, Failure> {
    let request = PromptRequest::new(session.clone(), vec![ContentBlock::from(prompt)]);
    let accepted = render_while(agent.prompt(request), updates, out, ends)
        .await
        .map_err(|e| Failure::call("session/prompt", e))?;
    let message = accepted.message_id().clone();
    loop {
        if let Some(reason) = ends.of(&message) {
            return Ok(reason);
        }
        match updates.recv().await {
            Ok(update) => {
                ends.see(&update.update);
                out.update(&update);
            }
            Err(_) => {
                return Err(Failure {
                    code: exit::AGENT_GONE,
                    message: "the agent closed the connection during the turn".to_owned(),
                    report_exit: true,
                });
            }
        }
    }
}

/// The ends of turns seen in the stream: which user message each `idle` followed.
#[derive(Default)]
struct Ends {
    last_user_message: Option<MessageId>,
    ended: Vec<(MessageId, IdleStateUpdateKind)>,
}

impl Ends {
    fn see(&mut self, update: &SessionUpdate) {
        match update {
            SessionUpdate::UserMessage(message) => {
                self.last_user_message = Some(message.message_id.clone());
            }
            SessionUpdate::UserMessageChunk(chunk) => {
                self.last_user_message = Some(chunk.message_id.clone());
            }
            SessionUpdate::StateUpdate(StateUpdate::Idle(idle)) => {
                if let Some(message) = self.last_user_message.take() {
                    self.ended.push((message, idle.kind.clone()));
                }
            }
            _ => {}
        }
    }

    fn of(&mut self, message: &MessageId) -> Option<IdleStateUpdateKind> {
        let at = self.ended.iter().position(|(id, _)| id == message)?;
        Some(self.ended.remove(at).1)
    }
}

/// Awaits `work` while rendering the updates that come meanwhile: the connection hands
/// updates over in order and waits for each, so they must be taken for an answer to come.
async fn render_while<T>(
    work: impl Future<Output = Result<T, Error>>,
    updates: &async_channel::Receiver<UpdateSessionNotification>,
    out: &mut Renderer,
    ends: &mut Ends,
) -> Result<T, Error> {
    let mut work = std::pin::pin!(work);
    loop {
        let next = future::or(async { Err(work.as_mut().await) }, async {
            Ok(updates.recv().await)
        })
        .await;
        match next {
            Err(done) => {
                // What came before the answer is shown before what follows it.
                while let Ok(update) = updates.try_recv() {
                    ends.see(&update.update);
                    out.update(&update);
                }
                return done;
            }
            Ok(Ok(update)) => {
                ends.see(&update.update);
                out.update(&update);
            }
            Ok(Err(_)) => return work.await,
        }
    }
}
