//! Configuration: which model servers exist, which model plays which role, timeouts, retries
//! and budgets — layered from TOML files and the editor's settings.
//!
//! Layers, later wins: built-in defaults, the user file (`$XDG_CONFIG_HOME/patchwise/config.toml`),
//! the workspace file (`.patchwise/config.toml`), then JSON from the client
//! (`initializationOptions`, `workspace/didChangeConfiguration`) through [`Config::merge_json`].
//! Loading never fails: unknown keys and bad values become [`ConfigProblem`]s naming the file, the
//! key and what is allowed, and the value is ignored — the server must still start.
//!
//! API keys are never part of the configuration: a provider names an environment variable
//! (`api_key_env`), and the key is read from it when a request is made, wrapped in [`Secret`].
//! Tables owned by other modules (`research`, `edit`, `lsp`, ...) are kept raw in
//! [`Config::sections`] for those modules to validate.
//!
//! # Reference
//!
//! ```toml
//! data_dir = "~/.local/share/patchwise"   # relative paths are relative to this file
//!
//! [providers.local]                 # any name of letters, digits, '-', '_', '.'
//! kind = "openai"                   # openai (default) | anthropic | gemini
//! base_url = "http://127.0.0.1:11434/v1"   # default: the kind's public API
//! api_key_env = "OPENAI_API_KEY"    # the variable's NAME; default per kind, none for
//!                                   # loopback servers; "" never sends a key
//! tools = "native"                  # native | text (tools taught in the prompt)
//!
//! [roles]                           # provider/model; unset roles use coder
//! coder = "local/qwen2.5-coder:7b"  # "local" alone: the first model the server lists
//! planner = "local/qwen2.5-coder:7b"
//! judge = "local/qwen2.5-coder:7b"
//! escalation = "local/qwen2.5-coder:32b"
//!
//! [models."qwen2.5-coder:7b"]       # or "provider/model"
//! context_window = 32768            # default: built-in table (local servers: at most 8192)
//! max_output_tokens = 2048          # reserved for the answer when a request sets none
//!
//! [timeouts]                        # seconds
//! connect = 10
//! first_token = 180                 # also the longest silence allowed mid-answer
//! total = 900
//!
//! [retry]
//! max_attempts = 4                  # including the first
//! initial_backoff_ms = 500          # doubles per attempt; Retry-After wins
//! max_backoff_ms = 30000
//! ```
//!
//! Without any provider, `ollama` (`http://127.0.0.1:11434/v1`) then `lmstudio`
//! (`http://127.0.0.1:1234/v1`) are tried, each with the first model it lists.

mod secret;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

pub use secret::Secret;

/// The workspace file, relative to the workspace root.
pub const WORKSPACE_CONFIG: &str = ".patchwise/config.toml";

/// The built-in OpenAI-compatible servers tried, in order, when no provider is configured.
pub const DEFAULT_LOCAL_SERVERS: [(&str, &str); 2] = [
    ("ollama", "http://127.0.0.1:11434/v1"),
    ("lmstudio", "http://127.0.0.1:1234/v1"),
];

/// Top-level tables that belong to other modules; kept raw, never warned about here.
pub const RESERVED_SECTIONS: [&str; 7] = [
    "research", "edit", "lsp", "store", "tools", "workflow", "develop",
];

const TOP_LEVEL_KEYS: [&str; 6] = [
    "providers",
    "roles",
    "models",
    "timeouts",
    "retry",
    "data_dir",
];

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// `POST {base_url}/chat/completions`: OpenAI, Ollama, LM Studio, llama.cpp, vLLM, OpenRouter.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages API.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
}

impl ProviderKind {
    pub const NAMES: [&'static str; 3] = ["openai", "anthropic", "gemini"];

    pub fn parse(text: &str) -> Option<ProviderKind> {
        match text {
            "openai" => Some(ProviderKind::OpenAi),
            "anthropic" => Some(ProviderKind::Anthropic),
            "gemini" => Some(ProviderKind::Gemini),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
        }
    }

    /// The base URL used when a provider of this kind sets none.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Gemini => "https://generativelanguage.googleapis.com/v1beta",
        }
    }

    /// The environment variable read for the key when a provider names none.
    pub fn default_key_env(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Gemini => "GEMINI_API_KEY",
        }
    }
}

