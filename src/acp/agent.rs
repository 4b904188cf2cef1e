//! The agent's state and what each ACP request does: the client's capabilities from
//! `initialize`, the sessions (folder, mode, conversation, the run in flight), and the checks
//! that turn bad requests into JSON-RPC errors while the agent keeps serving.
//!
//! A session has two options (ACP's session config options, the `modes` older clients read kept in
//! step with the first): `mode` (develop, edit, research) and `model` (`roles`: each role its
//! configured model; or one `provider/model` that answers for every role). The model choices are
//! the models the configuration's roles name, then the models listed by the providers whose model
//! the configuration leaves open — servers asked for their list, the embedded model by its file
//! (after the session answered; a `config_option_update` brings what they list).
//!
//! A session works in its `cwd`, which must lie inside one of the folders `patchwise acp` was
//! given (`--workspace`, default the current directory): that folder is the sandbox of every run
//! of the session, as the workspace folder is for the LSP and MCP edges.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, ClientCapabilities, ConfigOptionUpdate, ContentBlock, ContentChunk,
    CurrentModeUpdate, Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption, SessionId, SessionMode, SessionModeId, SessionModeState,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse, TextContent,
};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConfigPaths, ModelRole, RoleTarget, Severity};
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

/// The `model` option's value that leaves each role its configured model.
pub const ROLES: &str = "roles";
/// The session config options' ids.
pub const MODE_OPTION: &str = "mode";
pub const MODEL_OPTION: &str = "model";

/// One choice of the `model` option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOffer {
    /// [`ROLES`] or `provider/model`.
    pub value: String,
    pub name: String,
    pub description: String,
}

