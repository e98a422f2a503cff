//! The sessions a v2 agent's connection serves: for each, its directory, the running turn,
//! the prompts waiting for it (in order of arrival), and the idempotency keys of the prompts
//! it accepted; bounded like the v1 registry (sessions and bytes per connection, and the
//! server's shared session budget, which v1 and v2 sessions hold together) and by
//! [`MAX_HELD_PROMPTS`] and [`MAX_IDEMPOTENCY_KEYS`] per session.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Mutex;

use acp_jsonrpc::{ByteBudget, Latch};
use acp_types::v2::{IdempotencyKey, MessageId, SessionId};

use crate::error::{Error, Result};
use crate::rules;

/// Prompts that may wait for a session's turn; one more is refused (`-32600`).
pub const MAX_HELD_PROMPTS: usize = 16;
/// Idempotency keys a session remembers; the oldest is forgotten first.
pub const MAX_IDEMPOTENCY_KEYS: usize = 64;
/// What a session costs beside its directories: the entry, the id, the keys (at most 255
/// bytes each, times [`MAX_IDEMPOTENCY_KEYS`]).
const ENTRY_OVERHEAD: usize = 512 + 256 * MAX_IDEMPOTENCY_KEYS;

pub(super) struct Sessions {
    map: Mutex<HashMap<SessionId, Entry>>,
    max_sessions: usize,
    budget: usize,
    /// The server's budget over every connection's sessions, v1 and v2 alike
    /// (`AgentOptions::with_shared_session_budget`).
    shared: Option<ByteBudget>,
}

/// A part of the shared session budget, given back when dropped: with the session's entry
/// when it is forgotten or the connection ends, or before, when the session fails to open.
struct Charge {
    budget: Option<ByteBudget>,
    bytes: usize,
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(budget) = &self.budget
            && self.bytes != 0
        {
            budget.give_back(self.bytes);
        }
    }
}

/// Room for a session being opened ([`Sessions::room`]): its directory, what it costs, and
/// its part of the shared budget until it is registered.
pub(super) struct Room {
    cwd: PathBuf,
    cost: usize,
    charge: Charge,
}

struct Entry {
    cwd: PathBuf,
    cost: usize,
    _charge: Charge,
    /// The running turn's cancellation signal.
    turn: Option<Latch>,
    /// Tickets of the prompts waiting for the turn, oldest first.
    held: VecDeque<u64>,
    next_ticket: u64,
    /// Set by `session/cancel` and `session/close`: the prompts held before it are withdrawn.
    withdraw: Latch,
    /// Set (and replaced) on every change a waiting prompt may be waiting for.
    changed: Latch,
    keys: VecDeque<(IdempotencyKey, Keyed)>,
}

#[derive(Clone)]
enum Keyed {
    /// The prompt with this key is waiting or being accepted; set when that is decided.
    Pending(Latch),
    Accepted(MessageId),
}

/// What a prompt with an idempotency key should do.
pub(super) enum Claim {
    /// The first with this key: go on (the key is pending until [`Sessions::settle_key`]).
    Fresh,
    /// A retry of an accepted prompt: answer this.
    Accepted(MessageId),
    /// A retry of a prompt still being decided: wait, then claim again.
    Wait(Latch),
}

/// What a held prompt should do now.
pub(super) enum Next {
    /// Its turn: run, with this cancellation signal (the turn is registered).
    Start(Latch, PathBuf),
    /// Wait until either latch is set, then ask again.
    Wait(Latch, Latch),
    /// Withdrawn by `session/cancel` or `session/close`, or the session is gone.
    Withdrawn,
}

fn bump(entry: &mut Entry) {
    std::mem::replace(&mut entry.changed, Latch::new()).set();
}

impl Sessions {
    pub(super) fn new(max_sessions: usize, budget: usize, shared: Option<ByteBudget>) -> Self {
        Sessions {
            map: Mutex::new(HashMap::new()),
            max_sessions,
            budget,
            shared,
        }
    }

