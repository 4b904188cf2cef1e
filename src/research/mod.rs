//! Deep research: a question fans out to every configured source at once; what comes back is
//! de-duplicated, scored for credibility with an explained breakdown, handed to a model as
//! numbered passages it may cite only by number, checked and repaired (citation forms
//! normalised, numbers outside the list removed, sentences re-cited to the passage that supports
//! them or dropped, uncited claims attributed or dropped, each citation's support measured, and
//! the model's own citations measured before the repair), corroborated by counting independent origins per claim, and saved in the library
//! with a Markdown report. See `docs/research.md`.
//!
//! The editor, the terminal and the MCP tool call the same [`Research::run`] (or [`run`]), which
//! reports [`Phase`]s with percentages through a callback (a heartbeat during synthesis) and
//! stops outstanding requests when its cancellation token fires. The phases live in `run.rs`,
//! the model calls in `generate.rs`. A source that fails or times out is reported in the record
//! while the others count; with no model reachable, or a model answer that keeps fewer than half
//! of its claims, the synthesis is extractive, labelled so, and the run is `partial`. This module
//! never sees LSP types and never lets a key reach a log, an error or the library.

pub mod adoc;
pub mod citations;
pub mod config;
pub mod credibility;
pub mod dates;
pub mod dedupe;
pub mod domain;
pub mod extractive;
mod generate;
pub mod includes;
pub mod index;
pub mod judge;
pub mod meaning;
pub mod org;
pub mod parts;
pub mod passages;
pub mod report;
pub mod roff;
pub mod rst;
mod run;
pub mod sources;
pub mod support;
pub mod synthesis;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConfigProblem};
use crate::model::embedded::EmbeddedEmbedder;
use crate::model::embeddings::{Embedder, HttpEmbedder};
use crate::model::{ChatModel, ModelRouter};
use crate::research::config::ResearchConfig;
use crate::research::credibility::Lists;
use crate::store::{Library, SourceOutcome, SourceRecord, StoreError};

pub use crate::store::{ResearchRecord, ResearchSummary};

/// The steps of a run, in the order they are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Sources,
    Dedupe,
    Credibility,
    Synthesis,
    Corroboration,
    Saved,
}

impl Phase {
    pub const ALL: [Phase; 6] = [
        Phase::Sources,
        Phase::Dedupe,
        Phase::Credibility,
        Phase::Synthesis,
        Phase::Corroboration,
        Phase::Saved,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Sources => "sources",
            Phase::Dedupe => "dedupe",
            Phase::Credibility => "credibility",
            Phase::Synthesis => "synthesis",
            Phase::Corroboration => "corroboration",
            Phase::Saved => "saved",
        }
    }
}

/// Per-run choices; `None` keeps the configuration's value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOptions {
    /// Only these sources (by configured name, e.g. `openalex`, `workspace`).
    pub sources: Option<Vec<String>>,
    /// 1..=5: results per source = 5 × depth; sources shown to the model = 6 × depth.
    pub depth: Option<u8>,
    /// The workspace folder searched by the `workspace` source.
    pub workspace: Option<PathBuf>,
    /// Whether recency counts; `None` guesses from the question ("latest", a recent year, …).
    pub time_sensitive: Option<bool>,
    pub time_budget: Option<Duration>,
    pub token_budget: Option<usize>,
    /// A second model pass checks every citation (default: `[research] verify`).
    pub verify: Option<bool>,
}

/// A finished run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResearchRun {
    pub record: ResearchRecord,
    /// The Markdown report.
    pub report: PathBuf,
}