/// One session.
pub struct AcpSession {
    pub id: String,
    pub cwd: PathBuf,
    pub mode: Mode,
    /// The folder's configuration as loaded; `config` is it with the chosen model.
    pub base: Arc<Config>,
    /// The `model` option's value: [`ROLES`] or one of `models`.
    pub model: String,
    /// The `model` option's choices.
    pub models: Vec<ModelOffer>,
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
        let (modes, options) = (modes(session.mode), config_options(&session));
        self.lock().insert(id.clone(), session);
        tracing::info!(session = %id, "ACP session started");
        Ok(NewSessionResponse::new(SessionId::new(id))
            .modes(modes)
            .config_options(options))
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
        restore_model(&mut session, &record.model);
        let mut sessions = self.lock();
        if sessions.get(&id).is_some_and(|s| s.running.is_some()) {
            return Err(Rejected::InvalidParams(format!(
                "session {id} is running a prompt; cancel it before loading it again"
            )));
        }
        let response = LoadSessionResponse::new()
            .modes(modes(mode))
            .config_options(config_options(&session));
        sessions.insert(id, session);
        Ok((response, replay))
    }

    /// `session/set_mode` (older clients); the update that keeps the config options in step.
    pub fn set_mode(
        &self,
        request: &SetSessionModeRequest,
    ) -> Result<(SetSessionModeResponse, SessionUpdate), Rejected> {
        let mode = mode_of(&request.mode_id.0)?;
        let (update, kept) = {
            let mut sessions = self.lock();
            let session = find(&mut sessions, &request.session_id)?;
            session.mode = mode;
            let update =
                SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(config_options(session)));
            (update, kept(session))
        };
        save(kept);
        Ok((SetSessionModeResponse::new(), update))
    }

    /// `session/set_config_option`: `mode` or `model`, to one of its listed values. A mode
    /// change also returns the `current_mode_update` that keeps older clients' modes in step.
    /// A refused request leaves the session as it was.
    pub fn set_config_option(
        &self,
        request: &SetSessionConfigOptionRequest,
    ) -> Result<(SetSessionConfigOptionResponse, Option<SessionUpdate>), Rejected> {
        let id = request.config_id.0.as_ref();
        let value = match &request.value {
            SessionConfigOptionValue::ValueId { value } => value.0.to_string(),
            other => {
                return Err(Rejected::InvalidParams(format!(
                    "option {id:?} takes one of its listed values (a string), found {}",
                    serde_json::to_string(other).unwrap_or_default()
                )));
            }
        };
        let mut sessions = self.lock();
        let session = find(&mut sessions, &request.session_id)?;
        let update = match id {
            MODE_OPTION => {
                session.mode = mode_of(&value)?;
                Some(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                    SessionModeId::new(session.mode.id()),
                )))
            }
            MODEL_OPTION => {
                if !session.models.iter().any(|m| m.value == value) {
                    return Err(Rejected::InvalidParams(format!(
                        "unknown value {value:?} for option \"model\"; the values are {}",
                        session
                            .models
                            .iter()
                            .map(|m| m.value.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                choose_model(session, value);
                None
            }
            _ => {
                return Err(Rejected::InvalidParams(format!(
                    "unknown config option {id:?}; the options are {MODE_OPTION}, {MODEL_OPTION}"
                )));
            }
        };
        tracing::info!(session = %session.id, option = id, "session option set");
        let response = SetSessionConfigOptionResponse::new(config_options(session));
        let kept = kept(session);
        drop(sessions);
        save(kept);
        Ok((response, update))
    }

    /// Asks the servers whose model the session's configuration leaves open which models they
    /// serve, and adds them to the `model` option; the update to send when it gained any.
    pub async fn list_served_models(&self, id: &str) -> Option<SessionUpdate> {
        let base = self.lock().get(id)?.base.clone();
        let open = open_providers(&base);
        if open.is_empty() {
            return None;
        }
        let timeout = base.timeouts.connect.min(std::time::Duration::from_secs(5));
        let base = &base;
        let listed = futures::future::join_all(open.iter().map(|(name, provider)| async move {
            let probed = crate::model::roles::probe_provider(base, provider, timeout).await;
            if let Some(err) = &probed.error {
                tracing::debug!(provider = %name, "no model list: {err}");
            }
            let embedded = provider.kind == crate::config::ProviderKind::Embedded;
            (name.clone(), embedded, probed)
        }))
        .await;
        let mut sessions = self.lock();
        let session = sessions.get_mut(id)?;
        let before = session.models.len();
        for (provider, embedded, probed) in listed {
            for model in probed.models {
                let value = format!("{provider}/{model}");
                if session.models.iter().any(|m| m.value == value) {
                    continue;
                }
                let source = if embedded {
                    format!("The model inside patchwise ({})", probed.url)
                } else {
                    format!(
                        "Listed by {provider} ({})",
                        probed.url.trim_end_matches("/models")
                    )
                };
                session.models.push(ModelOffer {
                    description: format!("{source}; chosen, it answers for every role"),
                    name: value.clone(),
                    value,
                });
            }
        }
        (session.models.len() > before).then(|| {
            SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(config_options(session)))
        })
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
        let kept = {
            let mut sessions = self.lock();
            let Some(session) = sessions.get_mut(id) else {
                return;
            };
            session.running = None;
            session.always_allow |= always_allow;
            session.turns.extend(turns);
            kept(session)
        };
        save(kept);
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
    let config = Arc::new(load_config(&cwd));
    let router = Arc::new(ModelRouter::new((*config).clone()));
    AcpSession {
        id,
        cwd,
        mode,
        models: configured_models(&config),
        model: ROLES.to_owned(),
        base: config.clone(),
        config,
        router,
        running: None,
        always_allow: false,
        turns,
        created_at,
    }
}

/// The session as the library keeps it, and the configuration that says where the library is.
fn kept(session: &AcpSession) -> (SessionRecord, Arc<Config>) {
    (
        SessionRecord {
            id: session.id.clone(),
            cwd: session.cwd.display().to_string(),
            mode: session.mode.id().to_owned(),
            model: session.model.clone(),
            created_at: session.created_at.clone(),
            always_allow: session.always_allow,
            turns: session.turns.clone(),
        },
        session.base.clone(),
    )
}

/// Saves a session in the library (when a prompt ends and when an option changes, so a loaded
/// session has the mode and model it was left with); a failure is logged, the session goes on.
fn save((record, config): (SessionRecord, Arc<Config>)) {
    let saved = crate::research::open_library(&config)
        .map_err(|e| e.to_string())
        .and_then(|library| library.save_session(&record).map_err(|e| e.to_string()));
    if let Err(err) = saved {
        tracing::warn!(session = %record.id, "the session was not saved: {err}");
    }
}

/// The mode `id` names, or the error that lists the modes.
fn mode_of(id: &str) -> Result<Mode, Rejected> {
    Mode::from_id(id).ok_or_else(|| {
        Rejected::InvalidParams(format!(
            "unknown mode {id:?}; the modes are {}",
            Mode::ALL.map(Mode::id).join(", ")
        ))
    })
}

/// The `model` option's first choices: [`ROLES`], then each model a role names.
fn configured_models(config: &Config) -> Vec<ModelOffer> {
    let named: Vec<String> = ModelRole::ALL
        .iter()
        .filter_map(|role| Some(format!("{role} {}", config.roles.get(role)?)))
        .collect();
    let mut offers = vec![ModelOffer {
        value: ROLES.to_owned(),
        name: "Configured roles".to_owned(),
        description: if named.is_empty() {
            "No role is configured: the first model the first answering server lists \
             (patchwise doctor shows which)"
                .to_owned()
        } else {
            format!(
                "Each role its configured model ({}; unset roles use the coder's)",
                named.join(", ")
            )
        },
    }];
    // Each model a role names, once, with the roles that name it.
    let mut pinned: Vec<(String, Vec<&str>)> = Vec::new();
    for role in ModelRole::ALL {
        let Some(target) = config.roles.get(&role).filter(|t| !t.model.is_empty()) else {
            continue;
        };
        let value = format!("{}/{}", target.provider, target.model);
        match pinned.iter_mut().find(|(v, _)| *v == value) {
            Some((_, roles)) => roles.push(role.name()),
            None => pinned.push((value, vec![role.name()])),
        }
    }
    offers.extend(pinned.into_iter().map(|(value, roles)| ModelOffer {
        description: format!(
            "The configured {} model; chosen, it answers for every role",
            roles.join(" and ")
        ),
        name: value.clone(),
        value,
    }));
    offers
}

/// The providers whose model a role leaves open (the router asks them for their list too).
fn open_providers(config: &Config) -> Vec<(String, crate::config::ProviderConfig)> {
    let providers = config.effective_providers();
    let mut names: Vec<String> = Vec::new();
    for role in ModelRole::ALL {
        for target in config.role_candidates(role).1 {
            if target.model.is_empty() && !names.contains(&target.provider) {
                names.push(target.provider);
            }
        }
    }
    names
        .into_iter()
        .filter_map(|name| Some((name.clone(), providers.get(&name)?.clone())))
        .collect()
}

/// Makes `value` (one of the session's model choices) the session's model.
fn choose_model(session: &mut AcpSession, value: String) {
    let mut config = (*session.base).clone();
    if let Some(Ok(target)) = (value != ROLES).then(|| RoleTarget::parse(&value)) {
        // Every role falls back to the coder's model.
        config.roles = std::collections::BTreeMap::from([(ModelRole::Coder, target)]);
    }
    session.router = Arc::new(ModelRouter::new(config.clone()));
    session.config = Arc::new(config);
    session.model = value;
}

/// A loaded session's stored model: kept when its provider is still configured (a model a
/// server listed is offered again before the list is asked for), else the configured roles.
fn restore_model(session: &mut AcpSession, stored: &str) {
    if stored.is_empty() || stored == ROLES {
        return;
    }
    let known = session.models.iter().any(|m| m.value == stored);
    let provider = stored.split_once('/').map_or(stored, |(p, _)| p);
    if !known && session.base.effective_providers().contains_key(provider) && stored.contains('/') {
        session.models.push(ModelOffer {
            value: stored.to_owned(),
            name: stored.to_owned(),
            description: "Chosen earlier in this session; it answers for every role".to_owned(),
        });
    } else if !known {
        tracing::warn!(
            session = %session.id,
            "the session's model {stored} is no longer configured; using the configured roles"
        );
        return;
    }
    choose_model(session, stored.to_owned());
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

/// The session's config options: `mode`, then `model`.
pub fn config_options(session: &AcpSession) -> Vec<SessionConfigOption> {
    let modes: Vec<SessionConfigSelectOption> = Mode::ALL
        .into_iter()
        .map(|m| SessionConfigSelectOption::new(m.id(), m.name()).description(m.description()))
        .collect();
    let models: Vec<SessionConfigSelectOption> = session
        .models
        .iter()
        .map(|m| {
            SessionConfigSelectOption::new(m.value.clone(), m.name.clone())
                .description(m.description.clone())
        })
        .collect();
    vec![
        SessionConfigOption::select(MODE_OPTION, "Mode", session.mode.id(), modes)
            .description("What a prompt does".to_owned())
            .category(SessionConfigOptionCategory::Mode),
        SessionConfigOption::select(MODEL_OPTION, "Model", session.model.clone(), models)
            .description("The model that answers".to_owned())
            .category(SessionConfigOptionCategory::Model),
    ]
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