/// How tool calls travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolMode {
    /// The provider's native tool calling (and JSON-in-text calls are still recognised).
    #[default]
    Native,
    /// Tools are described in the system prompt and called with fenced blocks in the text.
    Text,
}

/// One `[providers.NAME]` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// `None`: the kind's default ([`ProviderKind::default_base_url`]).
    pub base_url: Option<String>,
    /// The environment variable holding the key. `None`: the kind's default, except for servers on
    /// this machine (loopback), which get no key unless one is named. `Some("")`: never send a key.
    pub api_key_env: Option<String>,
    pub tools: ToolMode,
}

impl ProviderConfig {
    pub fn new(kind: ProviderKind, base_url: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            kind,
            base_url: base_url.map(str::to_owned),
            api_key_env: None,
            tools: ToolMode::Native,
        }
    }

    /// The base URL without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .unwrap_or(self.kind.default_base_url())
            .trim_end_matches('/')
    }

    /// The name of the environment variable the key is read from, if any.
    pub fn key_env(&self) -> Option<&str> {
        match self.api_key_env.as_deref() {
            Some("") => None,
            Some(name) => Some(name),
            None if is_loopback_url(self.base_url()) => None,
            None => Some(self.kind.default_key_env()),
        }
    }

    /// The API key, read from the environment now. Empty variables count as unset.
    pub fn api_key(&self) -> Option<Secret> {
        let name = self.key_env()?;
        match std::env::var(name) {
            Ok(value) if !value.trim().is_empty() => Some(Secret::new(value.trim())),
            _ => None,
        }
    }
}

/// The jobs a model is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelRole {
    /// Writes edits; every other role falls back to it.
    Coder,
    /// Plans multi-step work.
    Planner,
    /// Judges results.
    Judge,
    /// A stronger model for the last retry.
    Escalation,
}

impl ModelRole {
    pub const ALL: [ModelRole; 4] = [
        ModelRole::Coder,
        ModelRole::Planner,
        ModelRole::Judge,
        ModelRole::Escalation,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ModelRole::Coder => "coder",
            ModelRole::Planner => "planner",
            ModelRole::Judge => "judge",
            ModelRole::Escalation => "escalation",
        }
    }

    pub fn parse(text: &str) -> Option<ModelRole> {
        ModelRole::ALL.into_iter().find(|r| r.name() == text)
    }
}

impl fmt::Display for ModelRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `provider/model`. The model may itself contain slashes (`openrouter/qwen/qwen-2.5-coder`);
/// an empty model means "the first model the server lists".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoleTarget {
    pub provider: String,
    pub model: String,
}

impl RoleTarget {
    /// Parses `provider/model` (or a bare provider name).
    pub fn parse(text: &str) -> Result<RoleTarget, String> {
        let text = text.trim();
        let (provider, model) = text.split_once('/').unwrap_or((text, ""));
        if !valid_name(provider) {
            return Err(format!(
                "expected \"provider/model\" (e.g. \"local/qwen2.5-coder:7b\"), found {text:?}"
            ));
        }
        Ok(RoleTarget {
            provider: provider.to_owned(),
            model: model.trim().to_owned(),
        })
    }
}

impl fmt::Display for RoleTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.model.is_empty() {
            write!(f, "{}/(first listed model)", self.provider)
        } else {
            write!(f, "{}/{}", self.provider, self.model)
        }
    }
}

/// `[models."NAME"]`: per-model settings; NAME is the model as the role names it, with or
/// without the `provider/` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ModelSettings {
    pub context_window: Option<usize>,
    pub max_output_tokens: Option<u32>,
}

/// `[timeouts]`, in seconds in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Timeouts {
    /// Establishing the connection.
    pub connect: Duration,
    /// From sending the request to the first answer event (local models on a CPU spend a long
    /// time reading the prompt before the first token).
    pub first_token: Duration,
    /// The whole answer.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(10),
            first_token: Duration::from_secs(180),
            total: Duration::from_secs(900),
        }
    }
}

/// `[retry]`: exponential backoff for 429, 5xx and transport faults before any output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RetryPolicy {
    /// Attempts in all, including the first.
    pub max_attempts: u32,
    pub initial_backoff: Duration,
    /// Cap for one wait, including a server's `Retry-After`.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// Where a value came from, for `patchwise doctor` and for problem reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "name")]
pub enum ValueSource {
    Default,
    File(PathBuf),
    /// The editor's settings; the name says which message carried them.
    Client(String),
}

