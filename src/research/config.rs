//! `[research]` and `[research.sources.NAME]` resolved for a run: the typed section the
//! configuration validated when it loaded ([`Config::research`], documented in
//! `docs/configuration.md`), with each source's defaults filled in per kind.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::{Config, ConfigProblem, ModelRole, SourceTable};
use serde::Serialize;

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
    /// A second model pass checks that each cited passage supports its sentence.
    pub verify: bool,
    /// A question of several parts is answered one part at a time (`[research] per_part`).
    pub per_part: bool,
    /// The targeted pass asks the model which of the part's numbered sentences answer it, and
    /// the report prints them as the passages write them (`[research] quote_parts`).
    pub quote_parts: bool,
    /// `PROVIDER/MODEL` whose embeddings rank a part's passages by meaning too, or `off`
    /// (`[research] embeddings`); `None`: the built-in encoder when it is downloaded.
    pub embeddings: Option<String>,
    /// patchwise's data directory: never indexed as part of the workspace.
    pub data_dir: PathBuf,
    /// Every source, built-in ones included, by name.
    pub sources: BTreeMap<String, SourceSettings>,
}

impl ResearchConfig {
    /// The research settings of `config`. The configuration reported every problem when it
    /// loaded, so the list returned is empty; it stays for callers that print it.
    pub fn from_config(config: &Config) -> (ResearchConfig, Vec<ConfigProblem>) {
        let section = &config.research;
        let mut sources: BTreeMap<String, SourceSettings> = SourceKind::ALL
            .iter()
            .map(|k| (k.name().to_owned(), SourceSettings::defaults(k.name(), *k)))
            .collect();
        for (name, table) in &section.sources {
            let kind = table
                .kind
                .as_deref()
                .or(Some(name.as_str()))
                .and_then(SourceKind::parse);
            let Some(kind) = kind else {
                continue;
            };
            let key = if SourceKind::parse(name) == Some(kind) {
                kind.name().to_owned()
            } else {
                name.clone()
            };
            let settings = sources
                .entry(key.clone())
                .or_insert_with(|| SourceSettings::defaults(&key, kind));
            settings.overlay(table);
        }
        let research = ResearchConfig {
            model: section.model,
            library: section
                .library
                .as_ref()
                .map(PathBuf::from)
                .unwrap_or_else(|| config.data_dir().join("research").join("library.sqlite3")),
            credibility: section.credibility.as_ref().map(PathBuf::from),
            depth: section.depth,
            time_budget: Duration::from_secs(section.time_budget_secs),
            token_budget: section.token_budget as usize,
            max_output_tokens: section.max_output_tokens,
            heartbeat: Duration::from_secs(section.heartbeat_secs),
            verify: section.verify,
            per_part: section.per_part,
            quote_parts: section.quote_parts,
            embeddings: Some(section.embeddings.trim().to_owned()).filter(|e| !e.is_empty()),
            data_dir: config.data_dir(),
            sources,
        };
        (research, Vec::new())
    }
}

impl SourceSettings {
    /// Applies the keys a `[research.sources.NAME]` table sets.
    fn overlay(&mut self, table: &SourceTable) {
        if let Some(enabled) = table.enabled {
            self.enabled = enabled;
        }
        if let Some(url) = &table.base_url {
            self.base_url = url.trim_end_matches('/').to_owned();
        }
        if let Some(name) = &table.api_key_env {
            self.api_key_env = Some(name.clone()).filter(|n| !n.is_empty());
        }
        if let Some(mailto) = &table.mailto {
            self.mailto = Some(mailto.clone());
        }
        if let Some(secs) = table.timeout_secs {
            self.timeout = Duration::from_secs_f64(secs);
        }
        if let Some(ms) = table.min_interval_ms {
            self.min_interval = Duration::from_millis(ms);
        }
        if let Some(n) = table.max_results {
            self.max_results = Some(n as usize);
        }
        if !table.urls.is_empty() {
            self.urls = table
                .urls
                .iter()
                .map(|u| u.trim_end_matches('/').to_owned())
                .collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_example_and_reports_problems_on_load() {
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
        // Problems are reported when the configuration loads, not when research runs.
        let (config, problems) = Config::from_toml_str(text, crate::config::ValueSource::Default);
        let (research, later) = ResearchConfig::from_config(&config);
        assert!(later.is_empty(), "{later:?}");
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
