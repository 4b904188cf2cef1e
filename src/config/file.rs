//! The configuration file's shape, as types: every table and key a user may write, with its
//! default, its limits and its documentation.
//!
//! These types are the one source of truth for the file. The JSON Schema generated from them
//! (`docs/config.schema.json`, see [`super::reference`]) drives the validation of every layer
//! ([`super::validate`]), the reference page `docs/configuration.md` and the VS Code settings, so
//! none of them can drift from what the code reads. Limits are written as schema attributes
//! (`range`, `regex`, and `x-expected` for the words a problem uses to say what is allowed);
//! `x-path` marks a path resolved against the file that sets it; `x-redact` a value a problem must
//! never echo (a key pasted where a variable name belongs).
//!
//! A table nothing reads has no type here, so it is refused as unknown.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ModelRole, ProviderKind, ToolMode};

/// The whole file: `.patchwise/config.toml` in the workspace, `patchwise/config.toml` in the user
/// configuration directory, or the editor's settings (the same shape, as JSON).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(title = "patchwise configuration")]
pub struct ConfigFile {
    /// Model servers by name (letters, digits, `-`, `_`, `.`). Without any, `ollama`
    /// (`http://127.0.0.1:11434/v1`) then `lmstudio` (`http://127.0.0.1:1234/v1`) are tried, each
    /// with the first model it lists, then `embedded`: the model inside patchwise, with the
    /// first catalogue model downloaded (`patchwise model pull`).
    #[schemars(extend("propertyNames" = {"pattern": "^[A-Za-z0-9._-]+$"}))]
    pub providers: BTreeMap<String, ProviderTable>,
    /// Which model plays which role, as `provider/model`; unset roles use `coder`.
    pub roles: RolesTable,
    /// Per-model settings by model name, with or without the `provider/` prefix (the prefixed
    /// table wins).
    pub models: BTreeMap<String, ModelTable>,
    /// Timeouts of model requests, in seconds.
    pub timeouts: TimeoutsTable,
    /// Retries of model requests (429, 5xx and transport faults before any output), with
    /// exponential backoff.
    pub retry: RetryTable,
    /// Where the database and reports live (default: the platform's data directory,
    /// `~/.local/share/patchwise` on Linux). A relative path is relative to the file that sets it;
    /// `~/` is the home directory.
    #[schemars(extend("x-path" = true), length(min = 1))]
    pub data_dir: Option<String>,
    /// The edit workflow: one instruction → a proposal.
    pub edit: EditSection,
    /// Deep research (`docs/research.md`).
    pub research: ResearchSection,
    /// The develop workflow: plan → approve → steps → checks → verify → judge.
    pub develop: DevelopSection,
    /// The tools a model calls.
    pub tools: ToolsSection,
    /// Inline completion as you type (`textDocument/inlineCompletion`), from the `completion`
    /// role's model.
    pub completion: CompletionSection,
}

/// A base URL of an API (providers, research sources, feeds).
const URL_PATTERN: &str = r"^https?://[^\s/]+";
const URL_EXPECTED: &str = "an http:// or https:// URL";
/// The name of the environment variable holding a key (never the key: a problem does not echo it).
const KEY_ENV_PATTERN: &str = r"^[A-Za-z0-9_]*$";
const KEY_ENV_EXPECTED: &str =
    "the NAME of an environment variable (letters, digits, '_'), not a key";