impl fmt::Display for ValueSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueSource::Default => f.write_str("default"),
            ValueSource::File(path) => write!(f, "{}", path.display()),
            ValueSource::Client(name) => f.write_str(name),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Ignored (an unknown key, perhaps a typo or a newer version's setting).
    Warning,
    /// A value that was rejected; the previous layer's value stays.
    Error,
}

/// Something wrong in a configuration layer. The server starts anyway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigProblem {
    pub severity: Severity,
    pub source: ValueSource,
    /// Dotted key, e.g. `providers.local.kind`; empty for the whole file.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        if self.key.is_empty() {
            write!(f, "{level}: {}: {}", self.source, self.message)
        } else {
            write!(
                f,
                "{level}: {}: {}: {}",
                self.source, self.key, self.message
            )
        }
    }
}

/// Where configuration files are looked for.
#[derive(Debug, Clone, Default)]
pub struct ConfigPaths {
    /// The user file; `None` skips it.
    pub user: Option<PathBuf>,
    /// The workspace file; `None` skips it.
    pub workspace: Option<PathBuf>,
}

impl ConfigPaths {
    /// The standard locations for a workspace root (or none).
    pub fn standard(workspace_root: Option<&Path>) -> ConfigPaths {
        ConfigPaths {
            user: user_config_path(),
            workspace: workspace_root.map(|root| root.join(WORKSPACE_CONFIG)),
        }
    }
}

/// `$XDG_CONFIG_HOME/patchwise/config.toml`, else the platform's config directory
/// (`~/.config/patchwise/config.toml` on Linux).
pub fn user_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(dirs::config_dir)?;
    Some(base.join("patchwise").join("config.toml"))
}

/// The resolved configuration. Its `Debug` output names the raw sections without their values
/// (they belong to other modules and could hold anything a user typed).
#[derive(Clone, PartialEq, Default, Serialize)]
pub struct Config {
    /// Configured providers by name. Empty means the built-in local servers are used
    /// (see [`Config::effective_providers`]).
    pub providers: BTreeMap<String, ProviderConfig>,
    pub roles: BTreeMap<ModelRole, RoleTarget>,
    pub models: BTreeMap<String, ModelSettings>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    /// Where the database and reports live; `None`: [`Config::data_dir`]'s default.
    pub data_dir: Option<PathBuf>,
    /// Tables owned by other modules (`research`, `edit`, `lsp`, ...), merged across layers.
    pub sections: BTreeMap<String, Value>,
    /// Where each value that is not a default came from, by dotted key.
    pub sources: BTreeMap<String, ValueSource>,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("providers", &self.providers)
            .field("roles", &self.roles)
            .field("models", &self.models)
            .field("timeouts", &self.timeouts)
            .field("retry", &self.retry)
            .field("data_dir", &self.data_dir)
            .field("sections", &self.sections.keys().collect::<Vec<_>>())
            .field("sources", &self.sources)
            .finish()
    }
}

impl Config {
    /// Loads the standard files for `workspace_root`.
    pub fn load(workspace_root: Option<&Path>) -> (Config, Vec<ConfigProblem>) {
        Config::load_from(&ConfigPaths::standard(workspace_root))
    }

    /// Loads the user file then the workspace file; missing files are skipped silently.
    pub fn load_from(paths: &ConfigPaths) -> (Config, Vec<ConfigProblem>) {
        let mut config = Config::default();
        let mut problems = Vec::new();
        for path in [&paths.user, &paths.workspace].into_iter().flatten() {
            let source = ValueSource::File(path.clone());
            match std::fs::read_to_string(path) {
                Ok(text) => config.apply_toml(&text, &source, &mut problems),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => problems.push(ConfigProblem {
                    severity: Severity::Error,
                    source,
                    key: String::new(),
                    message: format!("cannot read the file: {err}; the file is ignored"),
                }),
            }
        }
        config.validate(&mut problems);
        (config, problems)
    }

    /// Parses one TOML text as a layer over the defaults (for tests and tools).
    pub fn from_toml_str(text: &str, source: ValueSource) -> (Config, Vec<ConfigProblem>) {
        let mut config = Config::default();
        let mut problems = Vec::new();
        config.apply_toml(text, &source, &mut problems);
        config.validate(&mut problems);
        (config, problems)
    }

