//! `[research]` and `[research.sources.NAME]`: validated from the raw table the configuration
//! keeps for this module ([`Config::sections`]), reporting unknown keys and bad values as
//! [`ConfigProblem`]s the way the rest of the configuration does; a bad value keeps the default.
//!
//! ```toml
//! [research]
//! model = "coder"                 # the role that writes the synthesis
//! library = "~/notes/research.sqlite3"   # default: DATA_DIR/research/library.sqlite3
//! credibility = "credibility.toml"       # extra tiers/lists (also read: CONFIG_DIR/patchwise/credibility.toml)
//! depth = 2                       # 1..5: results per source = 5 × depth
//! time_budget_secs = 180          # the whole run
//! token_budget = 6000             # source text sent to the model
//! max_output_tokens = 1500
//! heartbeat_secs = 2
//!
//! [research.sources.openalex]     # openalex arxiv crossref semantic_scholar searxng brave feeds
//! enabled = true                  # workspace library, or any name with `kind = "…"`
//! base_url = "https://api.openalex.org"
//! api_key_env = "OPENALEX_API_KEY"
//! mailto = "you@example.org"      # openalex, crossref: the polite pool
//! timeout_secs = 15
//! min_interval_ms = 100           # the rate limiter: at least this long between requests
//! max_results = 10                # default: 5 × depth
//! urls = ["https://blog.rust-lang.org/feed.xml"]   # feeds only
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::{Checker, Config, ConfigProblem, ModelRole, ValueSource, describe};

/// Every kind of source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    OpenAlex,
    Arxiv,
    Crossref,
    SemanticScholar,
    Searxng,
    Brave,
    Feeds,
    Workspace,
    Library,
}

impl SourceKind {
    pub const ALL: [SourceKind; 9] = [
        SourceKind::OpenAlex,
        SourceKind::Arxiv,
        SourceKind::Crossref,
        SourceKind::SemanticScholar,
        SourceKind::Searxng,
        SourceKind::Brave,
        SourceKind::Feeds,
        SourceKind::Workspace,
        SourceKind::Library,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SourceKind::OpenAlex => "openalex",
            SourceKind::Arxiv => "arxiv",
            SourceKind::Crossref => "crossref",
            SourceKind::SemanticScholar => "semantic_scholar",
            SourceKind::Searxng => "searxng",
            SourceKind::Brave => "brave",
            SourceKind::Feeds => "feeds",
            SourceKind::Workspace => "workspace",
            SourceKind::Library => "library",
        }
    }

    pub fn parse(text: &str) -> Option<SourceKind> {
        let text = text.trim().to_ascii_lowercase().replace('-', "_");
        match text.as_str() {
            "semanticscholar" | "s2" => Some(SourceKind::SemanticScholar),
            "rss" | "atom" | "feed" => Some(SourceKind::Feeds),
            _ => SourceKind::ALL.into_iter().find(|k| k.name() == text),
        }
    }

    fn default_base_url(self) -> &'static str {
        match self {
            SourceKind::OpenAlex => "https://api.openalex.org",
            SourceKind::Arxiv => "http://export.arxiv.org/api",
            SourceKind::Crossref => "https://api.crossref.org",
            SourceKind::SemanticScholar => "https://api.semanticscholar.org",
            SourceKind::Searxng => "http://127.0.0.1:8888",
            SourceKind::Brave => "https://api.search.brave.com",
            SourceKind::Feeds | SourceKind::Workspace | SourceKind::Library => "",
        }
    }

    fn default_key_env(self) -> Option<&'static str> {
        match self {
            SourceKind::OpenAlex => Some("OPENALEX_API_KEY"),
            SourceKind::SemanticScholar => Some("S2_API_KEY"),
            SourceKind::Brave => Some("BRAVE_API_KEY"),
            _ => None,
        }
    }

    /// The provider's documented pace: arXiv asks for one request every 3 s, Semantic Scholar
    /// 1 req/s with a key, Brave's free plan 1 req/s.
    fn default_interval(self) -> Duration {
        Duration::from_millis(match self {
            SourceKind::Arxiv => 3000,
            SourceKind::SemanticScholar | SourceKind::Brave => 1000,
            SourceKind::OpenAlex | SourceKind::Crossref => 100,
            _ => 0,
        })
    }

    fn default_timeout(self) -> Duration {
        Duration::from_secs(match self {
            SourceKind::Workspace | SourceKind::Library => 10,
            SourceKind::Arxiv => 20,
            _ => 15,
        })
    }

    /// Enabled unless configured otherwise: SearXNG is self-hosted, so only when asked for.
    fn default_enabled(self) -> bool {
        !matches!(self, SourceKind::Searxng)
    }
}