/// One `[providers.NAME]` table.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderTable {
    /// The wire format the server speaks.
    pub kind: ProviderKind,
    /// The API's base URL (default: the kind's public API).
    #[schemars(regex(pattern = URL_PATTERN), extend("x-expected" = URL_EXPECTED))]
    pub base_url: Option<String>,
    /// The NAME of the environment variable holding the key, never the key itself. Default: per
    /// kind (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`), none for servers on this
    /// machine; `""` never sends a key.
    #[schemars(
        regex(pattern = KEY_ENV_PATTERN),
        extend("x-expected" = KEY_ENV_EXPECTED, "x-redact" = true)
    )]
    pub api_key_env: Option<String>,
    /// How tool calls travel: the provider's native tool calling, or tools taught in the prompt.
    pub tools: ToolMode,
    /// `kind = "embedded"` only: a catalogue name (`qwen2.5-coder-1.5b`; `patchwise model
    /// list`) or the path to any GGUF file. Default: the first catalogue model downloaded.
    pub model: Option<String>,
    /// `kind = "embedded"` only: CPU threads (default: llama.cpp's choice for this machine).
    #[schemars(range(min = 1, max = 1024))]
    pub threads: Option<u32>,
    /// `kind = "embedded"` only: the context window in tokens (default: the model's trained
    /// window, at most 8192).
    #[schemars(range(min = 256, max = 1_048_576))]
    pub context: Option<u32>,
    /// `kind = "embedded"` only: layers offloaded to the GPU of a GPU build (default 0).
    #[schemars(range(min = 0, max = 10_000))]
    pub gpu_layers: Option<u32>,
    /// `kind = "embedded"` only: minutes the shared model host stays loaded with nothing to do
    /// (default 10).
    #[schemars(range(min = 1, max = 100_000))]
    pub idle_minutes: Option<u32>,
}

/// A `provider/model` target; the model may be left out: the first model the server lists.
const ROLE_PATTERN: &str = r"^[A-Za-z0-9._-]+(/.*)?$";
const ROLE_EXPECTED: &str = "\"provider/model\" (e.g. \"local/qwen2.5-coder:7b\")";

/// `[roles]`: `provider/model` for each job.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RolesTable {
    /// Writes edits; every other role falls back to it. `"local"` alone: the first model the
    /// server lists.
    #[schemars(regex(pattern = ROLE_PATTERN), extend("x-expected" = ROLE_EXPECTED))]
    pub coder: Option<String>,
    /// Plans multi-step work.
    #[schemars(regex(pattern = ROLE_PATTERN), extend("x-expected" = ROLE_EXPECTED))]
    pub planner: Option<String>,
    /// Reviews a develop run's change. Unset, it is the coder, which does not review a change
    /// the tests pass on (it would be reading its own change again); set it to another model
    /// for a second opinion on those too.
    #[schemars(regex(pattern = ROLE_PATTERN), extend("x-expected" = ROLE_EXPECTED))]
    pub judge: Option<String>,
    /// A stronger model for the last retry, with a clean prompt.
    #[schemars(regex(pattern = ROLE_PATTERN), extend("x-expected" = ROLE_EXPECTED))]
    pub escalation: Option<String>,
    /// Completes code as you type (fill-in-the-middle): a base model such as
    /// `qwen2.5-coder:1.5b-base` is better at it than an instruct model; the instruct model works.
    #[schemars(regex(pattern = ROLE_PATTERN), extend("x-expected" = ROLE_EXPECTED))]
    pub completion: Option<String>,
}

/// How the edit workflow asks a model for a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EditFormat {
    /// Chosen per task and model.
    #[default]
    Auto,
    /// The target rewritten whole in one fenced block.
    Rewrite,
    /// Search/replace through the tools.
    Tools,
}

/// `[models."NAME"]`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ModelTable {
    /// Tokens the model reads and writes in all (default: a built-in table; local servers at
    /// most 8192).
    #[schemars(range(min = 256, max = 100_000_000))]
    pub context_window: Option<u64>,
    /// Tokens reserved for the answer when a request sets none.
    #[schemars(range(min = 1))]
    pub max_output_tokens: Option<u32>,
    /// How edits are asked of this model (default: auto — rewrite first for a local or self-hosted server, tools first for a vendor's own API; a failed attempt tries the other).
    pub edit_format: Option<EditFormat>,
}

const SECONDS_EXPECTED: &str = "a number of seconds above 0 and at most 86400";

