//! One research run, phase by phase: [`Plan`] (the question and the budgets), sources (every
//! source at once), rank (dedupe, credibility), synthesis (`generate.rs`), check (citations
//! normalised and validated, the extractive fallback, each citation's support), corroboration
//! (independent origins per claim) and save. Each phase is a method taking what the previous
//! one produced, so the order of [`Research::run`] reads as the pipeline of `docs/research.md`.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio_util::sync::CancellationToken;

use crate::model::ChatModel;
use crate::research::credibility::{self, Context};
use crate::research::generate::Synthesis;
use crate::research::sources::{Source, SourceContext, SourceError, SourceQuery};
use crate::research::synthesis::{self, ValidClaim};
use crate::research::{
    Phase, ProgressFn, Research, ResearchError, ResearchRun, RunOptions, config, dedupe,
    independence_key, plural, report, support,
};
use crate::store::{
    CitationCheck, Claim, ResearchRecord, SourceOutcome, SourceRecord, StoreError, SupportSummary,
};

/// The question and the budgets of one run.
struct Plan {
    query: String,
    started: Instant,
    created_at: String,
    depth: u8,
    budget: Duration,
    deadline: Instant,
    token_budget: usize,
    verify: bool,
    context: Context,
}

/// The synthesis after its check: what is shown, the claims with the (new) numbers they cite,
/// and which candidate each number is.
struct Checked {
    text: String,
    kind: &'static str,
    model: Option<String>,
    claims: Vec<ValidClaim>,
    /// `numbered[new - 1]` is the key of source `[new]`.
    numbered: Vec<String>,
    notes: Vec<String>,
    /// The run delivered less than asked for (budget, failed model, fallback).
    partial: bool,
    input_tokens: u64,
    output_tokens: u64,
    /// The model that wrote the synthesis, for the verifying pass.
    writer: Option<Arc<dyn ChatModel>>,
    /// The support of the model's own citations before the check repaired them.
    model_support: Option<SupportSummary>,
}

impl Research {
    /// Runs the whole pipeline and saves the record (one transaction) and its report.
    pub async fn run(
        &self,
        query: &str,
        options: RunOptions,
        progress: ProgressFn<'_>,
        cancel: CancellationToken,
    ) -> Result<ResearchRun, ResearchError> {
        let plan = self.plan(query, &options)?;
        let (found, outcomes) = self.gather(&plan, &options, progress, &cancel).await?;
        let merged = self.rank(&plan, found, progress);
        // Everything that may be shown, best first; the model's context decides how many are.
        let candidates: Vec<SourceRecord> = merged
            .iter()
            .filter(|s| !s.retracted && s.credibility.score > 0.0)
            .take(40)
            .cloned()
            .collect();
        let synthesis = self
            .synthesize(
                &plan.query,
                &candidates,
                plan.token_budget,
                plan.deadline,
                progress,
                &cancel,
            )
            .await;
        if cancel.is_cancelled() {
            return Err(ResearchError::Cancelled);
        }
        let mut checked = self.check(&plan, synthesis, &candidates, progress);
        let checks = self
            .support(&plan, &mut checked, &candidates, progress, &cancel)
            .await;
        if cancel.is_cancelled() {
            return Err(ResearchError::Cancelled);
        }
        let (sources, claims) = self.corroborate(&plan, merged, &mut checked, checks, progress);
        let partial = checked.partial
            || outcomes
                .iter()
                .any(|o| matches!(o.status.as_str(), "failed" | "timeout"));
        let support = SupportSummary::of(&claims);
        let record = ResearchRecord {
            id: crate::store::new_id(),
            query: plan.query.clone(),
            created_at: plan.created_at.clone(),
            status: if partial { "partial" } else { "complete" }.to_owned(),
            synthesis: checked.text,
            synthesis_kind: checked.kind.to_owned(),
            model: checked.model,
            duration_ms: plan.started.elapsed().as_millis() as u64,
            input_tokens: checked.input_tokens,
            output_tokens: checked.output_tokens,
            sources,
            claims,
            outcomes,
            notes: checked.notes,
            support,
            model_support: checked.model_support,
        };
        if cancel.is_cancelled() {
            return Err(ResearchError::Cancelled);
        }
        self.save(record, progress).await
    }

