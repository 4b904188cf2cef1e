//! Configuration: which model servers exist, which model plays which role, timeouts, retries,
//! and the settings of every workflow — layered from TOML files and the editor's settings.
//!
//! Layers, later wins: built-in defaults, the user file (`$XDG_CONFIG_HOME/patchwise/config.toml`),
//! the workspace file (`.patchwise/config.toml`), then JSON from the client
//! (`initializationOptions`, `workspace/didChangeConfiguration`) through [`Config::merge_json`].
//!
//! The file's shape is the types in [`file`]; every layer is validated against the schema
//! generated from them (`validate.rs`) before it is merged, so a typo, a wrong type or a value out
//! of range becomes a [`ConfigProblem`] naming the source, the key, what was found and what is
//! allowed (with a did-you-mean), and the value is ignored. Loading never fails: the server must
//! still start. Workflows read typed sections ([`Config::edit`], [`Config::research`],
//! [`Config::develop`], [`Config::tools`]), never raw tables. The reference page,
//! `docs/configuration.md`, and the schema, `docs/config.schema.json`, are generated from the same
//! types ([`reference`]).
//!
//! API keys are never part of the configuration: a provider names an environment variable
//! (`api_key_env`), and the key is read from it when a request is made, wrapped in [`Secret`].

pub mod file;
pub mod reference;
mod secret;
mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::model::embedded::EmbeddedSettings;
pub use file::{
    Approve, CompletionSection, DevelopChecks, DevelopSection, EditFormat, EditSection, FimApi,
    FimFamilyChoice, ResearchSection, SourceTable, ToolsSection, ValidateLevel,
};
pub use secret::Secret;
pub use validate::did_you_mean;

use file::ConfigFile;
use validate::{Validator, suggesting};

/// The workspace file, relative to the workspace root.
pub const WORKSPACE_CONFIG: &str = ".patchwise/config.toml";

/// The built-in OpenAI-compatible servers tried, in order, when no provider is configured.
pub const DEFAULT_LOCAL_SERVERS: [(&str, &str); 2] = [
    ("ollama", "http://127.0.0.1:11434/v1"),
    ("lmstudio", "http://127.0.0.1:1234/v1"),
];

/// The name of the built-in embedded provider used when nothing is configured.
pub const BUILTIN_EMBEDDED: &str = "embedded";

/// The providers used when none is configured, in order of preference: the local servers
/// ([`DEFAULT_LOCAL_SERVERS`]), then the model inside patchwise when this build has it (it
/// answers only once a model is downloaded; `patchwise model pull`).
pub fn builtin_providers() -> Vec<(String, ProviderConfig)> {
    let mut providers: Vec<(String, ProviderConfig)> = DEFAULT_LOCAL_SERVERS
        .iter()
        .map(|(name, url)| {
            (
                (*name).to_owned(),
                ProviderConfig::new(ProviderKind::OpenAi, Some(url)),
            )
        })
        .collect();
    if crate::model::embedded::AVAILABLE {
        providers.push((
            BUILTIN_EMBEDDED.to_owned(),
            ProviderConfig::new(ProviderKind::Embedded, None),
        ));
    }
    providers
}

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// `POST {base_url}/chat/completions`: OpenAI, Ollama, LM Studio, llama.cpp, vLLM, OpenRouter.
    #[default]
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages API.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
    /// The model runtime inside patchwise (llama.cpp): a GGUF file served by the shared model
    /// host (`patchwise model serve`), no server to install.
    Embedded,
}

impl ProviderKind {
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
            ProviderKind::Embedded => "embedded",
        }
    }

    /// The base URL used when a provider of this kind sets none.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Gemini => "https://generativelanguage.googleapis.com/v1beta",
            // The host's address is found when a request is made (`model::embedded::host`).
            ProviderKind::Embedded => "http://127.0.0.1",
        }
    }

    /// The environment variable read for the key when a provider names none.
    pub fn default_key_env(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Gemini => "GEMINI_API_KEY",
            ProviderKind::Embedded => "",
        }
    }
}

/// How tool calls travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
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
    /// `kind = "embedded"`: the model file and how the host runs it.
    pub embedded: EmbeddedSettings,
}