/// `[timeouts]`, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TimeoutsTable {
    /// Establishing the connection.
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 86400, "x-expected" = SECONDS_EXPECTED))]
    pub connect: f64,
    /// From sending the request to the first answer event; also the longest silence allowed
    /// mid-answer (local models on a CPU read the prompt a long time before the first token).
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 86400, "x-expected" = SECONDS_EXPECTED))]
    pub first_token: f64,
    /// The whole answer.
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 86400, "x-expected" = SECONDS_EXPECTED))]
    pub total: f64,
}

impl Default for TimeoutsTable {
    fn default() -> Self {
        TimeoutsTable {
            connect: 10.0,
            first_token: 180.0,
            total: 900.0,
        }
    }
}

/// `[retry]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RetryTable {
    /// Attempts in all, including the first.
    #[schemars(range(min = 1, max = 20))]
    pub max_attempts: u32,
    /// The first wait; it doubles per attempt, and a server's `Retry-After` wins.
    #[schemars(range(min = 0, max = 600_000))]
    pub initial_backoff_ms: u64,
    /// The longest wait, including a server's `Retry-After`.
    #[schemars(range(min = 0, max = 3_600_000))]
    pub max_backoff_ms: u64,
}

impl Default for RetryTable {
    fn default() -> Self {
        RetryTable {
            max_attempts: 4,
            initial_backoff_ms: 500,
            max_backoff_ms: 30_000,
        }
    }
}

/// `[edit]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EditSection {
    /// Attempts before giving up (a refused edit ends an attempt).
    #[schemars(range(min = 1, max = 10))]
    pub max_attempts: u32,
    /// Hand the last attempt to the `escalation` role when it is a different model.
    pub escalate: bool,
    /// Refuse edits that add syntax errors.
    pub parse_check: bool,
    /// Model answers allowed in one attempt (tool rounds).
    #[schemars(range(min = 1, max = 100))]
    pub max_rounds: u32,
    /// Tokens of the region shown in the first prompt.
    #[schemars(range(min = 500, max = 10_000_000))]
    pub region_budget: u32,
    /// Sampling temperature (0 makes edits markedly more reliable; a request the model already
    /// answered in the run goes out at 0.7 when this is lower).
    #[schemars(range(min = 0.0, max = 2.0))]
    pub temperature: f64,
    /// Tokens the model may write per answer (default: the model's setting).
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u32>,
    /// End the run as soon as an answer's edits all succeed, without asking the model whether it
    /// is done (multi-step edits must then come in one answer).
    pub stop_after_edit: bool,
    /// Force an `edit_file` call in the first answer (on a local 1.5B model, forcing gave empty
    /// answers where `auto` succeeded, hence off).
    pub force_edit: bool,
    /// Apply a proposal at once, without the pending state (the editor still owns undo).
    pub auto_apply: bool,
}

impl Default for EditSection {
    fn default() -> Self {
        EditSection {
            max_attempts: 3,
            escalate: true,
            parse_check: true,
            max_rounds: 12,
            region_budget: 6000,
            temperature: 0.0,
            max_tokens: None,
            stop_after_edit: false,
            force_edit: false,
            auto_apply: false,
        }
    }
}

/// The kinds of research source; a `[research.sources.NAME]` table named after one needs no
/// `kind`.
pub const SOURCE_KINDS: [&str; 9] = [
    "openalex",
    "arxiv",
    "crossref",
    "semantic_scholar",
    "searxng",
    "brave",
    "feeds",
    "workspace",
    "library",
];