    /// Overrides values with the editor's settings (`initializationOptions` or the `settings` of
    /// `workspace/didChangeConfiguration`), which have the same shape as the TOML file. A value
    /// with a `"patchwise"` table uses that table (other editors' keys beside it are ignored);
    /// `null` changes nothing.
    ///
    /// Layers only add: to drop a value the client removed, reload the files with
    /// [`Config::load`] and merge the client's current settings again.
    pub fn merge_json(&mut self, value: &Value) -> Vec<ConfigProblem> {
        self.merge_json_from(value, "client settings")
    }

    /// [`Config::merge_json`] naming the message the settings came from.
    pub fn merge_json_from(&mut self, value: &Value, origin: &str) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        let source = ValueSource::Client(origin.to_owned());
        let value = match value {
            Value::Null => return problems,
            // Editors send all settings at once; ours sit under "patchwise".
            Value::Object(map) if map.get("patchwise").is_some_and(Value::is_object) => {
                &map["patchwise"]
            }
            other => other,
        };
        if !value.is_null() {
            self.apply_layer(value, &source, &mut problems);
        }
        self.validate(&mut problems);
        problems
    }

    /// The providers in use: the configured ones, or the built-in local servers when none is.
    pub fn effective_providers(&self) -> BTreeMap<String, ProviderConfig> {
        if !self.providers.is_empty() {
            return self.providers.clone();
        }
        DEFAULT_LOCAL_SERVERS
            .iter()
            .map(|(name, url)| {
                (
                    (*name).to_owned(),
                    ProviderConfig::new(ProviderKind::OpenAi, Some(url)),
                )
            })
            .collect()
    }

    /// The targets to try for `role`, in order, and the role whose setting they come from
    /// (`coder` when `role` is unset). Without any role set, each provider is tried with the
    /// first model it lists — the built-in local servers when nothing is configured.
    pub fn role_candidates(&self, role: ModelRole) -> (ModelRole, Vec<RoleTarget>) {
        if let Some(target) = self.roles.get(&role) {
            return (role, vec![target.clone()]);
        }
        if let Some(target) = self.roles.get(&ModelRole::Coder) {
            return (ModelRole::Coder, vec![target.clone()]);
        }
        let mut names: Vec<String> = self.effective_providers().into_keys().collect();
        if self.providers.is_empty() {
            names = DEFAULT_LOCAL_SERVERS
                .iter()
                .map(|(n, _)| (*n).to_owned())
                .collect();
        }
        let targets = names
            .into_iter()
            .map(|provider| RoleTarget {
                provider,
                model: String::new(),
            })
            .collect();
        (ModelRole::Coder, targets)
    }

    /// Settings for `model` served by `provider` (`[models."provider/model"]` wins over
    /// `[models."model"]`).
    pub fn model_settings(&self, provider: &str, model: &str) -> ModelSettings {
        let full = self.models.get(&format!("{provider}/{model}"));
        let bare = self.models.get(model);
        ModelSettings {
            context_window: full
                .and_then(|s| s.context_window)
                .or(bare.and_then(|s| s.context_window)),
            max_output_tokens: full
                .and_then(|s| s.max_output_tokens)
                .or(bare.and_then(|s| s.max_output_tokens)),
        }
    }

    /// The data directory: configured, else the platform's data directory
    /// (`~/.local/share/patchwise` on Linux), else `.patchwise/data` under the current directory.
    pub fn data_dir(&self) -> PathBuf {
        self.data_dir.clone().unwrap_or_else(|| {
            dirs::data_dir()
                .map(|d| d.join("patchwise"))
                .unwrap_or_else(|| PathBuf::from(".patchwise").join("data"))
        })
    }

    /// The source of a dotted key (`default` when no layer set it).
    pub fn source_of(&self, key: &str) -> ValueSource {
        self.sources
            .get(key)
            .cloned()
            .unwrap_or(ValueSource::Default)
    }

    fn apply_toml(&mut self, text: &str, source: &ValueSource, problems: &mut Vec<ConfigProblem>) {
        let table: toml::Table = match toml::from_str(text) {
            Ok(table) => table,
            Err(err) => {
                let message = err.to_string();
                problems.push(ConfigProblem {
                    severity: Severity::Error,
                    source: source.clone(),
                    key: String::new(),
                    message: format!(
                        "invalid TOML, the file is ignored: {}",
                        message.trim_end().replace('\n', " ")
                    ),
                });
                return;
            }
        };
        match serde_json::to_value(table) {
            Ok(value) => self.apply_layer(&value, source, problems),
            Err(err) => problems.push(ConfigProblem {
                severity: Severity::Error,
                source: source.clone(),
                key: String::new(),
                message: format!("cannot read the file's values: {err}; the file is ignored"),
            }),
        }
    }

    fn apply_layer(
        &mut self,
        root: &Value,
        source: &ValueSource,
        problems: &mut Vec<ConfigProblem>,
    ) {
        let mut layer = Layer {
            check: Checker { source, problems },
            sources: &mut self.sources,
        };
        let Some(root) = layer.object("", root) else {
            return;
        };
        for (key, value) in root {
            match key.as_str() {
                "providers" => {
                    let Some(map) = layer.object(key, value) else {
                        continue;
                    };
                    for (name, table) in map {
                        let path = format!("providers.{name}");
                        if !valid_name(name) {
                            layer.error(
                                &path,
                                format!(
                                    "expected a provider name of letters, digits, '-', '_' or '.', found {name:?}"
                                ),
                            );
                            continue;
                        }
                        let Some(table) = layer.object(&path, table) else {
                            continue;
                        };
                        let mut provider = self
                            .providers
                            .get(name)
                            .cloned()
                            .unwrap_or_else(|| ProviderConfig::new(ProviderKind::OpenAi, None));
                        layer.provider(&path, table, &mut provider);
                        self.providers.insert(name.clone(), provider);
                    }
                }
                "roles" => {
                    let Some(map) = layer.object(key, value) else {
                        continue;
                    };
                    for (name, target) in map {
                        let path = format!("roles.{name}");
                        let Some(role) = ModelRole::parse(name) else {
                            layer.unknown(&path, &ModelRole::ALL.map(ModelRole::name));
                            continue;
                        };
                        let Some(text) = layer.string(&path, target) else {
                            continue;
                        };
                        match RoleTarget::parse(text) {
                            Ok(t) => {
                                self.roles.insert(role, t);
                                layer.set(&path);
                            }
                            Err(message) => layer.error(&path, message),
                        }
                    }
                }
                "models" => {
                    let Some(map) = layer.object(key, value) else {
                        continue;
                    };
                    for (name, table) in map {
                        let path = format!("models.{name}");
                        let Some(table) = layer.object(&path, table) else {
                            continue;
                        };
                        let mut settings = self.models.get(name).copied().unwrap_or_default();
                        for (field, v) in table {
                            let fpath = format!("{path}.{field}");
                            match field.as_str() {
                                "context_window" => {
                                    if let Some(n) = layer.integer(&fpath, v, 256, 100_000_000) {
                                        settings.context_window = Some(n as usize);
                                        layer.set(&fpath);
                                    }
                                }
                                "max_output_tokens" => {
                                    if let Some(n) = layer.integer(&fpath, v, 1, u32::MAX as u64) {
                                        settings.max_output_tokens = Some(n as u32);
                                        layer.set(&fpath);
                                    }
                                }
                                _ => {
                                    layer.unknown(&fpath, &["context_window", "max_output_tokens"])
                                }
                            }
                        }
                        self.models.insert(name.clone(), settings);
                    }
                }
                "timeouts" => {
                    let Some(map) = layer.object(key, value) else {
                        continue;
                    };
                    for (field, v) in map {
                        let path = format!("timeouts.{field}");
                        let slot = match field.as_str() {
                            "connect" => &mut self.timeouts.connect,
                            "first_token" => &mut self.timeouts.first_token,
                            "total" => &mut self.timeouts.total,
                            _ => {
                                layer.unknown(&path, &["connect", "first_token", "total"]);
                                continue;
                            }
                        };
                        if let Some(d) = layer.seconds(&path, v) {
                            *slot = d;
                            layer.set(&path);
                        }
                    }
                }
                "retry" => {
                    let Some(map) = layer.object(key, value) else {
                        continue;
                    };
                    for (field, v) in map {
                        let path = format!("retry.{field}");
                        match field.as_str() {
                            "max_attempts" => {
                                if let Some(n) = layer.integer(&path, v, 1, 20) {
                                    self.retry.max_attempts = n as u32;
                                    layer.set(&path);
                                }
                            }
                            "initial_backoff_ms" => {
                                if let Some(n) = layer.integer(&path, v, 0, 600_000) {
                                    self.retry.initial_backoff = Duration::from_millis(n);
                                    layer.set(&path);
                                }
                            }
                            "max_backoff_ms" => {
                                if let Some(n) = layer.integer(&path, v, 0, 3_600_000) {
                                    self.retry.max_backoff = Duration::from_millis(n);
                                    layer.set(&path);
                                }
                            }
                            _ => layer.unknown(
                                &path,
                                &["max_attempts", "initial_backoff_ms", "max_backoff_ms"],
                            ),
                        }
                    }
                }
                "data_dir" => {
                    if let Some(text) = layer.string(key, value) {
                        if text.trim().is_empty() {
                            layer.error(
                                key,
                                "expected a directory path, found an empty string".into(),
                            );
                            continue;
                        }
                        self.data_dir = Some(resolve_path(text, source));
                        layer.set(key);
                    }
                }
                name if RESERVED_SECTIONS.contains(&name) => {
                    let slot = self.sections.entry(name.to_owned()).or_insert(Value::Null);
                    deep_merge(slot, value);
                    layer.set(name);
                }
                _ => {
                    let mut allowed: Vec<&str> = TOP_LEVEL_KEYS.to_vec();
                    allowed.extend(RESERVED_SECTIONS);
                    layer.unknown(key, &allowed);
                }
            }
        }
    }

    /// Cross-layer checks: roles must name a known provider.
    fn validate(&mut self, problems: &mut Vec<ConfigProblem>) {
        let providers = self.effective_providers();
        let mut bad = Vec::new();
        for (role, target) in &self.roles {
            if !providers.contains_key(&target.provider) {
                let key = format!("roles.{role}");
                let known: Vec<&str> = providers.keys().map(String::as_str).collect();
                problems.push(ConfigProblem {
                    severity: Severity::Error,
                    source: self.source_of(&key),
                    key,
                    message: format!(
                        "expected a configured provider before the '/', found {:?}; providers: {}",
                        target.provider,
                        known.join(", ")
                    ),
                });
                bad.push(*role);
            }
        }
        for role in bad {
            self.roles.remove(&role);
        }
    }
}