/// Why a run produced nothing.
#[derive(Debug, thiserror::Error)]
pub enum ResearchError {
    #[error("expected a question, found {0}")]
    BadQuery(String),
    #[error("unknown source {name:?}; known sources: {known}")]
    UnknownSource { name: String, known: String },
    #[error(transparent)]
    Library(#[from] StoreError),
    #[error("cancelled; nothing was saved")]
    Cancelled,
}

/// The progress callback: phase, percent of the whole run (0–100), a human message.
pub type ProgressFn<'a> = &'a (dyn Fn(Phase, u8, &str) + Send + Sync);

/// Where the synthesis model comes from.
#[derive(Clone)]
enum ModelChoice {
    Router(Arc<ModelRouter>),
    Fixed(Arc<dyn ChatModel>),
    Off,
}

/// A research engine: settings, credibility lists, the library, and (optionally) a substitute
/// model for tests. Cheap to keep for the life of a server.
pub struct Research {
    settings: ResearchConfig,
    lists: Lists,
    library: Arc<Library>,
    model: ModelChoice,
    /// Ranks a part's passages by meaning too (`[research] embeddings`, [`meaning`]).
    embedder: Option<Arc<dyn Embedder>>,
    problems: Vec<String>,
}

/// The embedding model `[research] embeddings` names (`PROVIDER/MODEL`: a provider of
/// `[providers]` that speaks the OpenAI wire format, or the model inside patchwise, `embedded`;
/// `off`: none), else the built-in encoder when it is downloaded, or why it cannot be used.
fn embedder_for(
    config: &Config,
    settings: &ResearchConfig,
) -> Result<Option<Arc<dyn Embedder>>, String> {
    let timeout = std::time::Duration::from_secs(30);
    let Some(named) = settings
        .embeddings
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    else {
        // The built-in encoder, when `patchwise model pull` has downloaded it.
        return match EmbeddedEmbedder::default_for(config, timeout) {
            None => Ok(None),
            Some(Ok(embedder)) => Ok(Some(Arc::new(embedder))),
            Some(Err(why)) => Err(format!(
                "the built-in embedding model ({}) cannot be used: {why}; passages are ranked by their words alone (`[research] embeddings = \"off\"` says so on purpose)",
                crate::model::embedded::DEFAULT_ENCODER
            )),
        };
    };
    if named.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let bad = |why: &str| {
        format!(
            "[research] embeddings = \"{named}\": {why}; passages are ranked by their words alone"
        )
    };
    let (provider, model) = named
        .split_once('/')
        .filter(|(p, m)| !p.is_empty() && !m.is_empty())
        .ok_or_else(|| bad("write it as PROVIDER/MODEL, a provider of [providers], or \"off\""))?;
    let providers = config.effective_providers();
    let builtin;
    let settings_of = match providers.get(provider) {
        Some(found) => found,
        None if provider == crate::config::BUILTIN_EMBEDDED
            && crate::model::embedded::AVAILABLE =>
        {
            builtin =
                crate::config::ProviderConfig::new(crate::config::ProviderKind::Embedded, None);
            &builtin
        }
        None => {
            return Err(bad(&format!(
                "no provider \"{provider}\" in [providers] (known: {})",
                providers.keys().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
    };
    match settings_of.kind {
        crate::config::ProviderKind::OpenAi => {
            let embedder = HttpEmbedder::new(provider, model, settings_of.clone(), timeout)
                .map_err(|why| bad(&why))?;
            Ok(Some(Arc::new(embedder)))
        }
        crate::config::ProviderKind::Embedded => {
            let mut embedded = settings_of.embedded.clone();
            embedded.model = Some(model.to_owned());
            let embedder = EmbeddedEmbedder::new(config, provider, &embedded, timeout)
                .map_err(|why| bad(&why))?;
            Ok(Some(Arc::new(embedder)))
        }
        _ => Err(bad(&format!(
            "\"{provider}\" is neither an OpenAI-compatible server, whose `/embeddings` this calls, nor the model inside patchwise"
        ))),
    }
}

impl Research {
    /// Reads `[research]`, loads the credibility lists and opens the library.
    pub fn new(config: &Config) -> Result<Research, ResearchError> {
        let (settings, config_problems) = ResearchConfig::from_config(config);
        let library = Arc::new(Library::open(&settings.library)?);
        let mut files: Vec<PathBuf> = Vec::new();
        if let Some(user) = crate::config::user_config_path()
            && let Some(dir) = user.parent()
        {
            files.push(dir.join("credibility.toml"));
        }
        files.extend(settings.credibility.iter().cloned());
        let paths: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
        let (lists, list_problems) = Lists::load(&paths);
        let (embedder, embedder_problem) = match embedder_for(config, &settings) {
            Ok(e) => (e, None),
            Err(why) => {
                // The terminal prints the problems; the editor and the agents read the log.
                tracing::warn!("{why}");
                (None, Some(why))
            }
        };
        Ok(Research {
            model: ModelChoice::Router(Arc::new(ModelRouter::new(config.clone()))),
            embedder,
            settings,
            lists,
            library,
            problems: config_problems
                .iter()
                .map(ConfigProblem::to_string)
                .chain(list_problems)
                .chain(embedder_problem)
                .collect(),
        })
    }

    /// Uses this model for the synthesis; `None`: never call a model (extractive synthesis).
    pub fn set_model(&mut self, model: Option<Arc<dyn ChatModel>>) {
        self.model = match model {
            Some(m) => ModelChoice::Fixed(m),
            None => ModelChoice::Off,
        };
    }

    /// Takes the synthesis model from `router` (a run's metered router: its answers' usage is
    /// reported as they end).
    pub fn set_router(&mut self, router: Arc<ModelRouter>) {
        self.model = ModelChoice::Router(router);
    }

    pub fn library(&self) -> &Arc<Library> {
        &self.library
    }

    /// Configuration and credibility-file problems found while setting up (for `doctor`-style
    /// display; the run goes on with defaults).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    fn select_sources(
        &self,
        options: &RunOptions,
    ) -> Result<(sources::Sources, Vec<SourceOutcome>), ResearchError> {
        let wanted: Option<Vec<String>> = options.sources.as_ref().map(|names| {
            names
                .iter()
                .map(|n| n.trim().to_ascii_lowercase())
                .filter(|n| !n.is_empty())
                .map(|n| {
                    config::SourceKind::parse(&n)
                        .filter(|_| !self.settings.sources.contains_key(&n))
                        .map(|k| k.name().to_owned())
                        .unwrap_or(n)
                })
                .collect()
        });
        let mut settings: Vec<config::SourceSettings> = Vec::new();
        match &wanted {
            Some(names) => {
                for name in names {
                    let Some(s) = self.settings.sources.get(name) else {
                        return Err(ResearchError::UnknownSource {
                            name: name.clone(),
                            known: self
                                .settings
                                .sources
                                .keys()
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", "),
                        });
                    };
                    let mut s = s.clone();
                    // Naming a source asks for it, even one disabled by default (SearXNG).
                    s.enabled = true;
                    settings.push(s);
                }
            }
            None => {
                settings.extend(self.settings.sources.values().cloned());
                // Fresh providers before the library's earlier copies.
                settings.sort_by_key(|s| s.kind);
            }
        }
        let (built, skipped) = sources::build(
            &settings,
            options.workspace.as_deref(),
            std::slice::from_ref(&self.settings.data_dir),
        );
        let outcomes = skipped
            .into_iter()
            .filter(|(_, why)| wanted.is_some() || why != "disabled in the configuration")
            .filter(|(name, why)| {
                // Sources that simply are not set up are not news on every run.
                wanted.is_some() || !(name == "feeds" && why.starts_with("no feed URLs"))
            })
            .map(|(name, why)| SourceOutcome {
                provider: name,
                status: "unavailable".to_owned(),
                count: 0,
                millis: 0,
                message: Some(why),
            })
            .collect();
        Ok((built, outcomes))
    }
}

/// Runs research with the configuration's sources, model and library: the entry point for the
/// editor and the terminal.
pub async fn run(
    config: &Config,
    query: &str,
    options: RunOptions,
    progress: impl Fn(Phase, u8, &str) + Send + Sync,
    cancel: CancellationToken,
) -> Result<ResearchRun, ResearchError> {
    let research = Research::new(config)?;
    research.run(query, options, &progress, cancel).await
}

/// Opens the library the configuration names.
pub fn open_library(config: &Config) -> Result<Library, StoreError> {
    let (settings, _) = ResearchConfig::from_config(config);
    Library::open(&settings.library)
}

/// The report file of `record`, rewritten from the record when it is missing.
pub fn ensure_report(library: &Library, record: &ResearchRecord) -> std::io::Result<PathBuf> {
    let path = library.report_path(&record.id);
    if !path.exists() {
        report::write(record, &path)?;
    }
    Ok(path)
}

/// Which sources count as independent of each other: the registrable domain of the URL; for
/// scholarly hosts that front many publishers (doi.org, arXiv, Semantic Scholar, OpenAlex) the
/// venue, else the DOI's registrant prefix, else the work itself; workspace files and earlier
/// research count as one origin each.
pub fn independence_key(s: &SourceRecord) -> String {
    match s.venue_type.as_str() {
        "workspace" => return "workspace".to_owned(),
        "library" => return "library".to_owned(),
        _ => {}
    }
    let domain = s
        .url
        .as_deref()
        .and_then(domain::host_of)
        .and_then(|h| domain::registrable_domain(&h));
    const HUBS: [&str; 6] = [
        "doi.org",
        "arxiv.org",
        "semanticscholar.org",
        "openalex.org",
        "crossref.org",
        "europepmc.org",
    ];
    match domain {
        Some(d) if !HUBS.contains(&d.as_str()) => d,
        _ => {
            if let Some(v) = s
                .venue
                .as_deref()
                .map(dedupe::normalize_title)
                .filter(|v| !v.is_empty() && v != "arxiv")
            {
                format!("venue:{v}")
            } else if let Some(prefix) = s.doi.as_deref().and_then(|d| d.split('/').next()) {
                format!("doi:{prefix}")
            } else {
                s.key.clone()
            }
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod embeddings_tests {
    use super::*;
    use crate::config::ValueSource;

    fn named(research: &str) -> Result<Option<String>, String> {
        let text = format!(
            "[providers.ollama]\nbase_url = \"http://127.0.0.1:11434/v1\"\n[providers.claude]\nkind = \"anthropic\"\n[research]\n{research}"
        );
        let (config, problems) = Config::from_toml_str(&text, ValueSource::Default);
        assert!(problems.is_empty(), "{problems:?}");
        let (settings, _) = ResearchConfig::from_config(&config);
        embedder_for(&config, &settings).map(|e| e.map(|e| e.name().to_owned()))
    }

    #[test]
    fn an_embedding_model_is_a_provider_and_a_model() {
        assert_eq!(named(""), Ok(None));
        assert_eq!(named("embeddings = \"  \""), Ok(None));
        assert_eq!(
            named("embeddings = \"ollama/nomic-embed-text\""),
            Ok(Some("ollama/nomic-embed-text".to_owned()))
        );
        let no_model = named("embeddings = \"ollama\"").unwrap_err();
        assert!(
            no_model.contains("write it as PROVIDER/MODEL"),
            "{no_model}"
        );
        let unknown = named("embeddings = \"lmstudio/x\"").unwrap_err();
        assert!(
            unknown.contains("no provider \"lmstudio\"")
                && unknown.contains("known: claude, ollama"),
            "{unknown}"
        );
        let other_wire = named("embeddings = \"claude/x\"").unwrap_err();
        assert!(
            other_wire.contains("neither an OpenAI-compatible server"),
            "{other_wire}"
        );
        assert!(other_wire.ends_with("passages are ranked by their words alone"));
        assert_eq!(named("embeddings = \"off\""), Ok(None));
    }

    /// The built-in encoder is the default when its file is in the data dir, and a chat model
    /// named as the embedding model is refused with what to do.
    #[test]
    fn the_built_in_encoder_is_used_when_it_is_downloaded() {
        let data = tempfile::tempdir().unwrap();
        let at = |research: &str| {
            let text = format!(
                "data_dir = {:?}\n[research]\n{research}",
                data.path().display().to_string()
            );
            let (config, problems) = Config::from_toml_str(&text, ValueSource::Default);
            assert!(problems.is_empty(), "{problems:?}");
            let (settings, _) = ResearchConfig::from_config(&config);
            embedder_for(&config, &settings).map(|e| e.map(|e| e.name().to_owned()))
        };
        assert_eq!(at(""), Ok(None));
        if !crate::model::embedded::AVAILABLE {
            return;
        }
        let models = data.path().join("models");
        std::fs::create_dir_all(&models).unwrap();
        let encoder =
            crate::model::embedded::catalog::find(crate::model::embedded::DEFAULT_ENCODER).unwrap();
        std::fs::write(models.join(encoder.file), gguf_header("bert", Some(1))).unwrap();
        assert_eq!(at(""), Ok(Some("embedded/all-minilm-l6-v2".to_owned())));
        assert_eq!(at("embeddings = \"off\""), Ok(None));
        std::fs::write(models.join("chat.gguf"), gguf_header("qwen2", None)).unwrap();
        let chat = at("embeddings = \"embedded/chat.gguf\"").unwrap_err();
        assert!(chat.contains("has no pooling"), "{chat}");
        std::fs::write(models.join(encoder.file), b"not a model").unwrap();
        let broken = at("").unwrap_err();
        assert!(
            broken.starts_with("the built-in embedding model (all-minilm-l6-v2) cannot be used")
                && broken.contains("not a GGUF model file"),
            "{broken}"
        );
    }

    /// A GGUF header with no tensors: an architecture and, for an encoder, its pooling.
    fn gguf_header(arch: &str, pooling: Option<u32>) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend(0u64.to_le_bytes());
        out.extend((1 + u64::from(pooling.is_some())).to_le_bytes());
        let key = |out: &mut Vec<u8>, k: &str| {
            out.extend((k.len() as u64).to_le_bytes());
            out.extend(k.as_bytes());
        };
        key(&mut out, "general.architecture");
        out.extend(8u32.to_le_bytes());
        out.extend((arch.len() as u64).to_le_bytes());
        out.extend(arch.as_bytes());
        if let Some(pooling) = pooling {
            key(&mut out, &format!("{arch}.pooling_type"));
            out.extend(4u32.to_le_bytes());
            out.extend(pooling.to_le_bytes());
        }
        // The (empty) tensor data starts at the next 32-byte boundary.
        out.resize(out.len().div_ceil(32) * 32, 0);
        out
    }
}