/// `[research]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ResearchSection {
    /// The role whose model writes the synthesis.
    pub model: ModelRole,
    /// The library database (default: `DATA_DIR/research/library.sqlite3`).
    #[schemars(extend("x-path" = true), length(min = 1))]
    pub library: Option<String>,
    /// An extra credibility file: tiers and lists added to the built-in ones (also read:
    /// `CONFIG_DIR/patchwise/credibility.toml`).
    #[schemars(extend("x-path" = true), length(min = 1))]
    pub credibility: Option<String>,
    /// How deep to look: results per source = 5 × depth.
    #[schemars(range(min = 1, max = 5))]
    pub depth: u8,
    /// Searching and synthesis; the citation check may take up to half as long again.
    #[schemars(range(min = 1, max = 86_400))]
    pub time_budget_secs: u64,
    /// Tokens of source text sent to the model.
    #[schemars(range(min = 200, max = 10_000_000))]
    pub token_budget: u64,
    /// Tokens the synthesis may use. It is asked for 3 to 8 sentences: over 139 recorded
    /// syntheses of Qwen2.5-Coder-1.5B the longest whole answer took about 510 (code blocks
    /// included, median 157); a model that loops or rambles stops at the limit, its
    /// unfinished sentence left out, instead of writing for minutes on a small machine.
    #[schemars(range(min = 50, max = 1_000_000))]
    pub max_output_tokens: u32,
    /// Progress heartbeat during synthesis.
    #[schemars(range(min = 1, max = 600))]
    pub heartbeat_secs: u64,
    /// Every citation of a model's synthesis is also checked by the model: a sentence its
    /// passage holds word for word is supported without asking; each other sentence–passage
    /// pair gets one short call ("Does the QUOTE say what the STATEMENT says?", YES or NO);
    /// rejected citations are removed before the report is kept or falls back (`--verify` for
    /// one run). Off by default: with Qwen2.5-Coder-1.5B it took 13 s of a 97 s question and,
    /// over every sentence of 16 reports read by hand, removed no wrong one the overlap check
    /// kept (docs/research.md, "Is it right?").
    pub verify: bool,
    /// A question of two or more parts is answered part by part: each part asked on its own,
    /// over its own best passages, in one short call, instead of one answer over the passages
    /// of every part and then a targeted pass for each part that answer left out. With
    /// Qwen2.5-Coder-1.5B, over 16 questions read by hand, it was faster (a question took 62 s
    /// against 86 s) and said fewer wrong things (docs/research.md, "Each part searched on its
    /// own"); `false` asks for one answer to the whole question first.
    pub per_part: bool,
    /// Each part's targeted pass shows the model the sentences of its passages likeliest to
    /// answer the part (the eight holding most of its words), numbered, and asks for the
    /// numbers of those that answer it; the report prints those sentences as the passages
    /// write them, instead of asking for one to three sentences in the model's words. Quoted,
    /// the readers found 99 % of the citations supported against 83 % (its own sentences often
    /// gave a real feature the wrong purpose); picked by number rather than copied,
    /// Qwen2.5-Coder-1.5B answered 21 of 48 parts right against 17, in 21 s a question against
    /// 48 s (docs/research.md, "Quoted answers", "Sentences picked by number"); `false` asks
    /// for its own words (a larger model that explains well).
    pub quote_parts: bool,
    /// The embedding model that ranks each part's passages by meaning as well as by words: a
    /// user asks in the words of a problem, the documentation answers in the words of a
    /// feature. Empty (the default): the one inside patchwise, all-MiniLM-L6-v2, when it is
    /// downloaded (`patchwise model pull` fetches it with the chat model; 25 MB), else words
    /// alone. `PROVIDER/MODEL`: a provider of `[providers]` that speaks the OpenAI wire format
    /// (`POST {base_url}/embeddings`, as Ollama, LM Studio, llama.cpp's server and OpenAI do),
    /// or `embedded/NAME` for a catalogue name or GGUF path of an embedding model. `off`: words
    /// alone. With all-MiniLM-L6-v2, over 178 located parts of eleven documentation sets, the
    /// three passages each part was asked over held its answer for 133 parts against 120 by the
    /// words alone (docs/research.md, "Searched by meaning"). Each passage found is embedded
    /// once a run, and each part once.
    pub embeddings: String,
    /// Sources by name: a built-in kind (openalex, arxiv, crossref, semantic_scholar, searxng,
    /// brave, feeds, workspace, library), or any name with `kind = "…"`.
    pub sources: BTreeMap<String, SourceTable>,
}

