//! Deep research: a question fans out to every configured source at once; what comes back is
//! de-duplicated, scored for credibility with an explained breakdown, handed to a model as a
//! numbered list it may cite only by number, checked for citations outside that list, corroborated
//! by counting independent domains per claim, and saved in the library with a Markdown report.
//! See `docs/research.md`.
//!
//! The editor and the terminal call the same [`Research::run`] (or [`run`]), which reports
//! [`Phase`]s with percentages through a callback (a heartbeat during synthesis) and stops
//! outstanding requests when its cancellation token fires. A source that fails or times out is
//! reported in the record while the others count; with no model reachable the synthesis is
//! extractive and labelled so. This module never sees LSP types and never lets a key reach a
//! log, an error or the library.

pub mod config;
pub mod credibility;
pub mod dates;
pub mod dedupe;
pub mod domain;
pub mod report;
pub mod sources;
pub mod synthesis;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConfigProblem};
use crate::model::{ChatModel, ChatOptions, ChatRequest, Message, ModelRouter, StreamEvent, Usage};
use crate::research::config::ResearchConfig;
use crate::research::credibility::{Context, Lists};
use crate::research::sources::{Source, SourceContext, SourceError, SourceQuery};
use crate::store::{Claim, Library, SourceOutcome, SourceRecord, StoreError};
use crate::tokens::{Encoding, count_tokens};

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

/// A research engine: settings, credibility lists, the library, and (optionally) substitute
/// sources or model for tests. Cheap to keep for the life of a server.
pub struct Research {
    settings: ResearchConfig,
    lists: Lists,
    library: Arc<Library>,
    sources: Option<Vec<Arc<dyn Source>>>,
    model: ModelChoice,
    problems: Vec<String>,
}

impl Research {
    /// Reads `[research]`, loads the credibility lists and opens the library.
    pub fn new(config: &Config) -> Result<Research, ResearchError> {
        let (settings, problems) = ResearchConfig::from_config(config);
        let library = Arc::new(Library::open(&settings.library)?);
        let mut research = Research::with_library(config, library);
        research.problems = problems
            .iter()
            .map(ConfigProblem::to_string)
            .chain(research.problems)
            .collect();
        Ok(research)
    }

    /// Like [`Research::new`] with an already open library.
    pub fn with_library(config: &Config, library: Arc<Library>) -> Research {
        let (settings, _) = ResearchConfig::from_config(config);
        let mut extra: Vec<PathBuf> = Vec::new();
        if let Some(user) = crate::config::user_config_path()
            && let Some(dir) = user.parent()
        {
            extra.push(dir.join("credibility.toml"));
        }
        extra.extend(settings.credibility.clone());
        let paths: Vec<&std::path::Path> = extra.iter().map(PathBuf::as_path).collect();
        let (lists, problems) = Lists::load(&paths);
        Research {
            model: ModelChoice::Router(Arc::new(ModelRouter::new(config.clone()))),
            settings,
            lists,
            library,
            sources: None,
            problems,
        }
    }

    /// Uses these sources instead of the configured ones (tests, embedders).
    pub fn set_sources(&mut self, sources: Vec<Arc<dyn Source>>) {
        self.sources = Some(sources);
    }

    /// Uses this model for the synthesis; `None`: never call a model (extractive synthesis).
    pub fn set_model(&mut self, model: Option<Arc<dyn ChatModel>>) {
        self.model = match model {
            Some(m) => ModelChoice::Fixed(m),
            None => ModelChoice::Off,
        };
    }

    pub fn library(&self) -> &Arc<Library> {
        &self.library
    }

    pub fn settings(&self) -> &ResearchConfig {
        &self.settings
    }