/// Checks values of one configuration source and records every rejection as a
/// [`ConfigProblem`] naming the source, the key and what is allowed. Shared by every module that
/// owns a table of the file (`[research]`, …), so all problems read alike.
pub struct Checker<'a> {
    pub source: &'a ValueSource,
    pub problems: &'a mut Vec<ConfigProblem>,
}

impl Checker<'_> {
    pub fn error(&mut self, key: &str, message: String) {
        self.problems.push(ConfigProblem {
            severity: Severity::Error,
            source: self.source.clone(),
            key: key.to_owned(),
            message,
        });
    }

    pub fn unknown(&mut self, key: &str, allowed: &[&str]) {
        self.problems.push(ConfigProblem {
            severity: Severity::Warning,
            source: self.source.clone(),
            key: key.to_owned(),
            message: format!("unknown key, ignored; allowed here: {}", allowed.join(", ")),
        });
    }

    pub fn object<'v>(&mut self, key: &str, value: &'v Value) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(map) => Some(map),
            other => {
                self.error(key, format!("expected a table, found {}", describe(other)));
                None
            }
        }
    }

    pub fn string<'v>(&mut self, key: &str, value: &'v Value) -> Option<&'v str> {
        match value {
            Value::String(s) => Some(s),
            other => {
                self.error(key, format!("expected a string, found {}", describe(other)));
                None
            }
        }
    }

    pub fn integer(&mut self, key: &str, value: &Value, min: u64, max: u64) -> Option<u64> {
        match value.as_u64() {
            Some(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                self.error(
                    key,
                    format!(
                        "expected an integer from {min} to {max}, found {}",
                        describe(value)
                    ),
                );
                None
            }
        }
    }
}