impl Default for ResearchSection {
    fn default() -> Self {
        ResearchSection {
            model: ModelRole::Coder,
            library: None,
            credibility: None,
            depth: 2,
            time_budget_secs: 300,
            token_budget: 6000,
            max_output_tokens: 600,
            heartbeat_secs: 2,
            verify: false,
            per_part: true,
            quote_parts: true,
            embeddings: String::new(),
            sources: BTreeMap::new(),
        }
    }
}

/// `[research.sources.NAME]`; every key defaults per kind.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SourceTable {
    /// The kind of source, when the table's name is not one.
    #[schemars(extend("enum" = SOURCE_KINDS))]
    pub kind: Option<String>,
    /// Whether the source is asked (default: every kind but searxng, which is self-hosted).
    pub enabled: Option<bool>,
    /// The API's base URL.
    #[schemars(regex(pattern = URL_PATTERN), extend("x-expected" = URL_EXPECTED))]
    pub base_url: Option<String>,
    /// The NAME of the environment variable holding the key; `""`: no key.
    #[schemars(
        regex(pattern = KEY_ENV_PATTERN),
        extend("x-expected" = KEY_ENV_EXPECTED, "x-redact" = true)
    )]
    pub api_key_env: Option<String>,
    /// An e-mail address for the polite pool (openalex, crossref).
    #[schemars(regex(pattern = r"^[^@\s]+@[^@\s]+$"), extend("x-expected" = "an e-mail address"))]
    pub mailto: Option<String>,
    /// Seconds one request may take.
    #[schemars(extend(
        "exclusiveMinimum" = 0,
        "maximum" = 3600,
        "x-expected" = "a number of seconds above 0 and at most 3600"
    ))]
    pub timeout_secs: Option<f64>,
    /// The rate limiter: at least this long between requests.
    #[schemars(range(min = 0, max = 600_000))]
    pub min_interval_ms: Option<u64>,
    /// Results asked for (default: 5 × depth; the workspace's passages 12 × depth, shared by the
    /// parts of a question).
    #[schemars(range(min = 1, max = 200))]
    pub max_results: Option<u32>,
    /// Feed URLs (feeds only).
    #[schemars(inner(regex(pattern = URL_PATTERN)))]
    pub urls: Vec<String>,
}

/// Whether a plan is shown for approval before develop carries it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Approve {
    /// Ask the user (Approve / Cancel).
    #[default]
    Ask,
    /// Carry the plan out without asking.
    Auto,
}

/// `[develop]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct DevelopSection {
    /// Whether the plan waits for the user's approval.
    pub approve: Approve,
    /// Rounds of fixing after a failed verification.
    #[schemars(range(min = 0, max = 20))]
    pub fix_rounds: u32,
    /// The judge is skipped below this many changed lines (unless a new code file or a risky
    /// path is involved). Whatever this setting, a change every test command passes on is not
    /// reviewed by the coder's own model: set `[roles] judge` to another model, or a `risky`
    /// pattern, for that.
    #[schemars(range(min = 0, max = 1_000_000))]
    pub judge_min_lines: u32,
    /// Changed paths containing one of these always get the judge, unless the tests still fail
    /// after the fix rounds (then no change is reviewed: the failures say it is not done).
    pub risky: Vec<String>,
    /// Minutes a run may take from its start to its result (waiting for the plan's approval
    /// does not count). When they are up the run stops: the steps done so far are tested and
    /// proposed, and the result says what was not done.
    #[schemars(range(min = 1, max = 1440))]
    pub max_minutes: u32,
    /// Model calls a run may make (planner, coder and judge together); when they are used up
    /// the run stops as for `max_minutes`.
    #[schemars(range(min = 1, max = 10_000))]
    pub max_model_calls: u32,
    /// Whether a step that asks for one rename and nothing else ("rename X to Y in a.py and
    /// b.py") is done by the server: the name replaced as a whole word in every source file
    /// that has it, kept when the check passes, with no model call. `false` leaves renames to
    /// the model.
    pub rename_by_server: bool,
    /// The commands that check, lint and test the working copy.
    pub checks: DevelopChecks,
}

