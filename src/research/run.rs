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
use crate::research::synthesis::{self, ValidClaim, Validated};
use crate::research::{
    Phase, ProgressFn, Research, ResearchError, ResearchRun, RunOptions, config, dedupe,
    extractive, independence_key, judge, meaning, parts, plural, report, support,
};
use crate::store::{
    CitationCheck, Claim, PartAnswer, ResearchRecord, SentenceCounts, SourceOutcome, SourceRecord,
    StoreError, SupportSummary,
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
    /// The support of the model's own citations before the check repaired them.
    model_support: Option<SupportSummary>,
    /// What became of the model's sentences (`None` for an extractive synthesis).
    sentences: Option<SentenceCounts>,
    parts: Vec<PartAnswer>,
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
        // The prompt takes them from the top: each part of the question in turn.
        let candidates = parts::prompt_order(&plan.query, candidates);
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
        let mut checked = self
            .check(&plan, synthesis, &candidates, progress, &cancel)
            .await;
        let checks = self.support(&checked, &candidates);
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
            sentences: checked.sentences,
            parts: checked.parts,
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

    /// Validates the model's citations (the overlap check), has the judge give every kept
    /// citation a verdict, one call per pair (`verify`), removes the citations it rejects (the
    /// sentence re-cited, attributed or dropped), and decides: a synthesis with too little
    /// supported text is replaced by the extractive one, saying why; a part of the question
    /// the model left without a supported sentence gets quoted sentences, or is said to have
    /// found nothing.
    async fn check(
        &self,
        plan: &Plan,
        synthesis: Synthesis,
        candidates: &[SourceRecord],
        progress: ProgressFn<'_>,
        cancel: &CancellationToken,
    ) -> Checked {
        let all_parts = parts::parts_for(&plan.query, candidates);
        let read = synthesis.shown.min(candidates.len());
        // No answer to the whole question was asked for: each part is asked on its own.
        let per_part = synthesis.per_part;
        let writer = synthesis.writer.clone();
        let first = match writer.clone() {
            Some(writer) if per_part => {
                self.each_part_on_its_own(
                    plan, synthesis, writer, &all_parts, candidates, progress, cancel,
                )
                .await
            }
            _ => {
                self.whole_question(plan, synthesis, &all_parts, candidates, progress, cancel)
                    .await
            }
        };
        let First {
            mut validated,
            kind,
            model,
            every_part: mut asked_first,
            mut notes,
            mut usage,
            partial,
            model_support,
            sentences,
        } = first;
        // Which parts the kept sentences answer; quoted sentences for the others.
        let mut answered: Vec<Vec<u32>> = vec![Vec::new(); all_parts.len()];
        for claim in &validated.claims {
            for p in claim.parts(&all_parts) {
                for n in &claim.sources {
                    if !answered[p].contains(n) {
                        answered[p].push(*n);
                    }
                }
            }
        }
        let mut quoted_parts: Vec<usize> = Vec::new();
        if kind == "model" {
            let mut missing: Vec<usize> = (0..all_parts.len())
                .filter(|p| answered[*p].is_empty())
                .collect();
            if !missing.is_empty() {
                let mut order = validated.order.clone();
                let mut renumber = |old: u32| match order.iter().position(|o| *o == old) {
                    Some(i) => i as u32 + 1,
                    None => {
                        order.push(old);
                        order.len() as u32
                    }
                };
                // What was searched for each part left unanswered, for the report to say.
                let mut searched: HashMap<usize, String> = HashMap::new();
                // The passages each part asked again was shown.
                let mut asked: HashMap<usize, Vec<usize>> = HashMap::new();
                if let Some(writer) = writer.as_ref() {
                    let again = match asked_first.take() {
                        // Asked about every part already (above): its usage is counted.
                        Some(again) => AskedAgain {
                            usage: crate::model::Usage::default(),
                            ..again
                        },
                        None => {
                            self.ask_again(
                                plan,
                                writer.as_ref(),
                                &all_parts,
                                &missing,
                                candidates,
                                false,
                                progress,
                                cancel,
                            )
                            .await
                        }
                    };
                    usage += again.usage;
                    notes.extend(again.notes);
                    searched = again.searched;
                    asked = again.shown;
                    let mut said = String::new();
                    let answered_again = again.answers.len();
                    // The paragraphs printed so far, by part: a part that points back is asked
                    // with the part before it and may be answered with the same sentences
                    // (Requests' "how do I fix it" after "…still fails with
                    // `CERTIFICATE_VERIFY_FAILED`. Why", 2026-12-04), which are not printed
                    // twice.
                    let mut printed: Vec<(String, usize)> = Vec::new();
                    for (p, claims) in again.answers {
                        said.push_str(&format!("**{}**\n\n", all_parts[p].text));
                        let mut line = Vec::new();
                        let mut kept = Vec::new();
                        for (mut claim, code) in claims {
                            claim.sources = claim.sources.into_iter().map(&mut renumber).collect();
                            let cited = cite_line(
                                &claim.text,
                                &claim.sources,
                                claim.attributed,
                                code.is_some(),
                            );
                            line.push(match code {
                                Some(code) => format!("{cited}\n\n{code}\n\n"),
                                None => cited,
                            });
                            for n in &claim.sources {
                                if !answered[p].contains(n) {
                                    answered[p].push(*n);
                                }
                            }
                            kept.push(claim);
                        }
                        // Sentences run on in a paragraph; after a code block, a new one.
                        let mut paragraph = String::new();
                        for piece in &line {
                            if !(paragraph.is_empty() || paragraph.ends_with('\n')) {
                                paragraph.push(' ');
                            }
                            paragraph.push_str(piece);
                        }
                        let paragraph = paragraph.trim_end().to_owned();
                        // Their claims are listed once too: the report's claims and its
                        // supported share count each sentence printed, not each part it answers.
                        match printed.iter().find(|(text, _)| *text == paragraph) {
                            Some((_, earlier)) => said.push_str(&format!(
                                "*The sentences printed under “{}” above answer this part too.*",
                                opening_words(&all_parts[*earlier].text)
                            )),
                            None => {
                                said.push_str(&paragraph);
                                printed.push((paragraph, p));
                                validated.claims.extend(kept);
                            }
                        }
                        said.push_str("\n\n");
                        missing.retain(|m| *m != p);
                    }
                    if !said.is_empty() {
                        // With quotes, the sentences under a part are the passages' own, picked
                        // by the model: the reader is told so.
                        let how = if self.settings.quote_parts {
                            "; the model picked the sentences of the passages that answer it, quoted as they are written"
                        } else {
                            ""
                        };
                        let heading = if per_part {
                            format!(
                                "*Each part of the question was asked on its own, with the passages ranked for it{how}:*"
                            )
                        } else if validated.text.trim().is_empty() {
                            format!(
                                "*The model's first answer had no supported sentence about any part of the question; each part was asked again with the passages ranked for it{how}:*"
                            )
                        } else {
                            format!(
                                "\n\n*Asked again with the passages ranked for the part{} the first answer left without a supported sentence{how}:*",
                                if answered_again > 1 { "s" } else { "" },
                            )
                        };
                        validated.text = format!(
                            "{}{heading}\n\n{}",
                            validated.text.trim_end(),
                            said.trim_end()
                        );
                    }
                }
                let quoted = extractive::quote(&plan.query, &all_parts, &missing, candidates);
                let mut extra = String::new();
                let mut said_nothing: Vec<String> = Vec::new();
                for (p, lines) in &quoted.sections {
                    if lines.is_empty() {
                        let what = match searched.get(p) {
                            Some(how) => format!(" ({how})"),
                            None => String::new(),
                        };
                        // The model read the first `read` passages and answered from them:
                        // the reader is pointed past them, or to them when no other passage
                        // holds enough of the part's words.
                        let again = asked.get(p).map_or(&[][..], Vec::as_slice);
                        let mut unread = read > 0 || !again.is_empty();
                        let mut pointed = parts::most_about(&plan.query, *p, candidates, |i| {
                            i < read || again.contains(&i)
                        });
                        if pointed.is_empty() {
                            pointed = parts::most_about(&plan.query, *p, candidates, |_| false);
                            unread = false;
                        }
                        // The passages its targeted pass read come first: the model may have
                        // missed the answer there.
                        let asked_over: Vec<u32> = if unread {
                            again.iter().map(|i| renumber(*i as u32 + 1)).collect()
                        } else {
                            Vec::new()
                        };
                        let pointed: Vec<u32> = pointed
                            .into_iter()
                            .map(|i| renumber(i as u32 + 1))
                            .collect();
                        said_nothing.push(parts::unanswered_line(
                            &all_parts[*p].text,
                            &what,
                            &pointed,
                            unread,
                            &asked_over,
                        ));
                        continue;
                    }
                    quoted_parts.push(*p);
                    extra.push_str(&format!("**{}**\n\n", all_parts[*p].text));
                    for line in lines {
                        extra.push_str(&renumber_line(line, &mut renumber));
                        extra.push('\n');
                    }
                    extra.push('\n');
                }
                for (text, sources) in quoted.claims {
                    let sources: Vec<u32> = sources.into_iter().map(&mut renumber).collect();
                    for p in parts::answers(&text, &all_parts) {
                        for n in &sources {
                            if !answered[p].contains(n) {
                                answered[p].push(*n);
                            }
                        }
                    }
                    validated.claims.push(ValidClaim {
                        text,
                        sources,
                        attributed: false,
                        verdicts: Vec::new(),
                        under: Vec::new(),
                    });
                }
                if !extra.is_empty() {
                    validated.text.push_str(&format!(
                        "\n\n*The model's answer has no supported sentence about {}; quoted from the sources:*\n\n{}",
                        quoted_parts.iter().map(|p| format!("\u{201c}{}\u{201d}", all_parts[*p].text)).collect::<Vec<_>>().join(" or "),
                        extra.trim_end()
                    ));
                    notes.push(format!(
                        "quoted sentences from the sources for {} part{} of the question the model's answer left without a supported sentence",
                        quoted_parts.len(),
                        plural(quoted_parts.len())
                    ));
                }
                if !said_nothing.is_empty() {
                    validated.text.push_str("\n\n");
                    validated.text.push_str(&said_nothing.join(" "));
                }
                validated.order = order;
            }
        }
        let numbered: Vec<String> = validated
            .order
            .iter()
            .filter_map(|old| {
                candidates
                    .get((*old as usize).wrapping_sub(1))
                    .map(|s| s.key.clone())
            })
            .collect();
        let parts = all_parts
            .iter()
            .zip(answered)
            .enumerate()
            .map(|(i, (part, mut sources))| {
                sources.sort_unstable();
                PartAnswer {
                    part: part.text.clone(),
                    answered: !sources.is_empty(),
                    sources,
                    quoted: kind == "extractive" || quoted_parts.contains(&i),
                }
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
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            model_support,
            sentences,
            parts,
        }
    }

    /// The first answer of a question answered part by part (`[research] per_part`): every
    /// part asked on its own ([`Research::ask_again`]); the extractive synthesis when no part
    /// gets a supported sentence.
    #[allow(clippy::too_many_arguments)]
    async fn each_part_on_its_own(
        &self,
        plan: &Plan,
        synthesis: Synthesis,
        writer: Arc<dyn ChatModel>,
        all_parts: &[parts::QuestionPart],
        candidates: &[SourceRecord],
        progress: ProgressFn<'_>,
        cancel: &CancellationToken,
    ) -> First {
        let mut first = First::of(synthesis, Validated::default(), "model");
        let why = format!(
            "a question of {} parts, each asked on its own",
            all_parts.len()
        );
        progress(
            Phase::Synthesis,
            56,
            &format!("{why}: asking {} about each part", writer.name()),
        );
        let asked = self
            .ask_every_part(
                &mut first,
                plan,
                writer.as_ref(),
                all_parts,
                candidates,
                true,
                progress,
                cancel,
            )
            .await;
        if asked.answers.is_empty() {
            first.notes.extend(asked.notes);
            first.fall_back(
                &plan.query,
                candidates,
                "no part's answer had a sentence its passages support",
                progress,
            );
            return first;
        }
        first.notes.push(format!(
            "{why} with its own best passages, {} of {} with a supported sentence kept",
            asked.answers.len(),
            all_parts.len()
        ));
        first.model = Some(writer.name().to_owned());
        first.every_part = Some(asked);
        first
    }

    /// Every part of the question asked on its own ([`Research::ask_again`]; `apart`: for the
    /// first time, not again after an answer to the whole question), its usage counted in
    /// `first`. Both first answers ask so: part by part, and after a whole answer that stands
    /// for no part.
    #[allow(clippy::too_many_arguments)]
    async fn ask_every_part(
        &self,
        first: &mut First,
        plan: &Plan,
        writer: &dyn ChatModel,
        all_parts: &[parts::QuestionPart],
        candidates: &[SourceRecord],
        apart: bool,
        progress: ProgressFn<'_>,
        cancel: &CancellationToken,
    ) -> AskedAgain {
        let every_part: Vec<usize> = (0..all_parts.len()).collect();
        let asked = self
            .ask_again(
                plan,
                writer,
                all_parts,
                &every_part,
                candidates,
                apart,
                progress,
                cancel,
            )
            .await;
        first.usage += asked.usage;
        asked
    }

    /// The first answer of a question answered as a whole: the model's answer checked (the
    /// overlap check, then the judge when `verify`), or the extractive synthesis generate.rs
    /// put in its place. An answer that stands for no part of a question of several parts
    /// (it copied the prompt's example, answered with no text, or no part keeps a supported
    /// sentence) has each part asked again over its own best passages before the extractive
    /// synthesis stands in: read by hand over uv's and MkDocs' docs (2026-11-30), every part a
    /// report wrongly said no sentence answers was in an extractive synthesis. The extractive
    /// synthesis stays when no part gets a supported sentence.
    async fn whole_question(
        &self,
        plan: &Plan,
        mut synthesis: Synthesis,
        all_parts: &[parts::QuestionPart],
        candidates: &[SourceRecord],
        progress: ProgressFn<'_>,
        cancel: &CancellationToken,
    ) -> First {
        let writer = synthesis.writer.clone();
        // Why the first answer stands for no part of the question, if so.
        let (mut first, stands_for_none) = match synthesis.extractive_claims.take() {
            Some(claims) => {
                let validated = synthesis::number_extractive(&synthesis.text, claims);
                (
                    First::of(synthesis, validated, "extractive"),
                    writer
                        .is_some()
                        .then(|| "the model's answer was not kept".to_owned()),
                )
            }
            None => {
                let shown = &candidates[..synthesis.shown.min(candidates.len())];
                let mut v = synthesis::validate_answer(&plan.query, &synthesis.text, shown);
                let model_support = v.raw.clone();
                let mut counts = SentenceCounts::default();
                let mut judge_notes = Vec::new();
                let mut used = crate::model::Usage::default();
                if plan.verify
                    && let Some(writer) = writer.clone()
                    && !v.claims.is_empty()
                {
                    let (judged, said, judging) = self
                        .judged(
                            plan,
                            writer.as_ref(),
                            &plan.query,
                            &synthesis.text,
                            shown,
                            v,
                            progress,
                            cancel,
                            &mut counts,
                        )
                        .await;
                    v = judged;
                    judge_notes = said;
                    used = judging;
                }
                counts.cited = v.cited as u32;
                counts.recited = v.recited as u32;
                counts.attributed = v.attributed as u32;
                counts.dropped = (v.dropped + v.unsupported) as u32;
                let reason = v.fallback_reason_for(all_parts);
                let mut first = First::of(synthesis, Validated::default(), "model");
                first.notes.extend(v.notes.iter().cloned());
                first.notes.extend(judge_notes);
                first.usage += used;
                first.model_support = model_support;
                first.sentences = Some(counts);
                first.validated = v;
                (first, reason)
            }
        };
        let Some(reason) = stands_for_none else {
            return first;
        };
        let why = match first.kind {
            "model" => format!("the model's answer answers no part of the question ({reason})"),
            _ => reason.clone(),
        };
        if let Some(writer) = writer.as_ref()
            && all_parts.len() > 1
        {
            progress(
                Phase::Synthesis,
                90,
                &format!("{why}: asking about each part again"),
            );
            let again = self
                .ask_every_part(
                    &mut first,
                    plan,
                    writer.as_ref(),
                    all_parts,
                    candidates,
                    false,
                    progress,
                    cancel,
                )
                .await;
            if !again.answers.is_empty() {
                first.notes.push(format!(
                    "{why}; asked about each part again with its own best passages, {} of {} with a supported sentence kept",
                    again.answers.len(),
                    all_parts.len()
                ));
                // The first answer's supported sentences stay; nothing else of it does.
                if first.kind != "model" || first.validated.claims.is_empty() {
                    first.validated = Validated::default();
                }
                first.model = Some(writer.name().to_owned());
                first.kind = "model";
                first.every_part = Some(again);
                return first;
            }
            first.notes.extend(again.notes);
        }
        // The model's answer checked, standing for too little: the extractive synthesis in
        // its place.
        if first.kind == "model" {
            first.fall_back(&plan.query, candidates, &reason, progress);
        }
        first
    }

    /// The targeted pass (docs/research.md, "Each part searched on its own"): each part in
    /// `missing` that the synthesis left without a supported sentence — or, `apart`, each part
    /// of a question answered part by part (`[research] per_part`) — gets one short call over
    /// its own best passages ([`parts::about`], at most [`synthesis::PART_PASSAGES`]); the
    /// sentences of its answer (with `[research] quote_parts`, the passages' own sentences it
    /// named, [`extractive::chosen`]) that a passage supports (the same overlap check as the
    /// synthesis's) and that answer the part are kept. Says, for every part asked about, what
    /// was searched.
    #[allow(clippy::too_many_arguments)]
    async fn ask_again(
        &self,
        plan: &Plan,
        writer: &dyn ChatModel,
        all_parts: &[parts::QuestionPart],
        missing: &[usize],
        candidates: &[SourceRecord],
        apart: bool,
        progress: ProgressFn<'_>,
        cancel: &CancellationToken,
    ) -> AskedAgain {
        // Asked for the first time (`[research] per_part`), or again after the synthesis.
        let again = if apart { "" } else { " again" };
        let mut asked_again = AskedAgain::default();
        let searched = parts::searched_parts(&plan.query, candidates);
        // The passages by meaning, embedded once for every part (`[research] embeddings`).
        let by_meaning = match &self.embedder {
            Some(embedder) if !missing.is_empty() => {
                let deadline = judge_deadline(plan.deadline, plan.budget, Instant::now());
                match meaning::Meaning::of(embedder.as_ref(), candidates, deadline).await {
                    Ok(m) => Some(m),
                    Err(why) => {
                        tracing::warn!("ranking by meaning: {why}");
                        asked_again.notes.push(format!(
                            "the parts were ranked by their words alone ({why})"
                        ));
                        None
                    }
                }
            }
            _ => None,
        };
        for &p in missing {
            let part = &all_parts[p];
            // A part that points back ("where should those comments go") is asked with the
            // part before it, and its passages ranked by the words of both.
            let Some((asked, by)) = parts::asked_for(all_parts, &searched, p) else {
                continue;
            };
            // A part asked with the part before it: its own search had only its few words.
            let search = (asked == part.text).then_some(p);
            let mut ranked = parts::asked_over(search, &by, candidates);
            if let Some(meaning) = &by_meaning {
                let deadline = judge_deadline(plan.deadline, plan.budget, Instant::now());
                let (reranked, failed) = meaning.reranked(&asked, ranked, deadline).await;
                ranked = reranked;
                if let Some(why) = failed {
                    tracing::warn!(part = %part.text, "ranking by meaning: {why}");
                    asked_again.notes.push(format!(
                        "\u{201c}{}\u{201d} was ranked by its words alone ({why})",
                        part.text
                    ));
                }
            }
            extractive::log_ranked(&by, &asked, &ranked, candidates);
            let words: Vec<String> = by
                .stems
                .iter()
                .zip(&by.weights)
                .filter(|(_, w)| **w > 1e-9)
                .map(|(s, _)| format!("\u{201c}{s}\u{201d}"))
                .collect();
            let held = parts::about(&by, candidates).len();
            let hold = format!(
                "{} of the {} passage{} found hold{} enough of its words ({}){}",
                held,
                candidates.len(),
                plural(candidates.len()),
                if held == 1 { "s" } else { "" },
                words.join(", "),
                match ranked.len().saturating_sub(held) {
                    0 => String::new(),
                    more => format!(
                        ", {more} more {} found for it by the search",
                        if more == 1 { "was" } else { "were" }
                    ),
                }
            );
            if ranked.is_empty() || cancel.is_cancelled() {
                asked_again.searched.insert(p, hold);
                continue;
            }
            let picked: Vec<usize> = ranked.into_iter().take(synthesis::PART_PASSAGES).collect();
            let sources: Vec<SourceRecord> =
                picked.iter().map(|i| candidates[*i].clone()).collect();
            progress(
                Phase::Synthesis,
                91,
                &format!(
                    "asking {}{again} about \u{201c}{}\u{201d} with its {} best passage{}",
                    writer.name(),
                    part.text,
                    sources.len(),
                    plural(sources.len())
                ),
            );
            let (result, used) = self
                .ask_part(
                    writer,
                    &asked,
                    &by,
                    &sources,
                    by_meaning.as_ref(),
                    judge_deadline(plan.deadline, plan.budget, Instant::now()),
                    cancel,
                )
                .await;
            asked_again.usage += used;
            let (answer, shown) = match result {
                Ok((answer, shown)) => {
                    asked_again
                        .shown
                        .insert(p, picked[..shown.min(picked.len())].to_vec());
                    (answer, shown)
                }
                Err(why) => {
                    asked_again.notes.push(format!(
                        "asking the model{again} about \u{201c}{}\u{201d} gave no answer ({why})",
                        part.text
                    ));
                    asked_again.searched.insert(p, hold);
                    continue;
                }
            };
            let mut v = synthesis::validate_answer(&asked, &answer, &sources[..shown]);
            // The model's check, as for the synthesis: a sentence of the targeted pass is as
            // likely to cite a passage that holds its words without saying it (bat's
            // configuration file "located in `$(bat --config-dir)/syntaxes`", 0.625 by overlap,
            // was the syntaxes section's).
            if plan.verify && !v.claims.is_empty() {
                let mut counts = SentenceCounts::default();
                let (judged, said, used) = self
                    .judged(
                        plan,
                        writer,
                        &asked,
                        &answer,
                        &sources[..shown],
                        v,
                        progress,
                        cancel,
                        &mut counts,
                    )
                    .await;
                v = judged;
                asked_again.notes.extend(said.into_iter().map(|note| {
                    format!("asked{again} about \u{201c}{}\u{201d}: {note}", part.text)
                }));
                asked_again.usage += used;
            }
            // The model was asked this part alone: a supported sentence of its answer that
            // holds any of the part's weighed words answers it, in whatever words, and the
            // supported sentences around it go with it. Keeping only the sentences that hold
            // the part's words dropped right ones that say the rest of the answer ("For most
            // users, this should mean that it works transparently." after attrs' sentence on
            // `cached_property` in slotted classes): in the answers read sentence by sentence
            // (docs/research.md, "Ruff's and attrs' docs") it dropped 9 right sentences, 1
            // partly right and no wrong one. An answer none of whose sentences holds a word of
            // the part is about something else, and nothing of it is kept.
            let on_part = v.claims.iter().any(|c| parts::share(&c.text, &by) > 1e-9);
            let kept: Vec<AnsweredAgain> = v
                .claims
                .iter()
                .filter(|_| on_part)
                .map(|c| {
                    let numbers = c
                        .sources
                        .iter()
                        .filter_map(|n| v.order.get(*n as usize - 1))
                        .map(|old| picked[*old as usize - 1] as u32 + 1)
                        .collect();
                    let claim = ValidClaim {
                        sources: numbers,
                        under: vec![part.text.clone()],
                        ..c.clone()
                    };
                    (claim, synthesis::code_led_to(&v.text, &c.text))
                })
                .filter(|(a, _)| !a.sources.is_empty())
                .collect();
            asked_again.notes.push(format!(
                "asked the model{again} about \u{201c}{}\u{201d}{} with its {} best passage{}: {} supported sentence{} kept",
                part.text,
                if asked == part.text {
                    ""
                } else {
                    " (with the part before it, which it points back at)"
                },
                shown,
                plural(shown),
                kept.len(),
                plural(kept.len())
            ));
            if kept.is_empty() {
                asked_again.searched.insert(
                    p,
                    format!(
                        "{hold}; asked{again} with the best {shown}, the model {}",
                        if self.settings.quote_parts {
                            "quoted no sentence of them about it"
                        } else {
                            "wrote nothing they support"
                        }
                    ),
                );
            } else {
                asked_again.answers.push((p, kept));
            }
        }
        asked_again
    }

    /// The judge's pass over a validated model answer: a call per kept citation and per
    /// alternate passage of a sentence ([`judge::pairs_for`]), then the answer validated
    /// again without the pairs it rejected ([`judge::apply`]). Returns the validated answer
    /// with each claim's verdicts, the notes and the tokens used.
    #[allow(clippy::too_many_arguments)]
    async fn judged(
        &self,
        plan: &Plan,
        writer: &dyn ChatModel,
        question: &str,
        answer: &str,
        shown: &[SourceRecord],
        first: synthesis::Validated,
        progress: ProgressFn<'_>,
        cancel: &CancellationToken,
        counts: &mut SentenceCounts,
    ) -> (synthesis::Validated, Vec<String>, crate::model::Usage) {
        let asked = judge::pairs_for(&first, shown);
        let (result, usage) = self
            .judge(
                writer,
                &judge::pairs_of(&asked, shown),
                judge_deadline(plan.deadline, plan.budget, Instant::now()),
                progress,
                cancel,
            )
            .await;
        match result {
            Ok(judged) => {
                let (v, notes) =
                    judge::apply(question, answer, shown, first, &asked, &judged, counts);
                (v, notes, usage)
            }
            Err(why) => (
                first,
                vec![format!(
                    "the model's check of the citations gave no verdict ({why}); the overlap measure stands"
                )],
                usage,
            ),
        }
    }

    /// Each citation's checks: the overlap measure always, and the judge's verdict where it
    /// gave one (it then counts). Returns one list of checks per claim.
    fn support(&self, checked: &Checked, candidates: &[SourceRecord]) -> Vec<Vec<CitationCheck>> {
        let by_key: HashMap<&str, &SourceRecord> =
            candidates.iter().map(|s| (s.key.as_str(), s)).collect();
        checked
            .claims
            .iter()
            .map(|claim| {
                claim
                    .sources
                    .iter()
                    .enumerate()
                    .filter_map(|(i, n)| {
                        let source = checked
                            .numbered
                            .get((*n as usize).wrapping_sub(1))
                            .and_then(|k| by_key.get(k.as_str()))?;
                        let stems = support::passage_stems(&source.title, &source.snippet);
                        let (overlap, verdict) = support::verdict(&claim.text, &stems);
                        let model_verdict = claim.verdicts.get(i).copied().flatten();
                        Some(CitationCheck {
                            source_key: source.key.clone(),
                            overlap,
                            verdict: model_verdict
                                .map_or(verdict, support::from_model)
                                .to_owned(),
                            model_verdict: model_verdict.map(str::to_owned),
                        })
                    })
                    .collect()
            })
            .collect()
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
        // What the checks kept, not a share: they remove what they reject (report.rs).
        let supported = match summary.share {
            Some(_) => format!(
                "; {} citation{} kept by the checks",
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

/// A supported sentence of the targeted pass and the code block it leads in to.
type AnsweredAgain = (ValidClaim, Option<String>);

/// What the targeted pass found ([`Research::ask_again`]).
#[derive(Default)]
struct AskedAgain {
    /// Per part answered: its supported sentences, citing the candidates' numbers.
    answers: Vec<(usize, Vec<AnsweredAgain>)>,
    /// Per part not answered: what was searched.
    searched: HashMap<usize, String>,
    /// Per part asked again: the passages (indices into the candidates) the model was shown.
    shown: HashMap<usize, Vec<usize>>,
    notes: Vec<String>,
    usage: crate::model::Usage,
}

/// The first stage of [`Research::check`]: the answer as checked, before the parts it leaves
/// without a supported sentence are asked again, quoted or pointed at.
struct First {
    validated: Validated,
    kind: &'static str,
    model: Option<String>,
    /// Every part asked on its own already (part by part, or after a first answer that stands
    /// for no part) and answered for some: their sentences, placed under the parts.
    every_part: Option<AskedAgain>,
    notes: Vec<String>,
    usage: crate::model::Usage,
    partial: bool,
    model_support: Option<SupportSummary>,
    sentences: Option<SentenceCounts>,
}

impl First {
    /// `validated` of `kind`, with the synthesis's model, usage, notes and budget cut.
    fn of(synthesis: Synthesis, validated: Validated, kind: &'static str) -> First {
        First {
            validated,
            kind,
            model: synthesis.model,
            every_part: None,
            notes: synthesis.notes,
            usage: synthesis.usage,
            partial: synthesis.budget_cut,
            model_support: None,
            sentences: None,
        }
    }

    /// The extractive synthesis in place of the model's answer, which stands for too little
    /// (`reason`); the run is partial.
    fn fall_back(
        &mut self,
        query: &str,
        candidates: &[SourceRecord],
        reason: &str,
        progress: ProgressFn<'_>,
    ) {
        progress(
            Phase::Synthesis,
            90,
            &format!("fell back to the extractive synthesis: {reason}"),
        );
        self.notes.push(format!(
            "fell back to the extractive synthesis: {reason}; the model's answer was not kept"
        ));
        self.partial = true;
        let fallback = Synthesis::extractive(query, candidates, reason, Vec::new(), true);
        let claims = fallback.extractive_claims.unwrap_or_default();
        self.model = self.model.take().map(|m| format!("{m} (not kept)"));
        self.validated = synthesis::number_extractive(&fallback.text, claims);
        self.kind = "extractive";
    }
}

/// A sentence of the targeted pass with its markers before its final punctuation. A lead-in
/// ("If an index does not provide `upload-time` metadata, you can disable the cutoff for that
/// index entirely:") keeps its colon when the code it leads in to follows it (`leads_to_code`:
/// the validation kept the block, [`synthesis::code_led_to`]), and ends with a full stop when
/// it does not.
fn cite_line(text: &str, sources: &[u32], attributed: bool, leads_to_code: bool) -> String {
    let body = text.trim_end_matches(['.', '!', '?', ':']).trim_end();
    let end = text[body.len()..].trim();
    let end = match end.contains(':') {
        true if leads_to_code => ":",
        true => ".",
        false => end,
    };
    let markers: String = sources.iter().map(|n| format!("[{n}]")).collect();
    let label = if attributed { " (attributed)" } else { "" };
    format!(
        "{body} {markers}{label}{}",
        if end.is_empty() { "." } else { end }
    )
}

/// The first words of a part, to name it: at most eight, then "…".
fn opening_words(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() <= 8 {
        words.join(" ")
    } else {
        format!("{} …", words[..8].join(" "))
    }
}

/// `line` (a quoted sentence ending in ` [n]`, maybe followed by its code example) with its
/// number renumbered; the code is left alone.
fn renumber_line(line: &str, renumber: &mut impl FnMut(u32) -> u32) -> String {
    let (first, rest) = line
        .split_once('\n')
        .map_or((line, None), |(a, b)| (a, Some(b)));
    let first = match first.rsplit_once(" [") {
        Some((body, tail)) => match tail.strip_suffix(']').and_then(|n| n.parse::<u32>().ok()) {
            Some(n) => format!("{body} [{}]", renumber(n)),
            None => first.to_owned(),
        },
        None => first.to_owned(),
    };
    match rest {
        Some(rest) => format!("{first}\n{rest}"),
        None => first,
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

/// When the judge's call must end. The check has time of its own: a synthesis that used the
/// whole budget on a slow local model still gets its citations judged, for at most half the
/// budget more, so a run with the check ends within 1.5× its time budget. Without that, the
/// synthesis a 1.5B model takes ~60 s over on 2 cores would leave the judge nothing on a busy
/// machine and every report would fall back to the overlap measure.
fn judge_deadline(deadline: Instant, budget: Duration, now: Instant) -> Instant {
    deadline.max(now + budget / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_judge_gets_half_the_budget_when_the_synthesis_used_it_all() {
        let start = Instant::now();
        let budget = Duration::from_secs(300);
        let deadline = start + budget;
        // Synthesis ended at 290 s: the check may run until 440 s, not only 10 s.
        let late = start + Duration::from_secs(290);
        assert_eq!(judge_deadline(deadline, budget, late), late + budget / 2);
        // Synthesis ended at 20 s: the run's own deadline is later and stands.
        let early = start + Duration::from_secs(20);
        assert_eq!(judge_deadline(deadline, budget, early), deadline);
        // The budget already spent: the judge still gets its half.
        let after = start + Duration::from_secs(400);
        assert_eq!(judge_deadline(deadline, budget, after), after + budget / 2);
    }

    #[test]
    fn a_targeted_lead_in_keeps_its_colon_only_before_its_code() {
        // Recorded over uv's docs (2026-12-01): the lead-in's code is not among the claims.
        assert_eq!(
            cite_line(
                "If an index does not provide `upload-time` metadata, you can disable the cutoff for that index entirely:",
                &[3],
                true,
                false
            ),
            "If an index does not provide `upload-time` metadata, you can disable the cutoff for that index entirely [3] (attributed)."
        );
        assert_eq!(
            cite_line("You would run:", &[3], false, true),
            "You would run [3]:"
        );
        assert_eq!(
            cite_line(
                "The `--locked` flag fails when the lockfile is out of date.",
                &[1, 2],
                false,
                false
            ),
            "The `--locked` flag fails when the lockfile is out of date [1][2]."
        );
        assert_eq!(
            cite_line("Is it cached?", &[1], false, false),
            "Is it cached [1]?"
        );
    }
}