/// Validation of one layer: a [`Checker`] that also records where each accepted value came from.
struct Layer<'a> {
    check: Checker<'a>,
    sources: &'a mut BTreeMap<String, ValueSource>,
}

impl<'a> std::ops::Deref for Layer<'a> {
    type Target = Checker<'a>;
    fn deref(&self) -> &Checker<'a> {
        &self.check
    }
}

impl<'a> std::ops::DerefMut for Layer<'a> {
    fn deref_mut(&mut self) -> &mut Checker<'a> {
        &mut self.check
    }
}

impl Layer<'_> {
    fn set(&mut self, key: &str) {
        self.sources
            .insert(key.to_owned(), self.check.source.clone());
    }

    fn object<'v>(&mut self, key: &str, value: &'v Value) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(map) => Some(map),
            other => {
                let what = if key.is_empty() {
                    "settings"
                } else {
                    "this key"
                };
                self.error(
                    key,
                    format!("expected a table for {what}, found {}", describe(other)),
                );
                None
            }
        }
    }

    fn seconds(&mut self, key: &str, value: &Value) -> Option<Duration> {
        match value.as_f64() {
            Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => {
                Some(Duration::from_secs_f64(s))
            }
            _ => {
                self.error(
                    key,
                    format!(
                        "expected a number of seconds above 0 and at most 86400, found {}",
                        describe(value)
                    ),
                );
                None
            }
        }
    }

    fn provider(&mut self, path: &str, table: &Map<String, Value>, provider: &mut ProviderConfig) {
        for (field, v) in table {
            let fpath = format!("{path}.{field}");
            match field.as_str() {
                "kind" => {
                    let Some(text) = self.string(&fpath, v) else {
                        continue;
                    };
                    match ProviderKind::parse(text) {
                        Some(kind) => {
                            provider.kind = kind;
                            self.set(&fpath);
                        }
                        None => self.error(
                            &fpath,
                            format!(
                                "expected one of {}, found {text:?}",
                                ProviderKind::NAMES.join(", ")
                            ),
                        ),
                    }
                }
                "base_url" => {
                    let Some(text) = self.string(&fpath, v) else {
                        continue;
                    };
                    let text = text.trim();
                    if !(text.starts_with("http://") || text.starts_with("https://"))
                        || text.len() <= "https://".len()
                    {
                        self.error(
                            &fpath,
                            format!("expected an http:// or https:// URL, found {text:?}"),
                        );
                        continue;
                    }
                    provider.base_url = Some(text.trim_end_matches('/').to_owned());
                    self.set(&fpath);
                }
                "api_key_env" => {
                    let Some(text) = self.string(&fpath, v) else {
                        continue;
                    };
                    let ok = text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                    if !ok {
                        // Quoting the value could print a key pasted here by mistake.
                        self.error(
                            &fpath,
                            "expected the NAME of an environment variable (letters, digits, '_'), not a key; the value is not shown".to_owned(),
                        );
                        continue;
                    }
                    provider.api_key_env = Some(text.to_owned());
                    self.set(&fpath);
                }
                "tools" => {
                    let Some(text) = self.string(&fpath, v) else {
                        continue;
                    };
                    match text {
                        "native" => provider.tools = ToolMode::Native,
                        "text" => provider.tools = ToolMode::Text,
                        other => {
                            self.error(
                                &fpath,
                                format!("expected one of native, text, found {other:?}"),
                            );
                            continue;
                        }
                    }
                    self.set(&fpath);
                }
                "api_key" | "key" | "token" => {
                    self.error(
                        &fpath,
                        "keys are never read from configuration; put the key in an environment variable and name it with api_key_env (the value is not shown)".to_owned(),
                    );
                }
                _ => self.unknown(&fpath, &["kind", "base_url", "api_key_env", "tools"]),
            }
        }
    }
}

/// A value as a problem message names it.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.chars().count() > 40 => "a long string".to_owned(),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "a table".to_owned(),
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn deep_merge(slot: &mut Value, value: &Value) {
    match (slot, value) {
        (Value::Object(into), Value::Object(from)) => {
            for (k, v) in from {
                deep_merge(into.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (slot, value) => *slot = value.clone(),
    }
}

/// `~/x` is under the home directory; a relative path in a file is relative to that file's
/// directory (so `.patchwise/config.toml` can say `data_dir = "data"`).
fn resolve_path(text: &str, source: &ValueSource) -> PathBuf {
    let text = text.trim();
    if let Some(rest) = text.strip_prefix("~/")
        && let Some(home) = dirs::home_dir()
    {
        return home.join(rest);
    }
    let path = PathBuf::from(text);
    match source {
        ValueSource::File(file) if path.is_relative() => {
            file.parent().map(|dir| dir.join(&path)).unwrap_or(path)
        }
        _ => path,
    }
}

/// Whether `url` points at this machine (no key is sent there unless one is named).
pub fn is_loopback_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    let host = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    host.eq_ignore_ascii_case("localhost")
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests;