    /// The question, checked, and the run's budgets.
    fn plan(&self, query: &str, options: &RunOptions) -> Result<Plan, ResearchError> {
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
        let budget = options.time_budget.unwrap_or(self.settings.time_budget);
        let created_at = crate::store::now_rfc3339();
        let year: i32 = created_at
            .get(..4)
            .and_then(|y| y.parse().ok())
            .unwrap_or(2026);
        let time_sensitive = options
            .time_sensitive
            .unwrap_or_else(|| credibility::is_time_sensitive(&query, year));
        Ok(Plan {
            depth: options.depth.unwrap_or(self.settings.depth).clamp(1, 5),
            budget,
            deadline: started + budget,
            token_budget: options.token_budget.unwrap_or(self.settings.token_budget),
            verify: options.verify.unwrap_or(self.settings.verify),
            context: Context {
                time_sensitive,
                year,
            },
            query,
            started,
            created_at,
        })
    }

    /// Asks every selected source at once; returns what they found (in the configured order of
    /// sources, whatever order they answered in) and what each did.
    async fn gather(
        &self,
        plan: &Plan,
        options: &RunOptions,
        progress: ProgressFn<'_>,
        cancel: &CancellationToken,
    ) -> Result<(Vec<SourceRecord>, Vec<SourceOutcome>), ResearchError> {
        let (sources, mut outcomes) = self.select_sources(options)?;
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
        let depth = plan.depth as usize;
        let per_source = |s: &Arc<dyn Source>| {
            let settings = self.settings.sources.get(s.name());
            settings.and_then(|c| c.max_results).unwrap_or_else(|| {
                // Passages are small: the local sources offer more, the budget decides.
                match settings.map(|c| c.kind) {
                    Some(config::SourceKind::Workspace) => 12 * depth,
                    _ => 5 * depth,
                }
            })
        };
        // Sources may use at most 60% of the time, so the synthesis keeps its share.
        let source_limit = plan.budget.mul_f32(0.6);
        let mut pending: FuturesUnordered<_> = sources
            .iter()
            .enumerate()
            .map(|(index, source)| {
                let q = SourceQuery {
                    text: plan.query.clone(),
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
        let mut batches: Vec<(usize, Vec<SourceRecord>)> = Vec::new();
        while let Some((index, name, result, elapsed)) = pending.next().await {
            done += 1;
            let millis = elapsed.as_millis() as u64;
            let (outcome, message, batch) = outcome_of(&name, result, millis);
            batches.push((index, batch));
            tracing::info!(source = %name, status = %outcome.status, count = outcome.count, millis, "research source");
            outcomes.push(outcome);
            progress(Phase::Sources, (2 + 38 * done / total) as u8, &message);
        }
        drop(pending);
        if cancel.is_cancelled() {
            return Err(ResearchError::Cancelled);
        }
        batches.sort_by_key(|(index, _)| *index);
        outcomes.sort_by(|a, b| a.provider.cmp(&b.provider));
        Ok((batches.into_iter().flat_map(|(_, b)| b).collect(), outcomes))
    }

    /// Merges duplicates and scores each source, best first.
    fn rank(
        &self,
        plan: &Plan,
        found: Vec<SourceRecord>,
        progress: ProgressFn<'_>,
    ) -> Vec<SourceRecord> {
        let before = found.len();
        let mut merged = dedupe::dedupe(found);
        progress(
            Phase::Dedupe,
            45,
            &format!("{before} results → {} distinct sources", merged.len()),
        );
        for s in &mut merged {
            s.credibility = credibility::score(s, 0, &self.lists, plan.context);
        }
        // Stable: equally credible sources keep their rank (passages of the workspace).
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
                if plan.context.time_sensitive {
                    " (recency counts)"
                } else {
                    ""
                }
            ),
        );
        merged
    }

    /// Validates the model's citations; replaces a synthesis that kept fewer than half of its
    /// claims (or cited nothing) with the extractive one, saying why.
    fn check(
        &self,
        plan: &Plan,
        mut synthesis: Synthesis,
        candidates: &[SourceRecord],
        progress: ProgressFn<'_>,
    ) -> Checked {
        let mut notes = std::mem::take(&mut synthesis.notes);
        let mut partial = synthesis.budget_cut;
        let mut model = synthesis.model.clone();
        let mut model_support = None;
        let (validated, kind) = match synthesis.extractive_claims.take() {
            Some(claims) => (
                synthesis::number_extractive(&synthesis.text, claims),
                "extractive",
            ),
            None => {
                let shown = &candidates[..synthesis.shown.min(candidates.len())];
                let v = synthesis::validate_citations(&synthesis.text, shown);
                notes.extend(v.notes.iter().cloned());
                model_support = v.raw.clone();
                match v.fallback_reason() {
                    None => (v, "model"),
                    Some(reason) => {
                        progress(
                            Phase::Synthesis,
                            90,
                            &format!("fell back to the extractive synthesis: {reason}"),
                        );
                        notes.push(format!(
                            "fell back to the extractive synthesis: {reason}; the model's answer was not kept"
                        ));
                        partial = true;
                        let fallback = Synthesis::extractive(
                            &plan.query,
                            candidates,
                            &reason,
                            Vec::new(),
                            true,
                        );
                        let claims = fallback.extractive_claims.unwrap_or_default();
                        model = model.map(|m| format!("{m} (not kept)"));
                        (
                            synthesis::number_extractive(&fallback.text, claims),
                            "extractive",
                        )
                    }
                }
            }
        };
        let numbered: Vec<String> = validated
            .order
            .iter()
            .filter_map(|old| {
                candidates
                    .get((*old as usize).wrapping_sub(1))
                    .map(|s| s.key.clone())
            })
            .collect();
        Checked {
            text: validated.text,
            kind,
            model,
            claims: validated.claims,
            numbered,
            notes,
            partial,
            input_tokens: synthesis.usage.input_tokens,
            output_tokens: synthesis.usage.output_tokens,
            writer: synthesis.writer,
            model_support,
        }
    }

    /// Checks each citation: the overlap measure always, the model's verdict with `verify`.
    /// Returns one list of checks per claim.
    async fn support(
        &self,
        plan: &Plan,
        checked: &mut Checked,
        candidates: &[SourceRecord],
        progress: ProgressFn<'_>,
        cancel: &CancellationToken,
    ) -> Vec<Vec<CitationCheck>> {
        let by_key: HashMap<&str, &SourceRecord> =
            candidates.iter().map(|s| (s.key.as_str(), s)).collect();
        let mut checks: Vec<Vec<CitationCheck>> = Vec::new();
        let mut pairs: Vec<(usize, usize, String, String)> = Vec::new();
        for (ci, claim) in checked.claims.iter().enumerate() {
            let mut list = Vec::new();
            for n in &claim.sources {
                let Some(source) = checked
                    .numbered
                    .get((*n as usize).wrapping_sub(1))
                    .and_then(|k| by_key.get(k.as_str()))
                else {
                    continue;
                };
                let stems = support::passage_stems(&source.title, &source.snippet);
                let (overlap, verdict) = support::verdict(&claim.text, &stems);
                pairs.push((
                    ci,
                    list.len(),
                    claim.text.clone(),
                    format!("{}\n{}", source.title, source.snippet),
                ));
                list.push(CitationCheck {
                    source_key: source.key.clone(),
                    overlap,
                    verdict: verdict.to_owned(),
                    model_verdict: None,
                });
            }
            checks.push(list);
        }
        if plan.verify && checked.kind == "model" && !pairs.is_empty() {
            match checked.writer.clone() {
                Some(model) => {
                    let asked: Vec<(String, String)> = pairs
                        .iter()
                        .map(|(_, _, c, p)| (c.clone(), p.clone()))
                        .collect();
                    let (verdicts, usage) = self
                        .verify(model.as_ref(), &asked, plan.deadline, progress, cancel)
                        .await;
                    checked.input_tokens += usage.input_tokens;
                    checked.output_tokens += usage.output_tokens;
                    let unchecked = verdicts.iter().filter(|v| v.is_none()).count();
                    if unchecked > 0 {
                        checked.notes.push(format!(
                            "the verifying pass gave no verdict for {unchecked} of {} citations (time budget or unclear answer); the overlap measure stands for those",
                            verdicts.len()
                        ));
                    }
                    for ((ci, k, _, _), verdict) in pairs.iter().zip(verdicts) {
                        if let Some(v) = verdict {
                            let check = &mut checks[*ci][*k];
                            check.model_verdict = Some(v.to_owned());
                            check.verdict = support::from_model(v).to_owned();
                        }
                    }
                }
                None => tracing::debug!("no model to verify with"),
            }
        }
        checks
    }

    /// Independent origins per claim, the sources numbered as cited and scored again with
    /// their corroboration. Returns the sources (cited first, by number) and the claims.
    fn corroborate(
        &self,
        plan: &Plan,
        mut merged: Vec<SourceRecord>,
        checked: &mut Checked,
        checks: Vec<Vec<CitationCheck>>,
        progress: ProgressFn<'_>,
    ) -> (Vec<SourceRecord>, Vec<Claim>) {
        let by_key: HashMap<String, SourceRecord> =
            merged.iter().map(|s| (s.key.clone(), s.clone())).collect();
        let mut claims: Vec<Claim> = Vec::new();
        let mut support_of: HashMap<String, u32> = HashMap::new();
        let mut checks = checks.into_iter();
        for claim in std::mem::take(&mut checked.claims) {
            let claim_checks = checks.next().unwrap_or_default();
            let keys: Vec<String> = claim
                .sources
                .iter()
                .filter_map(|n| checked.numbered.get((*n as usize).wrapping_sub(1)).cloned())
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
                .filter_map(|k| by_key.get(k))
                .map(independence_key)
                .collect();
            let n = independent.len() as u32;
            for k in &keys {
                let e = support_of.entry(k.clone()).or_insert(0);
                *e = (*e).max(n);
            }
            claims.push(Claim {
                n: claims.len() as u32 + 1,
                text: claim.text,
                sources: keys,
                independent_domains: n,
                attributed: claim.attributed,
                checks: claim_checks,
            });
        }
        for s in &mut merged {
            let n = support_of.get(&s.key).copied().unwrap_or(0);
            s.credibility = credibility::score(s, n, &self.lists, plan.context);
            s.n = checked
                .numbered
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
        let summary = SupportSummary::of(&claims);
        let supported = match summary.share {
            Some(share) => format!(
                "; {:.0}% of {} citation{} supported",
                share * 100.0,
                summary.citations,
                plural(summary.citations as usize)
            ),
            None => String::new(),
        };
        progress(
            Phase::Corroboration,
            92,
            &format!(
                "{} claim{}, {} with several independent sources{supported}",
                claims.len(),
                plural(claims.len()),
                claims.iter().filter(|c| c.independent_domains >= 2).count()
            ),
        );
        (merged, claims)
    }

    /// Saves the record (one transaction) and writes its report.
    async fn save(
        &self,
        record: ResearchRecord,
        progress: ProgressFn<'_>,
    ) -> Result<ResearchRun, ResearchError> {
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
}

/// A source's answer as its outcome, a progress message and its records (credited to it).
fn outcome_of(
    name: &str,
    result: Result<crate::research::sources::SourceResults, SourceError>,
    millis: u64,
) -> (SourceOutcome, String, Vec<SourceRecord>) {
    match result {
        Ok(f) => {
            let count = f.records.len();
            let batch = f
                .records
                .into_iter()
                .map(|mut r| {
                    if r.provider.is_empty() || !r.providers.iter().any(|p| p == name) {
                        r.provider = name.to_owned();
                        r.providers = vec![name.to_owned()];
                    }
                    r
                })
                .collect();
            let status = if f.cached.is_some() { "cached" } else { "ok" };
            let text = match &f.cached {
                Some(why) => format!("{name}: {count} result{} ({why})", plural(count)),
                None => format!("{name}: {count} result{} in {millis} ms", plural(count)),
            };
            (
                SourceOutcome {
                    provider: name.to_owned(),
                    status: status.to_owned(),
                    count,
                    millis,
                    message: f.cached,
                },
                text,
                batch,
            )
        }
        Err(err) => {
            let status = match err {
                SourceError::Timeout(_) => "timeout",
                SourceError::Cancelled => "cancelled",
                SourceError::Unavailable(_) => "unavailable",
                _ => "failed",
            };
            (
                SourceOutcome {
                    provider: name.to_owned(),
                    status: status.to_owned(),
                    count: 0,
                    millis,
                    message: Some(err.to_string()),
                },
                format!("{name} {status}: {err}"),
                Vec::new(),
            )
        }
    }
}