    /// Configuration and credibility-file problems found while setting up (for `doctor`-style
    /// display; the run goes on with defaults).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Runs the whole pipeline and saves the record (one transaction) and its report.
    pub async fn run(
        &self,
        query: &str,
        options: RunOptions,
        progress: ProgressFn<'_>,
        cancel: CancellationToken,
    ) -> Result<ResearchRun, ResearchError> {
        let started = Instant::now();
        let query = query.split_whitespace().collect::<Vec<_>>().join(" ");
        if query.is_empty() {
            return Err(ResearchError::BadQuery("an empty string".to_owned()));
        }
        if query.chars().count() > 2000 {
            return Err(ResearchError::BadQuery(format!(
                "{} characters (at most 2000)",
                query.chars().count()
            )));
        }
        let depth = options.depth.unwrap_or(self.settings.depth).clamp(1, 5);
        let budget = options.time_budget.unwrap_or(self.settings.time_budget);
        let deadline = started + budget;
        let token_budget = options.token_budget.unwrap_or(self.settings.token_budget);
        let created_at = crate::store::now_rfc3339();
        let year: i32 = created_at
            .get(..4)
            .and_then(|y| y.parse().ok())
            .unwrap_or(2026);
        let time_sensitive = options
            .time_sensitive
            .unwrap_or_else(|| credibility::is_time_sensitive(&query, year));
        let mut notes: Vec<String> = Vec::new();

        // --- sources -----------------------------------------------------------------------
        let (sources, mut outcomes) = self.select_sources(&options)?;
        progress(
            Phase::Sources,
            2,
            &format!("asking {} source{}", sources.len(), plural(sources.len())),
        );
        let context = SourceContext {
            client: crate::model::http::shared_client(Duration::from_secs(10))
                .map_err(|e| ResearchError::BadQuery(format!("no HTTP client: {e}")))?,
            library: Some(self.library.clone()),
            cancel: cancel.child_token(),
        };
        let per_source = |s: &Arc<dyn Source>| {
            self.settings
                .sources
                .get(s.name())
                .and_then(|c| c.max_results)
                .unwrap_or(5 * depth as usize)
        };
        // Sources may use at most 60% of the time left, so the synthesis keeps its share.
        let source_limit = budget.mul_f32(0.6);
        let mut pending: FuturesUnordered<_> = sources
            .iter()
            .enumerate()
            .map(|(index, source)| {
                let q = SourceQuery {
                    text: query.clone(),
                    max_results: per_source(source),
                };
                let context = context.clone();
                let source = source.clone();
                async move {
                    let t0 = Instant::now();
                    let limit = (source.timeout() + Duration::from_millis(500)).min(source_limit);
                    let result = tokio::select! {
                        _ = context.cancel.cancelled() => Err(SourceError::Cancelled),
                        r = tokio::time::timeout(limit, source.search(&q, &context)) => match r {
                            Ok(r) => r,
                            Err(_) => Err(SourceError::Timeout(limit.as_secs_f64())),
                        },
                    };
                    (index, source.name().to_owned(), result, t0.elapsed())
                }
            })
            .collect();
        let total = sources.len().max(1);
        let mut done = 0;
        // Batches by source, so that merged records credit providers in the configured order
        // whatever order they answered in.
        let mut batches: Vec<(usize, Vec<SourceRecord>)> = Vec::new();
        while let Some((index, name, result, elapsed)) = pending.next().await {
            done += 1;
            let millis = elapsed.as_millis() as u64;
            let (outcome, message) = match result {
                Ok(f) => {
                    let count = f.records.len();
                    let batch = f.records.into_iter().map(|mut r| {
                        if r.provider.is_empty() || !r.providers.iter().any(|p| p == &name) {
                            r.provider = name.clone();
                            r.providers = vec![name.clone()];
                        }
                        r
                    });
                    batches.push((index, batch.collect()));
                    let status = if f.cached.is_some() { "cached" } else { "ok" };
                    let text = match &f.cached {
                        Some(why) => format!("{name}: {count} result{} ({why})", plural(count)),
                        None => format!("{name}: {count} result{} in {millis} ms", plural(count)),
                    };
                    (
                        SourceOutcome {
                            provider: name.clone(),
                            status: status.to_owned(),
                            count,
                            millis,
                            message: f.cached,
                        },
                        text,
                    )
                }
                Err(err) => {
                    let status = match err {
                        SourceError::Timeout(_) => "timeout",
                        SourceError::Cancelled => "cancelled",
                        SourceError::Unavailable(_) => "unavailable",
                        _ => "failed",
                    };
                    let text = format!("{name} {status}: {err}");
                    (
                        SourceOutcome {
                            provider: name.clone(),
                            status: status.to_owned(),
                            count: 0,
                            millis,
                            message: Some(err.to_string()),
                        },
                        text,
                    )
                }
            };
            tracing::info!(source = %name, status = %outcome.status, count = outcome.count, millis, "research source");
            outcomes.push(outcome);
            progress(Phase::Sources, (2 + 38 * done / total) as u8, &message);
        }
        drop(pending);
        batches.sort_by_key(|(index, _)| *index);
        let found: Vec<SourceRecord> = batches.into_iter().flat_map(|(_, b)| b).collect();
        if cancel.is_cancelled() {
            return Err(ResearchError::Cancelled);
        }
        outcomes.sort_by(|a, b| a.provider.cmp(&b.provider));

        // --- dedupe ------------------------------------------------------------------------
        let before = found.len();
        let mut merged = dedupe::dedupe(found);
        progress(
            Phase::Dedupe,
            45,
            &format!("{before} results → {} distinct sources", merged.len()),
        );

        // --- credibility -------------------------------------------------------------------
        let ctx = Context {
            time_sensitive,
            year,
        };
        for s in &mut merged {
            s.credibility = credibility::score(s, 0, &self.lists, ctx);
        }
        merged.sort_by(|a, b| {
            b.credibility
                .score
                .partial_cmp(&a.credibility.score)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        progress(
            Phase::Credibility,
            50,
            &format!(
                "scored {} source{}{}",
                merged.len(),
                plural(merged.len()),
                if time_sensitive {
                    " (recency counts)"
                } else {
                    ""
                }
            ),
        );

        // --- synthesis ---------------------------------------------------------------------
        let shown_limit = (6 * depth as usize).min(30);
        let candidates: Vec<SourceRecord> = merged
            .iter()
            .filter(|s| !s.retracted && s.credibility.score > 0.0)
            .take(shown_limit)
            .cloned()
            .collect();
        let synthesis = self
            .synthesize(
                &query,
                &candidates,
                token_budget,
                deadline,
                progress,
                &cancel,
            )
            .await;
        if cancel.is_cancelled() {
            return Err(ResearchError::Cancelled);
        }
        let mut synthesis = synthesis;
        notes.append(&mut synthesis.notes);
        let validated = synthesis::validate_citations(&synthesis.text, synthesis.shown);
        notes.extend(validated.notes.iter().cloned());
        if synthesis.kind == "model" && validated.order.is_empty() {
            notes.push(
                "the model cited none of the sources: treat its answer as unsupported".to_owned(),
            );
        }
        // New number → source key.
        let numbered: Vec<String> = validated
            .order
            .iter()
            .filter_map(|old| {
                candidates
                    .get((*old as usize).wrapping_sub(1))
                    .map(|s| s.key.clone())
            })
            .collect();
        let old_to_new: HashMap<u32, u32> = validated
            .order
            .iter()
            .enumerate()
            .map(|(i, old)| (*old, i as u32 + 1))
            .collect();
        let raw_claims: Vec<(String, Vec<u32>)> = match synthesis.extractive_claims {
            Some(claims) => claims
                .into_iter()
                .map(|(text, ns)| {
                    (
                        text,
                        ns.iter()
                            .filter_map(|n| old_to_new.get(n).copied())
                            .collect(),
                    )
                })
                .collect(),
            None => validated.claims.clone(),
        };

        // --- corroboration -----------------------------------------------------------------
        let by_key: HashMap<&str, &SourceRecord> =
            merged.iter().map(|s| (s.key.as_str(), s)).collect();
        let mut claims: Vec<Claim> = Vec::new();
        let mut support_of: HashMap<String, u32> = HashMap::new();
        for (text, numbers) in raw_claims {
            let keys: Vec<String> = numbers
                .iter()
                .filter_map(|n| numbered.get((*n as usize).wrapping_sub(1)).cloned())
                .fold(Vec::new(), |mut acc, k| {
                    if !acc.contains(&k) {
                        acc.push(k);
                    }
                    acc
                });
            if keys.is_empty() {
                continue;
            }
            let independent: BTreeSet<String> = keys
                .iter()
                .filter_map(|k| by_key.get(k.as_str()))
                .map(|s| independence_key(s))
                .collect();
            let n = independent.len() as u32;
            for k in &keys {
                let e = support_of.entry(k.clone()).or_insert(0);
                *e = (*e).max(n);
            }
            claims.push(Claim {
                n: claims.len() as u32 + 1,
                text,
                sources: keys,
                independent_domains: n,
            });
        }
        for s in &mut merged {
            let n = support_of.get(&s.key).copied().unwrap_or(0);
            s.credibility = credibility::score(s, n, &self.lists, ctx);
            s.n = numbered
                .iter()
                .position(|k| k == &s.key)
                .map(|i| i as u32 + 1);
        }
        merged.sort_by(|a, b| match (a.n, b.n) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => b
                .credibility
                .score
                .partial_cmp(&a.credibility.score)
                .unwrap_or(std::cmp::Ordering::Equal),
        });
        progress(
            Phase::Corroboration,
            92,
            &format!(
                "{} claim{}, {} with several independent sources",
                claims.len(),
                plural(claims.len()),
                claims.iter().filter(|c| c.independent_domains >= 2).count()
            ),
        );

        // --- save --------------------------------------------------------------------------
        let partial = outcomes
            .iter()
            .any(|o| matches!(o.status.as_str(), "failed" | "timeout"))
            || synthesis.budget_cut;
        let record = ResearchRecord {
            id: crate::store::new_id(),
            query: query.clone(),
            created_at,
            status: if partial { "partial" } else { "complete" }.to_owned(),
            synthesis: validated.text,
            synthesis_kind: synthesis.kind.to_owned(),
            model: synthesis.model,
            duration_ms: started.elapsed().as_millis() as u64,
            input_tokens: synthesis.usage.input_tokens,
            output_tokens: synthesis.usage.output_tokens,
            sources: merged,
            claims,
            outcomes,
            notes,
        };
        if cancel.is_cancelled() {
            return Err(ResearchError::Cancelled);
        }
        let library = self.library.clone();
        let to_save = record.clone();
        tokio::task::spawn_blocking(move || library.save(&to_save))
            .await
            .map_err(|e| {
                ResearchError::Library(StoreError::Open {
                    path: self.library.path().to_path_buf(),
                    message: format!("the save stopped: {e}"),
                })
            })??;
        let report = self.library.report_path(&record.id);
        if let Err(err) = report::write(&record, &report) {
            tracing::warn!("cannot write the report {}: {err}", report.display());
        }
        progress(Phase::Saved, 100, &format!("saved as {}", record.id));
        Ok(ResearchRun { record, report })
    }

    /// The report of a saved record, written again from the library if the file is missing.
    pub fn report_for(&self, record: &ResearchRecord) -> std::io::Result<PathBuf> {
        ensure_report(&self.library, record)
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
        if let Some(override_sources) = &self.sources {
            let chosen = override_sources
                .iter()
                .filter(|s| {
                    wanted
                        .as_ref()
                        .is_none_or(|w| w.iter().any(|n| n == s.name()))
                })
                .cloned()
                .collect();
            return Ok((chosen, Vec::new()));
        }
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
        let (built, skipped) = sources::build(&settings, options.workspace.as_deref());
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

    async fn synthesize(
        &self,
        query: &str,
        candidates: &[SourceRecord],
        token_budget: usize,
        deadline: Instant,
        progress: ProgressFn<'_>,
        cancel: &CancellationToken,
    ) -> Synthesis {
        progress(Phase::Synthesis, 55, "choosing the model");
        let extractive = |reason: String, notes: Vec<String>, budget_cut: bool| {
            let (text, claims) = synthesis::extractive(query, candidates, &reason);
            Synthesis {
                text,
                shown: candidates.len(),
                kind: "extractive",
                model: None,
                usage: Usage::default(),
                notes,
                extractive_claims: Some(claims),
                budget_cut,
            }
        };
        if candidates.is_empty() {
            let mut s = extractive("no source returned anything".to_owned(), Vec::new(), false);
            s.text = "No source returned anything for this question, so there is nothing to synthesise. Check the providers below, or widen the question.".to_owned();
            return s;
        }
        let model: Arc<dyn ChatModel> = match &self.model {
            ModelChoice::Off => {
                return extractive(
                    "no model is configured for research".to_owned(),
                    Vec::new(),
                    false,
                );
            }
            ModelChoice::Fixed(m) => m.clone(),
            ModelChoice::Router(router) => {
                let left = deadline.saturating_duration_since(Instant::now());
                let chosen = tokio::select! {
                    _ = cancel.cancelled() => return extractive("cancelled".to_owned(), Vec::new(), false),
                    r = tokio::time::timeout(left, router.model(self.settings.model, cancel.child_token())) => r,
                };
                match chosen {
                    Ok(Ok(m)) => m,
                    Ok(Err(err)) => {
                        let reason = format!("no model was reachable ({err})");
                        return extractive(reason.clone(), vec![reason], false);
                    }
                    Err(_) => {
                        let reason = "the time budget ran out before a model was found".to_owned();
                        return extractive(reason.clone(), vec![reason], true);
                    }
                }
            }
        };
        let name = model.name().to_owned();
        let encoding = Encoding::for_model(&name);
        let fit = token_budget.min(
            model
                .context_window()
                .saturating_sub(self.settings.max_output_tokens as usize + 600),
        );
        let (system, user, shown) = synthesis::prompt(query, candidates, fit.max(200), encoding);
        let mut notes = Vec::new();
        if shown < candidates.len() {
            notes.push(format!(
                "the token budget ({fit} tokens of sources) fitted {shown} of {} sources into the prompt",
                candidates.len()
            ));
        }
        let request = ChatRequest {
            messages: vec![Message::system(system.clone()), Message::user(user.clone())],
            tools: Vec::new(),
            options: ChatOptions {
                temperature: Some(0.2),
                max_tokens: Some(self.settings.max_output_tokens),
                ..ChatOptions::default()
            },
        };
        let call_cancel = cancel.child_token();
        let mut stream = model.chat(request, call_cancel.clone());
        let started = Instant::now();
        let mut heartbeat = tokio::time::interval(self.settings.heartbeat);
        heartbeat.tick().await;
        let mut text = String::new();
        let mut usage = Usage::default();
        let mut failure: Option<String> = None;
        progress(
            Phase::Synthesis,
            56,
            &format!("writing the synthesis with {name}"),
        );
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            tokio::select! {
                _ = cancel.cancelled() => {
                    call_cancel.cancel();
                    failure = Some("cancelled".to_owned());
                    break;
                }
                _ = tokio::time::sleep(left) => {
                    call_cancel.cancel();
                    failure = Some(format!("the time budget ({:.0} s) ran out while the model was writing", self.settings.time_budget.as_secs_f64()));
                    break;
                }
                _ = heartbeat.tick() => {
                    let t = started.elapsed().as_secs_f64();
                    let pct = 56.0 + 33.0 * (1.0 - (-t / 40.0).exp());
                    progress(
                        Phase::Synthesis,
                        pct as u8,
                        &format!("writing the synthesis with {name}: {t:.0} s, {} characters so far", text.chars().count()),
                    );
                }
                event = stream.next() => match event {
                    Some(Ok(StreamEvent::TextDelta { text: delta })) => text.push_str(&delta),
                    Some(Ok(StreamEvent::TextToolCalls { prose })) => text = prose,
                    Some(Ok(StreamEvent::Done { usage: u, finish })) => {
                        usage = u;
                        if finish == crate::model::FinishReason::Length {
                            notes.push("the model hit its output-token limit; the synthesis may be cut short".to_owned());
                        }
                        break;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(err)) => {
                        failure = Some(format!("the model failed ({err})"));
                        break;
                    }
                    None => {
                        failure = Some("the model's answer ended early".to_owned());
                        break;
                    }
                },
            }
        }
        drop(stream);
        if usage.input_tokens == 0 {
            usage.input_tokens =
                (count_tokens(&system, encoding) + count_tokens(&user, encoding)) as u64;
        }
        if usage.output_tokens == 0 {
            usage.output_tokens = count_tokens(&text, encoding) as u64;
        }
        match failure {
            Some(reason) if text.trim().is_empty() || reason == "cancelled" => {
                notes.push(reason.clone());
                let mut s = extractive(reason, notes, true);
                s.usage = usage;
                s
            }
            Some(reason) => {
                notes.push(format!("{reason}; the partial answer is kept"));
                Synthesis {
                    text,
                    shown,
                    kind: "model",
                    model: Some(name),
                    usage,
                    notes,
                    extractive_claims: None,
                    budget_cut: true,
                }
            }
            None if text.trim().is_empty() => {
                let reason = format!("{name} answered with no text");
                notes.push(reason.clone());
                let mut s = extractive(reason, notes, true);
                s.usage = usage;
                s
            }
            None => Synthesis {
                text,
                shown,
                kind: "model",
                model: Some(name),
                usage,
                notes,
                extractive_claims: None,
                budget_cut: false,
            },
        }
    }
}

struct Synthesis {
    text: String,
    /// How many sources (from the top of the candidates) the text may cite.
    shown: usize,
    kind: &'static str,
    model: Option<String>,
    usage: Usage,
    notes: Vec<String>,
    /// For an extractive synthesis: its claims, numbered like the candidates.
    extractive_claims: Option<Vec<(String, Vec<u32>)>>,
    /// The synthesis is less than was asked for: a budget cut it, or the chosen model failed or
    /// said nothing (the record's status is then `partial`).
    budget_cut: bool,
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
