//! The agent's state and what each ACP request does: the client's capabilities from
//! `initialize`, the sessions (folder, mode, conversation, the run in flight), and the checks
//! that turn bad requests into JSON-RPC errors while the agent keeps serving.
//!
//! A session works in its `cwd`, which must lie inside one of the folders `patchwise acp` was
//! given (`--workspace`, default the current directory): that folder is the sandbox of every run
//! of the session, as the workspace folder is for the LSP and MCP edges.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, ClientCapabilities, ContentBlock, ContentChunk, Implementation,
    InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, SessionId, SessionMode,
    SessionModeId, SessionModeState, SessionUpdate, SetSessionModeRequest, SetSessionModeResponse,
    TextContent,
};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConfigPaths, Severity};
use crate::model::ModelRouter;
use crate::store::sessions::{SessionRecord, SessionTurn, Speaker};
use crate::workflow::session::Runs;

/// What a prompt in a session does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Develop,
    Edit,
    Research,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Develop, Mode::Edit, Mode::Research];

    pub fn id(self) -> &'static str {
        match self {
            Mode::Develop => "develop",
            Mode::Edit => "edit",
            Mode::Research => "research",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Develop => "Develop",
            Mode::Edit => "Edit",
            Mode::Research => "Research",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Mode::Develop => {
                "Plan, change and check the workspace; every change is shown and written only when you allow it"
            }
            Mode::Edit => {
                "Edit one file: name it and its lines (@src/lib.rs:10-20 or a selection) and say what to change"
            }
            Mode::Research => "Research a question across sources; the report cites them",
        }
    }

    pub fn from_id(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }
}

/// What the client said it can do (`initialize`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientOffer {
    pub read_text_file: bool,
    pub write_text_file: bool,
    /// Offered; checks run in patchwise's own overlay, so no terminal is asked for.
    pub terminal: bool,
}

/// One session.
pub struct AcpSession {
    pub id: String,
    pub cwd: PathBuf,
    pub mode: Mode,
    pub config: Arc<Config>,
    pub router: Arc<ModelRouter>,
    /// The prompt in flight, cancelled by `session/cancel`.
    pub running: Option<CancellationToken>,
    /// "Always allow" was chosen: later changes are written without asking (kept in the
    /// library, so a loaded session keeps it).
    pub always_allow: bool,
    pub turns: Vec<SessionTurn>,
    pub created_at: String,
}

/// Everything the agent keeps between requests. Locked only for a map operation, never across
/// an `.await`.
pub struct AcpState {
    roots: Vec<PathBuf>,
    client: Mutex<ClientOffer>,
    sessions: Mutex<HashMap<String, AcpSession>>,
    pub runs: Arc<Runs>,
}

/// A request the agent refuses; the text says why and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejected {
    InvalidParams(String),
    NotFound(String),
    Internal(String),
}

impl Rejected {
    pub fn into_error(self) -> agent_client_protocol::Error {
        use agent_client_protocol::Error;
        match self {
            Rejected::InvalidParams(m) => Error::invalid_params().data(m),
            Rejected::NotFound(m) => Error::new(
                agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND,
                "Resource not found",
            )
            .data(m),
            Rejected::Internal(m) => Error::internal_error().data(m),
        }
    }
}

impl AcpState {
    pub fn new(roots: Vec<PathBuf>) -> Arc<AcpState> {
        Arc::new(AcpState {
            roots,
            client: Mutex::new(ClientOffer::default()),
            sessions: Mutex::new(HashMap::new()),
            runs: Runs::new(),
        })
    }

    pub fn client(&self) -> ClientOffer {
        *self.client.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn initialize(&self, request: &InitializeRequest) -> InitializeResponse {
        let caps: &ClientCapabilities = &request.client_capabilities;
        let abilities = ClientOffer {
            read_text_file: caps.fs.read_text_file,
            write_text_file: caps.fs.write_text_file,
            terminal: caps.terminal,
        };
        tracing::info!(?abilities, "ACP client initialized");
        *self.client.lock().unwrap_or_else(PoisonError::into_inner) = abilities;
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(PromptCapabilities::new().embedded_context(true)),
            )
            .agent_info(
                Implementation::new("patchwise", env!("CARGO_PKG_VERSION")).title("patchwise"),
            )
    }