    /// Room for one more session in `cwd` keeping `bytes`, taken from the shared budget
    /// (`-32602` when it does not fit, as for v1).
    pub(super) fn room(&self, cwd: &str, bytes: usize) -> Result<Room> {
        let map = self.map.lock().unwrap();
        let kept: usize = map.values().map(|entry| entry.cost).sum();
        let cost = bytes + ENTRY_OVERHEAD;
        rules::session_room((map.len(), self.max_sessions), (kept, cost, self.budget))
            .map_err(|breach| breach.answer("agent"))?;
        let mut charge = Charge {
            budget: self.shared.clone(),
            bytes: 0,
        };
        if let Some(shared) = &self.shared {
            rules::shared_session_room(shared, (cost, kept + cost), cost)
                .map_err(|breach| breach.answer("agent"))?;
            charge.bytes = cost;
        }
        Ok(Room {
            cwd: PathBuf::from(cwd),
            cost,
            charge,
        })
    }

    /// Registers `id` (a no-op for a session already registered: a resume on the same
    /// connection keeps its turn). `fresh` refuses an id in use (the agent made a duplicate).
    pub(super) fn register(&self, id: &SessionId, room: Room, fresh: bool) -> Result<()> {
        let mut map = self.map.lock().unwrap();
        if map.contains_key(id) {
            if fresh {
                return Err(Error::internal(format!(
                    "the agent returned session id `{id}`, which is already in use"
                )));
            }
            return Ok(());
        }
        map.insert(
            id.clone(),
            Entry {
                cwd: room.cwd,
                cost: room.cost,
                _charge: room.charge,
                turn: None,
                held: VecDeque::new(),
                next_ticket: 0,
                withdraw: Latch::new(),
                changed: Latch::new(),
                keys: VecDeque::new(),
            },
        );
        Ok(())
    }

    pub(super) fn contains(&self, id: &SessionId) -> bool {
        self.map.lock().unwrap().contains_key(id)
    }

    /// The sessions, with their directories.
    pub(super) fn list(&self) -> Vec<(SessionId, PathBuf)> {
        let map = self.map.lock().unwrap();
        let mut all: Vec<_> = map
            .iter()
            .map(|(id, entry)| (id.clone(), entry.cwd.clone()))
            .collect();
        all.sort_by(|a, b| a.0.0.cmp(&b.0.0));
        all
    }

    fn with<T>(&self, id: &SessionId, f: impl FnOnce(&mut Entry) -> Result<T>) -> Result<T> {
        match self.map.lock().unwrap().get_mut(id) {
            Some(entry) => f(entry),
            None => Err(unknown_session(id)),
        }
    }

    /// Claims `key` for a prompt of `id`.
    pub(super) fn claim_key(&self, id: &SessionId, key: &IdempotencyKey) -> Result<Claim> {
        if key.0.is_empty() || key.0.chars().count() > 255 {
            return Err(Error::invalid_params(
                "idempotencyKey must be 1 to 255 characters long",
            ));
        }
        self.with(id, |entry| {
            match entry.keys.iter().find(|(k, _)| k == key) {
                Some((_, Keyed::Accepted(message))) => return Ok(Claim::Accepted(message.clone())),
                Some((_, Keyed::Pending(latch))) => return Ok(Claim::Wait(latch.clone())),
                None => {}
            }
            if entry.keys.len() >= MAX_IDEMPOTENCY_KEYS {
                // Forget the oldest settled key; a session full of pending keys refuses.
                let settled = entry
                    .keys
                    .iter()
                    .position(|(_, keyed)| matches!(keyed, Keyed::Accepted(_)));
                match settled {
                    Some(index) => {
                        entry.keys.remove(index);
                    }
                    None => {
                        return Err(Error::invalid_request(format!(
                            "session `{id}` has {MAX_IDEMPOTENCY_KEYS} prompts with idempotency keys waiting"
                        )));
                    }
                }
            }
            entry
                .keys
                .push_back((key.clone(), Keyed::Pending(Latch::new())));
            Ok(Claim::Fresh)
        })
    }