impl Default for DevelopSection {
    fn default() -> Self {
        DevelopSection {
            approve: Approve::Ask,
            fix_rounds: 2,
            judge_min_lines: 20,
            risky: [
                "auth",
                "security",
                "crypt",
                "password",
                "secret",
                "token",
                "payment",
                "migration",
            ]
            .map(str::to_owned)
            .to_vec(),
            // Measured with Qwen2.5-Coder-1.5B on the bench tasks (docs/develop.md, "Budget"):
            // every run that produced a proposal needed at most 30 model calls and 7 minutes;
            // the runs past 10 minutes or 32 calls ended with nothing, one after 26 minutes.
            max_minutes: 10,
            max_model_calls: 40,
            rename_by_server: true,
            checks: DevelopChecks::default(),
        }
    }
}

/// `[develop.checks]`: command lines; unset means the default for the project's language
/// (`cargo check` / `cargo test`, `ruff check` / `pytest`, `tsc --noEmit` / `npm test`,
/// `go vet` / `go test ./...`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct DevelopChecks {
    /// Compiles or type-checks the working copy.
    #[schemars(length(min = 1))]
    pub check: Option<String>,
    /// Lints the working copy.
    #[schemars(length(min = 1))]
    pub lint: Option<String>,
    /// Runs the tests.
    #[schemars(length(min = 1))]
    pub test: Option<String>,
    /// Seconds one command may run before its process group is killed.
    #[schemars(range(min = 1, max = 86_400))]
    pub timeout_secs: u64,
    /// Megabytes of memory one process of a command may hold before the command's process
    /// group is killed (a test of a model's code whose search runs away); unset: half of the
    /// machine's memory, or of its control group's limit when that is less (a container);
    /// 0: no bound. Watched on Linux.
    #[schemars(range(min = 0, max = 16_777_216))]
    pub memory_mb: Option<u64>,
}

impl Default for DevelopChecks {
    fn default() -> Self {
        DevelopChecks {
            check: None,
            lint: None,
            test: None,
            timeout_secs: 600,
            memory_mb: None,
        }
    }
}

/// What a failed validation of written content does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ValidateLevel {
    /// Refuse the content; the model gets the error with line and column.
    #[default]
    Error,
    /// Accept it and tell the model.
    Warn,
    /// Do not validate.
    Off,
}

/// `[tools]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsSection {
    /// Rounds a cut-off write session is continued automatically.
    #[schemars(range(min = 0, max = 20))]
    pub write_continuations: u32,
    /// Validation of written JSON, TOML, YAML and code before it joins the working copy.
    pub validate: ValidateLevel,
    /// Per file extension (without the dot), overriding `validate`: `yaml = "warn"`.
    pub validate_by_extension: BTreeMap<String, ValidateLevel>,
}

impl Default for ToolsSection {
    fn default() -> Self {
        ToolsSection {
            write_continuations: 3,
            validate: ValidateLevel::Error,
            validate_by_extension: BTreeMap::new(),
        }
    }
}

impl ToolsSection {
    /// The validation level for a file with this extension.
    pub fn validate_for(&self, extension: &str) -> ValidateLevel {
        self.validate_by_extension
            .get(&extension.to_ascii_lowercase())
            .copied()
            .unwrap_or(self.validate)
    }
}

/// Which request a completion provider gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FimApi {
    /// From the provider: Mistral's API → `mistral`; a server on port 11434 → `ollama`; any
    /// other → `completions`.
    #[default]
    Auto,
    /// `POST {base_url}/completions` with the model family's fill-in-the-middle tokens in the
    /// prompt (llama.cpp, vLLM, LM Studio, the model inside patchwise).
    Completions,
    /// llama.cpp's `POST /infill` (prefix, suffix and extra context as fields).
    Infill,
    /// Ollama's `POST /api/generate` with `suffix`.
    Ollama,
    /// Mistral's `POST {base_url}/fim/completions` (Codestral).
    Mistral,
}