    pub fn new_session(&self, request: &NewSessionRequest) -> Result<NewSessionResponse, Rejected> {
        let cwd = self.allowed_cwd(&request.cwd)?;
        let id = crate::store::new_id();
        let session = open_session(id.clone(), cwd, Mode::Develop, Vec::new(), String::new());
        let modes = modes(session.mode);
        self.lock().insert(id.clone(), session);
        tracing::info!(session = %id, "ACP session started");
        Ok(NewSessionResponse::new(SessionId::new(id)).modes(modes))
    }

    /// Loads a stored session; returns the response and its conversation to show again.
    pub fn load_session(
        &self,
        request: &LoadSessionRequest,
    ) -> Result<(LoadSessionResponse, Vec<SessionUpdate>), Rejected> {
        let cwd = self.allowed_cwd(&request.cwd)?;
        let id = request.session_id.0.to_string();
        // The library of the folder's configuration holds its sessions.
        let config = load_config(&cwd);
        let record = crate::research::open_library(&config)
            .map_err(|e| Rejected::Internal(format!("cannot open the library: {e}")))?
            .session(&id)
            .map_err(|e| Rejected::Internal(format!("cannot read session {id}: {e}")))?
            .ok_or_else(|| Rejected::NotFound(format!("no stored session has the id {id:?}")))?;
        if Path::new(&record.cwd) != cwd {
            return Err(Rejected::InvalidParams(format!(
                "session {id} works in {}, not in {}",
                record.cwd,
                cwd.display()
            )));
        }
        let mode = Mode::from_id(&record.mode).unwrap_or(Mode::Develop);
        let replay = record
            .turns
            .iter()
            .map(|t| {
                let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(t.text.clone())));
                match t.speaker {
                    Speaker::User => SessionUpdate::UserMessageChunk(chunk),
                    Speaker::Agent => SessionUpdate::AgentMessageChunk(chunk),
                }
            })
            .collect();
        let mut session = open_session(id.clone(), cwd, mode, record.turns, record.created_at);
        session.always_allow = record.always_allow;
        let mut sessions = self.lock();
        if sessions.get(&id).is_some_and(|s| s.running.is_some()) {
            return Err(Rejected::InvalidParams(format!(
                "session {id} is running a prompt; cancel it before loading it again"
            )));
        }
        sessions.insert(id, session);
        Ok((LoadSessionResponse::new().modes(modes(mode)), replay))
    }

    pub fn set_mode(
        &self,
        request: &SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Rejected> {
        let wanted = request.mode_id.0.to_string();
        let mode = Mode::from_id(&wanted).ok_or_else(|| {
            Rejected::InvalidParams(format!(
                "unknown mode {wanted:?}; the modes are {}",
                Mode::ALL.map(Mode::id).join(", ")
            ))
        })?;
        let mut sessions = self.lock();
        let session = find(&mut sessions, &request.session_id)?;
        session.mode = mode;
        Ok(SetSessionModeResponse::new())
    }

    /// Marks the session as running a prompt; refuses a second one.
    pub fn begin_prompt(
        &self,
        id: &SessionId,
    ) -> Result<(CancellationToken, SessionView), Rejected> {
        let mut sessions = self.lock();
        let session = find(&mut sessions, id)?;
        if session.running.is_some() {
            return Err(Rejected::InvalidParams(format!(
                "session {} is already running a prompt; wait for it to end or cancel it \
                 (session/cancel) first",
                session.id
            )));
        }
        let token = CancellationToken::new();
        session.running = Some(token.clone());
        Ok((
            token,
            SessionView {
                id: session.id.clone(),
                cwd: session.cwd.clone(),
                mode: session.mode,
                config: session.config.clone(),
                router: session.router.clone(),
                always_allow: session.always_allow,
            },
        ))
    }

    /// The prompt ended: adds its turns, remembers "always allow", saves the session.
    pub fn end_prompt(&self, id: &str, turns: Vec<SessionTurn>, always_allow: bool) {
        let record = {
            let mut sessions = self.lock();
            let Some(session) = sessions.get_mut(id) else {
                return;
            };
            session.running = None;
            session.always_allow |= always_allow;
            session.turns.extend(turns);
            (
                SessionRecord {
                    id: session.id.clone(),
                    cwd: session.cwd.display().to_string(),
                    mode: session.mode.id().to_owned(),
                    created_at: session.created_at.clone(),
                    always_allow: session.always_allow,
                    turns: session.turns.clone(),
                },
                session.config.clone(),
            )
        };
        let (record, config) = record;
        let saved = crate::research::open_library(&config)
            .map_err(|e| e.to_string())
            .and_then(|library| library.save_session(&record).map_err(|e| e.to_string()));
        if let Err(err) = saved {
            tracing::warn!(session = id, "the session was not saved: {err}");
        }
    }

    /// `session/cancel`: cancels the session's prompt, if one runs.
    pub fn cancel(&self, id: &SessionId) {
        if let Some(token) = self
            .lock()
            .get(id.0.as_ref())
            .and_then(|s| s.running.clone())
        {
            tracing::info!(session = %id.0, "prompt cancelled");
            token.cancel();
        }
    }

    /// Cancels every prompt (the client went away).
    pub fn cancel_all(&self) {
        for session in self.lock().values() {
            if let Some(token) = &session.running {
                token.cancel();
            }
        }
    }

    /// The session's folder, checked: absolute, a directory, inside an allowed root.
    fn allowed_cwd(&self, cwd: &Path) -> Result<PathBuf, Rejected> {
        if !cwd.is_absolute() {
            return Err(Rejected::InvalidParams(format!(
                "cwd must be an absolute path, found {:?}",
                cwd.display().to_string()
            )));
        }
        let real = std::fs::canonicalize(cwd).map_err(|e| {
            Rejected::InvalidParams(format!("cannot open the folder {}: {e}", cwd.display()))
        })?;
        if !real.is_dir() {
            return Err(Rejected::InvalidParams(format!(
                "{} is not a folder",
                cwd.display()
            )));
        }
        if !self.roots.iter().any(|root| real.starts_with(root)) {
            return Err(Rejected::InvalidParams(format!(
                "{} is outside the folders patchwise may work in ({}); start `patchwise acp` \
                 with --workspace <folder> to allow it",
                cwd.display(),
                self.roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(real)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, AcpSession>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a prompt turn needs of its session, taken when it starts.
#[derive(Clone)]
pub struct SessionView {
    pub id: String,
    pub cwd: PathBuf,
    pub mode: Mode,
    pub config: Arc<Config>,
    pub router: Arc<ModelRouter>,
    pub always_allow: bool,
}

fn find<'a>(
    sessions: &'a mut HashMap<String, AcpSession>,
    id: &SessionId,
) -> Result<&'a mut AcpSession, Rejected> {
    let id = id.0.as_ref();
    sessions.get_mut(id).ok_or_else(|| {
        Rejected::NotFound(format!(
            "no session {id:?}; create one with session/new (or session/load) first"
        ))
    })
}

fn open_session(
    id: String,
    cwd: PathBuf,
    mode: Mode,
    turns: Vec<SessionTurn>,
    created_at: String,
) -> AcpSession {
    let config = load_config(&cwd);
    let router = Arc::new(ModelRouter::new(config.clone()));
    AcpSession {
        id,
        cwd,
        mode,
        config: Arc::new(config),
        router,
        running: None,
        always_allow: false,
        turns,
        created_at,
    }
}

/// The configuration of a folder: the user's file, then the folder's `.patchwise/config.toml`.
fn load_config(cwd: &Path) -> Config {
    let (config, problems) = Config::load_from(&ConfigPaths::standard(Some(cwd)));
    for p in &problems {
        match p.severity {
            Severity::Error => tracing::error!("configuration: {p}"),
            _ => tracing::warn!("configuration: {p}"),
        }
    }
    config
}

fn modes(current: Mode) -> SessionModeState {
    SessionModeState::new(
        SessionModeId::new(current.id()),
        Mode::ALL
            .into_iter()
            .map(|m| {
                SessionMode::new(SessionModeId::new(m.id()), m.name()).description(m.description())
            })
            .collect(),
    )
}