/// One `[research.sources.NAME]` table, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceSettings {
    pub name: String,
    pub kind: SourceKind,
    pub enabled: bool,
    /// Without a trailing slash.
    pub base_url: String,
    /// The environment variable holding the key (`None`: no key).
    pub api_key_env: Option<String>,
    pub mailto: Option<String>,
    pub timeout: Duration,
    pub min_interval: Duration,
    pub max_results: Option<usize>,
    /// Feed URLs (feeds only).
    pub urls: Vec<String>,
}

impl SourceSettings {
    pub fn defaults(name: &str, kind: SourceKind) -> SourceSettings {
        SourceSettings {
            name: name.to_owned(),
            kind,
            enabled: kind.default_enabled(),
            base_url: kind.default_base_url().to_owned(),
            api_key_env: kind.default_key_env().map(str::to_owned),
            mailto: None,
            timeout: kind.default_timeout(),
            min_interval: kind.default_interval(),
            max_results: None,
            urls: Vec::new(),
        }
    }

    /// The key, read from the environment now (empty counts as unset).
    pub fn api_key(&self) -> Option<crate::config::Secret> {
        let name = self.api_key_env.as_deref().filter(|n| !n.is_empty())?;
        match std::env::var(name) {
            Ok(v) if !v.trim().is_empty() => Some(crate::config::Secret::new(v.trim())),
            _ => None,
        }
    }
}

/// `[research]`, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResearchConfig {
    /// The role whose model writes the synthesis.
    pub model: ModelRole,
    /// The library database.
    pub library: PathBuf,
    /// An extra credibility file (tiers and lists added to the built-in ones).
    pub credibility: Option<PathBuf>,
    pub depth: u8,
    pub time_budget: Duration,
    pub token_budget: usize,
    pub max_output_tokens: u32,
    pub heartbeat: Duration,
    /// Every source, built-in ones included, by name.
    pub sources: BTreeMap<String, SourceSettings>,
}