    /// Settles a claimed key: accepted as `message`, or (`None`) forgotten, so that a retry
    /// runs anew.
    pub(super) fn settle_key(
        &self,
        id: &SessionId,
        key: &IdempotencyKey,
        message: Option<&MessageId>,
    ) {
        let _ = self.with(id, |entry| {
            if let Some(index) = entry.keys.iter().position(|(k, _)| k == key) {
                let waiting = match message {
                    Some(message) => std::mem::replace(
                        &mut entry.keys[index].1,
                        Keyed::Accepted(message.clone()),
                    ),
                    None => entry.keys.remove(index).expect("found").1,
                };
                if let Keyed::Pending(latch) = waiting {
                    latch.set();
                }
            }
            Ok(())
        });
    }

    /// Puts a prompt in line for `id`'s turn: its ticket and the withdrawal signal it obeys.
    pub(super) fn enqueue(&self, id: &SessionId) -> Result<(u64, Latch)> {
        self.with(id, |entry| {
            if entry.held.len() >= MAX_HELD_PROMPTS {
                return Err(Error::invalid_request(format!(
                    "session `{id}` has {MAX_HELD_PROMPTS} prompts waiting for its turn; wait for it to be idle"
                )));
            }
            let ticket = entry.next_ticket;
            entry.next_ticket += 1;
            entry.held.push_back(ticket);
            Ok((ticket, entry.withdraw.clone()))
        })
    }

    /// What the prompt with `ticket` should do now.
    pub(super) fn next(&self, id: &SessionId, ticket: u64, withdraw: &Latch) -> Next {
        let mut map = self.map.lock().unwrap();
        let Some(entry) = map.get_mut(id) else {
            return Next::Withdrawn;
        };
        if withdraw.is_set() {
            entry.held.retain(|held| *held != ticket);
            bump(entry);
            return Next::Withdrawn;
        }
        if entry.turn.is_none() && entry.held.front() == Some(&ticket) {
            entry.held.pop_front();
            let cancel = Latch::new();
            entry.turn = Some(cancel.clone());
            bump(entry);
            return Next::Start(cancel, entry.cwd.clone());
        }
        Next::Wait(entry.changed.clone(), withdraw.clone())
    }

    /// Takes a prompt out of line (its request was dropped before its turn).
    pub(super) fn leave(&self, id: &SessionId, ticket: u64) {
        let _ = self.with(id, |entry| {
            let before = entry.held.len();
            entry.held.retain(|held| *held != ticket);
            if entry.held.len() != before {
                bump(entry);
            }
            Ok(())
        });
    }

    /// Ends the running turn of `id`.
    pub(super) fn end_turn(&self, id: &SessionId) {
        let _ = self.with(id, |entry| {
            if let Some(cancel) = entry.turn.take() {
                cancel.set();
            }
            bump(entry);
            Ok(())
        });
    }

    /// `session/cancel`: cancels the running turn and withdraws the prompts waiting for it.
    /// Returns the signal set when the session is next without a turn (`None`: it has none),
    /// or the unknown-session error.
    pub(super) fn cancel(&self, id: &SessionId) -> Result<Option<Latch>> {
        self.with(id, |entry| {
            std::mem::replace(&mut entry.withdraw, Latch::new()).set();
            bump(entry);
            Ok(entry.turn.as_ref().map(|cancel| {
                cancel.set();
                entry.changed.clone()
            }))
        })
    }

    /// Whether `id` has a running turn.
    pub(super) fn running(&self, id: &SessionId) -> bool {
        self.map
            .lock()
            .unwrap()
            .get(id)
            .is_some_and(|entry| entry.turn.is_some())
    }

    /// Forgets `id`.
    pub(super) fn remove(&self, id: &SessionId) {
        if let Some(mut entry) = self.map.lock().unwrap().remove(id) {
            entry.withdraw.set();
            bump(&mut entry);
        }
    }

    /// Cancels every turn and withdraws every waiting prompt (the connection is over).
    pub(super) fn cancel_all(&self) {
        for entry in self.map.lock().unwrap().values_mut() {
            if let Some(cancel) = &entry.turn {
                cancel.set();
            }
            entry.withdraw.set();
            bump(entry);
        }
    }
}

/// `-32002` for a session this side does not serve, as v1 answers it.
pub(super) fn unknown_session(id: &SessionId) -> Error {
    rules::unknown_session(&acp_types::SessionId::new(id.0.clone()))
}