impl ProviderConfig {
    pub fn new(kind: ProviderKind, base_url: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            kind,
            base_url: base_url.map(str::to_owned),
            api_key_env: None,
            tools: ToolMode::Native,
            embedded: EmbeddedSettings::default(),
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
        if self.kind == ProviderKind::Embedded {
            return None;
        }
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
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Default,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ModelRole {
    /// Writes edits; every other role falls back to it.
    #[default]
    Coder,
    /// Plans multi-step work.
    Planner,
    /// Reviews a develop run's change (not the coder's own change the tests pass on).
    Judge,
    /// A stronger model for the last retry.
    Escalation,
    /// Completes code as the user types (fill-in-the-middle; a base model is better at it
    /// than an instruct model).
    Completion,
}

impl ModelRole {
    pub const ALL: [ModelRole; 5] = [
        ModelRole::Coder,
        ModelRole::Planner,
        ModelRole::Judge,
        ModelRole::Escalation,
        ModelRole::Completion,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ModelRole::Coder => "coder",
            ModelRole::Planner => "planner",
            ModelRole::Judge => "judge",
            ModelRole::Escalation => "escalation",
            ModelRole::Completion => "completion",
        }
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
    /// `None`: auto.
    pub edit_format: Option<EditFormat>,
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

/// The resolved configuration.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
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
    /// `[edit]`.
    pub edit: EditSection,
    /// `[research]` (paths already resolved against the file that set them).
    pub research: ResearchSection,
    /// `[develop]`.
    pub develop: DevelopSection,
    /// `[tools]`.
    pub tools: ToolsSection,
    /// `[completion]`.
    pub completion: CompletionSection,
    /// Where each value that is not a default came from, by dotted key.
    pub sources: BTreeMap<String, ValueSource>,
    /// Every layer's valid values, merged: what the typed fields are resolved from.
    #[serde(skip)]
    layers: Value,
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
    /// `null` changes nothing, and a key set to `null` is left as it was.
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
        builtin_providers().into_iter().collect()
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
        // The built-in providers in their order of preference, not by name.
        let builtin = builtin_providers();
        let names: Vec<&str> = if self.providers.is_empty() {
            builtin.iter().map(|(n, _)| n.as_str()).collect()
        } else {
            self.providers.keys().map(String::as_str).collect()
        };
        let targets = names
            .into_iter()
            .map(|provider| RoleTarget {
                provider: provider.to_owned(),
                model: String::new(),
            })
            .collect();
        (ModelRole::Coder, targets)
    }

    /// Settings for `model` served by `provider` (`[models."provider/model"]` wins over
    /// `[models."model"]`).
    /// Whether `model` (`provider/model`) is served by its vendor's own API (OpenAI, Anthropic,
    /// Gemini at their default base URLs): hosted models call tools well, so `auto` starts an
    /// edit in the tools protocol for them (`docs/editing.md`). A server on this machine or the
    /// network, even one speaking a vendor's protocol, is not.
    pub fn vendor_hosted(&self, model: &str) -> bool {
        let provider = model.split_once('/').map_or("", |(p, _)| p);
        self.providers
            .get(provider)
            .is_some_and(|p| p.base_url() == p.kind.default_base_url().trim_end_matches('/'))
    }

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
            edit_format: full
                .and_then(|s| s.edit_format)
                .or(bare.and_then(|s| s.edit_format)),
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

    /// Validates one layer, merges what is valid over the earlier layers and resolves the typed
    /// fields again.
    fn apply_layer(
        &mut self,
        root: &Value,
        source: &ValueSource,
        problems: &mut Vec<ConfigProblem>,
    ) {
        let schema = reference::schema();
        let mut validator = Validator {
            root: schema,
            source,
            problems,
        };
        let Some(valid) = validator.check("", root, schema) else {
            return;
        };
        record_sources(&mut self.sources, "", &valid, source);
        if self.layers.is_null() {
            self.layers = Value::Object(Default::default());
        }
        deep_merge(&mut self.layers, &valid);
        self.resolve(problems);
    }

    /// The typed fields from the merged layers.
    fn resolve(&mut self, problems: &mut Vec<ConfigProblem>) {
        let file: ConfigFile = if self.layers.is_null() {
            ConfigFile::default()
        } else {
            match serde_json::from_value(self.layers.clone()) {
                Ok(file) => file,
                Err(err) => {
                    // Validation should make this unreachable; never stop over it.
                    problems.push(ConfigProblem {
                        severity: Severity::Error,
                        source: ValueSource::Default,
                        key: String::new(),
                        message: format!(
                            "cannot read the merged settings ({err}); defaults are used"
                        ),
                    });
                    return;
                }
            }
        };
        self.providers = file
            .providers
            .into_iter()
            .map(|(name, table)| {
                let provider = ProviderConfig {
                    kind: table.kind,
                    base_url: table.base_url.map(|u| u.trim_end_matches('/').to_owned()),
                    api_key_env: table.api_key_env,
                    tools: table.tools,
                    embedded: EmbeddedSettings {
                        model: table.model,
                        threads: table.threads,
                        context: table.context,
                        gpu_layers: table.gpu_layers,
                        idle_minutes: table.idle_minutes,
                    },
                };
                (name, provider)
            })
            .collect();
        self.roles.clear();
        let roles = [
            (ModelRole::Coder, file.roles.coder),
            (ModelRole::Planner, file.roles.planner),
            (ModelRole::Judge, file.roles.judge),
            (ModelRole::Escalation, file.roles.escalation),
            (ModelRole::Completion, file.roles.completion),
        ];
        for (role, text) in roles {
            if let Some(target) = text.and_then(|t| RoleTarget::parse(&t).ok()) {
                self.roles.insert(role, target);
            }
        }
        self.models = file
            .models
            .into_iter()
            .map(|(name, table)| {
                let settings = ModelSettings {
                    context_window: table.context_window.map(|n| n as usize),
                    max_output_tokens: table.max_output_tokens,
                    edit_format: table.edit_format,
                };
                (name, settings)
            })
            .collect();
        self.timeouts = Timeouts {
            connect: Duration::from_secs_f64(file.timeouts.connect),
            first_token: Duration::from_secs_f64(file.timeouts.first_token),
            total: Duration::from_secs_f64(file.timeouts.total),
        };
        self.retry = RetryPolicy {
            max_attempts: file.retry.max_attempts,
            initial_backoff: Duration::from_millis(file.retry.initial_backoff_ms),
            max_backoff: Duration::from_millis(file.retry.max_backoff_ms),
        };
        self.data_dir = file.data_dir.map(PathBuf::from);
        self.edit = file.edit;
        self.research = file.research;
        self.develop = file.develop;
        self.tools = file.tools;
        self.completion = file.completion;
    }

    /// Checks across layers: roles must name a known provider; a research source must be a
    /// known kind or say its kind. What fails is reported and dropped.
    fn validate(&mut self, problems: &mut Vec<ConfigProblem>) {
        let providers = self.effective_providers();
        let known: Vec<&str> = providers.keys().map(String::as_str).collect();
        // The path of each value dropped, and why.
        let mut dropped: Vec<(Vec<String>, String)> = Vec::new();
        for (role, target) in &self.roles {
            if !providers.contains_key(&target.provider) {
                let message = format!(
                    "expected a configured provider before the '/', found {:?}; providers: {}",
                    target.provider,
                    known.join(", ")
                );
                dropped.push((
                    vec!["roles".to_owned(), role.name().to_owned()],
                    suggesting(message, &target.provider, known.iter().copied()),
                ));
            }
        }
        for (name, table) in &self.research.sources {
            if table.kind.is_none() && !file::SOURCE_KINDS.contains(&name.as_str()) {
                let message = format!(
                    "unknown source {name:?}; name a built-in source ({}) or set kind = \"…\"",
                    file::SOURCE_KINDS.join(", ")
                );
                dropped.push((
                    vec!["research".into(), "sources".into(), name.clone()],
                    suggesting(message, name, file::SOURCE_KINDS.into_iter()),
                ));
            }
        }
        if dropped.is_empty() {
            return;
        }
        for (path, message) in dropped {
            let key = path.join(".");
            problems.push(ConfigProblem {
                severity: Severity::Error,
                source: self.source_of(&key),
                key,
                message,
            });
            remove_path(&mut self.layers, &path);
        }
        self.resolve(problems);
    }
}

/// Records `source` for every key `value` sets, tables included, under `prefix`.
fn record_sources(
    sources: &mut BTreeMap<String, ValueSource>,
    prefix: &str,
    value: &Value,
    source: &ValueSource,
) {
    if let Value::Object(map) = value {
        for (key, inner) in map {
            let path = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            sources.insert(path.clone(), source.clone());
            record_sources(sources, &path, inner, source);
        }
    }
}

fn remove_path(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = value;
    for key in parents {
        match current.get_mut(key) {
            Some(next) => current = next,
            None => return,
        }
    }
    if let Value::Object(map) = current {
        map.remove(last);
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
/// directory (so `.patchwise/config.toml` can say `data_dir = "data"`). Every path setting is
/// resolved through this when its layer loads.
pub fn resolve_path(text: &str, source: &ValueSource) -> PathBuf {
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