impl ResearchConfig {
    /// Reads `config.sections["research"]`; never fails.
    pub fn from_config(config: &Config) -> (ResearchConfig, Vec<ConfigProblem>) {
        let mut problems = Vec::new();
        let source = config.source_of("research");
        let mut research = ResearchConfig {
            model: ModelRole::Coder,
            library: config.data_dir().join("research").join("library.sqlite3"),
            credibility: None,
            depth: 2,
            time_budget: Duration::from_secs(180),
            token_budget: 6000,
            max_output_tokens: 1500,
            heartbeat: Duration::from_secs(2),
            sources: SourceKind::ALL
                .iter()
                .map(|k| (k.name().to_owned(), SourceSettings::defaults(k.name(), *k)))
                .collect(),
        };
        let Some(section) = config.sections.get("research") else {
            return (research, problems);
        };
        let mut check = Check(Checker {
            source: &source,
            problems: &mut problems,
        });
        let Some(table) = check.object("research", section) else {
            return (research, problems);
        };
        for (key, value) in table {
            let path = format!("research.{key}");
            match key.as_str() {
                "model" => {
                    if let Some(text) = check.string(&path, value) {
                        match ModelRole::parse(text) {
                            Some(role) => research.model = role,
                            None => check.error(
                                &path,
                                format!(
                                    "expected a role (coder, planner, judge, escalation), found {text:?}"
                                ),
                            ),
                        }
                    }
                }
                "library" | "credibility" => {
                    if let Some(text) = check.string(&path, value) {
                        if text.trim().is_empty() {
                            check
                                .error(&path, "expected a file path, found an empty string".into());
                            continue;
                        }
                        let resolved = resolve_path(text, &source);
                        if key == "library" {
                            research.library = resolved;
                        } else {
                            research.credibility = Some(resolved);
                        }
                    }
                }
                "depth" => {
                    if let Some(n) = check.integer(&path, value, 1, 5) {
                        research.depth = n as u8;
                    }
                }
                "time_budget_secs" => {
                    if let Some(n) = check.integer(&path, value, 1, 86_400) {
                        research.time_budget = Duration::from_secs(n);
                    }
                }
                "token_budget" => {
                    if let Some(n) = check.integer(&path, value, 200, 10_000_000) {
                        research.token_budget = n as usize;
                    }
                }
                "max_output_tokens" => {
                    if let Some(n) = check.integer(&path, value, 50, 1_000_000) {
                        research.max_output_tokens = n as u32;
                    }
                }
                "heartbeat_secs" => {
                    if let Some(n) = check.integer(&path, value, 1, 600) {
                        research.heartbeat = Duration::from_secs(n);
                    }
                }
                "sources" => {
                    let Some(map) = check.object(&path, value) else {
                        continue;
                    };
                    for (name, table) in map {
                        let spath = format!("research.sources.{name}");
                        let Some(table) = check.object(&spath, table) else {
                            continue;
                        };
                        let kind = match table.get("kind") {
                            Some(v) => match v.as_str().and_then(SourceKind::parse) {
                                Some(kind) => kind,
                                None => {
                                    let names = SourceKind::ALL.map(SourceKind::name).join(", ");
                                    check.error(
                                        &format!("{spath}.kind"),
                                        format!("expected one of {names}, found {}", describe(v)),
                                    );
                                    continue;
                                }
                            },
                            None => match SourceKind::parse(name) {
                                Some(kind) => kind,
                                None => {
                                    check.error(
                                        &spath,
                                        format!(
                                            "unknown source {name:?}; name a built-in source ({}) or set kind = \"…\"",
                                            SourceKind::ALL.map(SourceKind::name).join(", ")
                                        ),
                                    );
                                    continue;
                                }
                            },
                        };
                        let key_name = if SourceKind::parse(name) == Some(kind) {
                            kind.name().to_owned()
                        } else {
                            name.clone()
                        };
                        let mut settings = research
                            .sources
                            .get(&key_name)
                            .cloned()
                            .unwrap_or_else(|| SourceSettings::defaults(&key_name, kind));
                        check.source(&spath, table, &mut settings);
                        research.sources.insert(key_name, settings);
                    }
                }
                _ => check.unknown(
                    &path,
                    &[
                        "model",
                        "library",
                        "credibility",
                        "depth",
                        "time_budget_secs",
                        "token_budget",
                        "max_output_tokens",
                        "heartbeat_secs",
                        "sources",
                    ],
                ),
            }
        }
        (research, problems)
    }
}

/// The shared [`Checker`], plus the checks only research tables need.
struct Check<'a>(Checker<'a>);

impl<'a> std::ops::Deref for Check<'a> {
    type Target = Checker<'a>;
    fn deref(&self) -> &Checker<'a> {
        &self.0
    }
}

impl<'a> std::ops::DerefMut for Check<'a> {
    fn deref_mut(&mut self) -> &mut Checker<'a> {
        &mut self.0
    }
}