/// The fill-in-the-middle tokens a model was trained with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FimFamilyChoice {
    /// From the model's name; Qwen2.5-Coder's tokens when the name says nothing.
    #[default]
    Auto,
    /// `<|fim_prefix|>…<|fim_suffix|>…<|fim_middle|>`, other files after `<|file_sep|>`.
    Qwen,
    /// `<fim_prefix>…<fim_suffix>…<fim_middle>`, other files after `<file_sep>`.
    Starcoder,
    /// `<｜fim▁begin｜>…<｜fim▁hole｜>…<｜fim▁end｜>`.
    Deepseek,
    /// `<PRE> … <SUF>… <MID>`.
    Codellama,
    /// `[SUFFIX]…[PREFIX]…`.
    Codestral,
}

/// `[completion]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CompletionSection {
    /// Whether suggestions are offered while typing (an invoked request is answered either way
    /// unless the language is turned off).
    pub enabled: bool,
    /// Per language id (`python = false`), overriding `enabled`.
    pub languages: BTreeMap<String, bool>,
    /// Milliseconds of quiet after a keystroke before the model is asked (typing within it
    /// sends nothing).
    #[schemars(range(min = 0, max = 5000))]
    pub debounce_ms: u64,
    /// Tokens a suggestion may have.
    #[schemars(range(min = 1, max = 1024))]
    pub max_tokens: u32,
    /// Whether a suggestion may span lines (up to the end of the current block); a cursor in
    /// the middle of a line always gets one line.
    pub multi_line: bool,
    /// Milliseconds from the keystroke by which a suggestion that spans lines is shown: after
    /// them it ends at its last whole line, and the model stops writing (llama.vim's
    /// `t_max_predict_ms` counts from the first token instead; this counts the prompt's reading
    /// too, the wait a user sees). The first line is always written whole. Automatic requests,
    /// to providers that stream (`/v1/completions`, `/infill`); 0 sets no limit.
    #[schemars(range(min = 0, max = 60_000))]
    pub predict_ms: u64,
    /// Tokens of the file before the cursor in the prompt.
    #[schemars(range(min = 64, max = 100_000))]
    pub context_tokens: u32,
    /// Tokens of the file after the cursor in the prompt (the rest of the cursor's line always).
    /// They come after the text before the cursor, so a provider reads them again on every
    /// keystroke: a few lines are faster (see docs/editors.md for what was measured).
    #[schemars(range(min = 0, max = 100_000))]
    pub suffix_tokens: u32,
    /// Tokens of the file after those `suffix_tokens` shows, as another chunk of the same file
    /// ahead of the text before the cursor (for models whose format has files: Qwen,
    /// StarCoder2). A keystroke does not change them, so the provider keeps them cached: the
    /// model sees what follows the cursor without reading it again while the user types. 0
    /// sends none.
    #[schemars(range(min = 0, max = 100_000))]
    pub later_tokens: u32,
    /// Tokens of other places in the prompt (for models whose format has files: Qwen,
    /// StarCoder2): the places edited lately, then the start of the other open files, of files
    /// in the language of the one typed in (TypeScript and JavaScript one, C and C++ one); 0
    /// sends none.
    #[schemars(range(min = 0, max = 100_000))]
    pub extra_context_tokens: u32,
    /// The request the provider gets.
    pub api: FimApi,
    /// The model's fill-in-the-middle tokens.
    pub fim: FimFamilyChoice,
}

impl Default for CompletionSection {
    fn default() -> Self {
        CompletionSection {
            enabled: true,
            languages: BTreeMap::new(),
            debounce_ms: 150,
            max_tokens: 64,
            multi_line: true,
            predict_ms: 1500,
            context_tokens: 1024,
            suffix_tokens: 64,
            later_tokens: 512,
            extra_context_tokens: 256,
            api: FimApi::Auto,
            fim: FimFamilyChoice::Auto,
        }
    }
}

impl CompletionSection {
    /// Whether suggestions are offered in `language` (an LSP language id).
    pub fn enabled_for(&self, language: &str) -> bool {
        self.languages
            .get(language)
            .copied()
            .unwrap_or(self.enabled)
    }
}