impl Check<'_> {
    fn url(&mut self, key: &str, value: &Value) -> Option<String> {
        let text = self.string(key, value)?.trim();
        let ok = (text.starts_with("http://") || text.starts_with("https://"))
            && text.len() > "https://".len()
            && reqwest::Url::parse(text).is_ok();
        if !ok {
            self.error(
                key,
                format!("expected an http:// or https:// URL, found {text:?}"),
            );
            return None;
        }
        Some(text.trim_end_matches('/').to_owned())
    }

    fn source(&mut self, path: &str, table: &Map<String, Value>, s: &mut SourceSettings) {
        const ALLOWED: [&str; 10] = [
            "kind",
            "enabled",
            "base_url",
            "api_key_env",
            "mailto",
            "timeout_secs",
            "min_interval_ms",
            "max_results",
            "urls",
            "url",
        ];
        for (field, v) in table {
            let fpath = format!("{path}.{field}");
            match field.as_str() {
                "kind" => {}
                "enabled" => match v.as_bool() {
                    Some(b) => s.enabled = b,
                    None => self.error(
                        &fpath,
                        format!("expected true or false, found {}", describe(v)),
                    ),
                },
                "base_url" => {
                    if let Some(url) = self.url(&fpath, v) {
                        s.base_url = url;
                    }
                }
                "api_key_env" => {
                    let Some(text) = self.string(&fpath, v) else {
                        continue;
                    };
                    if !text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        self.error(
                            &fpath,
                            "expected the NAME of an environment variable (letters, digits, '_'), not a key; the value is not shown".to_owned(),
                        );
                        continue;
                    }
                    s.api_key_env = Some(text.to_owned()).filter(|t| !t.is_empty());
                }
                "api_key" | "key" | "token" => self.error(
                    &fpath,
                    "keys are never read from configuration; put the key in an environment variable and name it with api_key_env (the value is not shown)".to_owned(),
                ),
                "mailto" => {
                    if let Some(text) = self.string(&fpath, v) {
                        if text.contains('@') && !text.contains(char::is_whitespace) {
                            s.mailto = Some(text.to_owned());
                        } else {
                            self.error(
                                &fpath,
                                format!("expected an e-mail address, found {text:?}"),
                            );
                        }
                    }
                }
                "timeout_secs" => {
                    if let Some(n) = v.as_f64().filter(|n| n.is_finite() && *n > 0.0 && *n <= 3600.0) {
                        s.timeout = Duration::from_secs_f64(n);
                    } else {
                        self.error(
                            &fpath,
                            format!(
                                "expected a number of seconds above 0 and at most 3600, found {}",
                                describe(v)
                            ),
                        );
                    }
                }
                "min_interval_ms" => {
                    if let Some(n) = self.integer(&fpath, v, 0, 600_000) {
                        s.min_interval = Duration::from_millis(n);
                    }
                }
                "max_results" => {
                    if let Some(n) = self.integer(&fpath, v, 1, 200) {
                        s.max_results = Some(n as usize);
                    }
                }
                "urls" | "url" => {
                    let items: Vec<&Value> = match v {
                        Value::Array(items) => items.iter().collect(),
                        other => vec![other],
                    };
                    let mut urls = Vec::new();
                    for (i, item) in items.into_iter().enumerate() {
                        if let Some(url) = self.url(&format!("{fpath}[{i}]"), item) {
                            urls.push(url);
                        }
                    }
                    s.urls = urls;
                }
                _ => self.unknown(&fpath, &ALLOWED),
            }
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_issue_example_and_reports_problems() {
        let text = r#"
[research.sources.openalex]
base_url = "https://api.openalex.org"
api_key_env = "OPENALEX_API_KEY"
[research.sources.arxiv]
base_url = "http://export.arxiv.org/api"
[research.sources.crossref]
base_url = "https://api.crossref.org"
mailto = "you@example.org"
[research.sources.searxng]
base_url = "http://127.0.0.1:8888"
enabled = false
[research.sources.rustblog]
kind = "feeds"
urls = ["https://blog.rust-lang.org/feed.xml", "not a url"]
[research.sources.nonsense]
base_url = "http://x"
[research]
model = "coder"
depth = 9
colour = "blue"
"#;
        let (config, problems) = Config::from_toml_str(text, ValueSource::Default);
        assert!(problems.is_empty(), "{problems:?}");
        let (research, problems) = ResearchConfig::from_config(&config);
        let crossref = &research.sources["crossref"];
        assert_eq!(crossref.mailto.as_deref(), Some("you@example.org"));
        assert!(!research.sources["searxng"].enabled);
        assert_eq!(research.sources["rustblog"].kind, SourceKind::Feeds);
        assert_eq!(research.sources["rustblog"].urls.len(), 1);
        assert_eq!(research.depth, 2);
        assert_eq!(research.model, ModelRole::Coder);
        let text: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(problems.len(), 4, "{text:#?}");
        assert!(
            text.iter()
                .any(|t| t.contains("research.depth") && t.contains("from 1 to 5"))
        );
        assert!(
            text.iter()
                .any(|t| t.contains("research.colour") && t.contains("unknown key"))
        );
        assert!(text.iter().any(|t| t.contains("urls[1]")));
        assert!(
            text.iter()
                .any(|t| t.contains("unknown source \"nonsense\""))
        );
    }
}
