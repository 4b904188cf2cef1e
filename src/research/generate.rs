//! The model side of a run: choosing the model, fitting as many passages as its context allows
//! into the prompt (the same [`Budget`] edit prompts are fitted to: the window less the output
//! reserve and a margin for token-count estimates), streaming the answer with a heartbeat
//! within the run's time budget, and — with `--verify` — a second pass asking the model whether
//! each cited passage supports its sentence.
//!
//! Whatever goes wrong here, the run still answers: no model, a failed or empty answer, or a
//! budget that runs out gives the extractive synthesis, with the reason.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::model::budget::{Budget, count_request};
use crate::model::{ChatModel, ChatOptions, ChatRequest, Message, StreamEvent, Usage, complete};
use crate::research::meaning::Meaning;
use crate::research::{
    ModelChoice, Phase, ProgressFn, Research, extractive, judge, parts, synthesis,
};
use crate::store::SourceRecord;
use crate::tokens::{Encoding, count_tokens};

/// The share of a model's window its synthesis prompt's passages may take, at most: a sixth,
/// and up to a quarter for a question of three parts or more ([`PART_PASSAGE_TOKENS`]).
const PROMPT_SHARE: usize = 6;
const PROMPT_SHARE_MOST: usize = 4;

/// Tokens of passages each part of a question may bring, within the share's bounds: about its
/// best three passages.
const PART_PASSAGE_TOKENS: usize = 620;

/// The most tokens of passages a synthesis prompt may carry for a question of `parts` parts,
/// in a window of `window` tokens: [`PART_PASSAGE_TOKENS`] a part, at least a sixth of the window and
/// at most a quarter.
fn passage_share(window: usize, parts: usize) -> usize {
    (PART_PASSAGE_TOKENS * parts.max(1)).clamp(window / PROMPT_SHARE, window / PROMPT_SHARE_MOST)
}

/// The answer of the targeted pass, at most: one to three sentences.
const PART_ANSWER_TOKENS: u32 = 160;
/// The tokens of a reply naming sentences by number ("(4) (7) (12)"), at most.
const PICK_TOKENS: u32 = 48;

/// What the synthesis step produced.
pub(crate) struct Synthesis {
    pub text: String,
    /// How many sources (from the top of the candidates) the text may cite; for an extractive
    /// synthesis that stands in for a model answer, how many the model was shown.
    pub shown: usize,
    pub model: Option<String>,
    /// The model that wrote it, for the verifying pass; beside an extractive synthesis that
    /// stands in for a model answer with nothing to keep, the model to ask each part again.
    pub writer: Option<Arc<dyn ChatModel>>,
    pub usage: Usage,
    pub notes: Vec<String>,
    /// For an extractive synthesis: its claims, numbered like the candidates.
    pub extractive_claims: Option<Vec<(String, Vec<u32>)>>,
    /// The synthesis is less than was asked for: a budget cut it, or the chosen model failed or
    /// said nothing (the record's status is then `partial`).
    pub budget_cut: bool,
    /// No answer to the whole question was asked for: the model answers each part on its own
    /// (`[research] per_part`, `run.rs`).
    pub per_part: bool,
}

impl Synthesis {
    /// The extractive synthesis over `candidates`, labelled with `reason`.
    pub fn extractive(
        query: &str,
        candidates: &[SourceRecord],
        reason: &str,
        notes: Vec<String>,
        budget_cut: bool,
    ) -> Synthesis {
        let (text, claims) = extractive::extractive(query, candidates, reason);
        Synthesis {
            text,
            shown: candidates.len(),
            model: None,
            writer: None,
            usage: Usage::default(),
            notes,
            extractive_claims: Some(claims),
            budget_cut,
            per_part: false,
        }
    }
}

/// Where and why to stop reading an answer, given the text so far and whether it is complete
/// ([`synthesis::stop_reading`]).
type StopReading<'a> = dyn Fn(&str, bool) -> Option<(usize, synthesis::Stop)> + Send + Sync + 'a;

/// An answer streamed from a model.
struct Streamed {
    text: String,
    usage: Usage,
    /// Why it stopped early, if it did.
    failure: Option<String>,
    /// The model hit its output limit.
    cut: bool,
    /// Why the writer stopped reading before the answer's end (the model began copying its
    /// passages, or went round in a loop); the text ends there ([`synthesis::stop_reading`]).
    stopped: Option<synthesis::Stop>,
}

impl Research {
    /// The model answer over `candidates` (or the extractive synthesis, with the reason).
    pub(crate) async fn synthesize(
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
            Synthesis::extractive(query, candidates, &reason, notes, budget_cut)
        };
        if candidates.is_empty() {
            let mut s = extractive("no source returned anything".to_owned(), Vec::new(), false);
            s.text = "No source returned anything for this question, so there is nothing to synthesise. Check the providers below, or widen the question.".to_owned();
            return s;
        }
        let model = match self.choose_model(deadline, cancel).await {
            Ok(model) => model,
            Err((reason, noted, cut)) => {
                let notes = if noted {
                    vec![reason.clone()]
                } else {
                    Vec::new()
                };
                return extractive(reason, notes, cut);
            }
        };
        let name = model.name().to_owned();
        if self.settings.per_part && parts::parts_for(query, candidates).len() > 1 {
            return Synthesis {
                text: String::new(),
                shown: 0,
                model: Some(name),
                writer: Some(model),
                usage: Usage::default(),
                notes: Vec::new(),
                extractive_claims: None,
                budget_cut: false,
                per_part: true,
            };
        }
        let encoding = Encoding::for_model(&name);
        let fit = self.passage_budget(model.as_ref(), query, token_budget, encoding);
        let (system, user, shown) = synthesis::prompt(query, candidates, fit, encoding);
        let mut notes = Vec::new();
        if shown < candidates.len() {
            notes.push(format!(
                "the model's context ({fit} tokens for passages) fitted {shown} of {} sources into the prompt",
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
        progress(
            Phase::Synthesis,
            56,
            &format!("writing the synthesis with {name} from {shown} passages"),
        );
        let heartbeat = |t: f64, chars: usize| {
            let pct = 56.0 + 33.0 * (1.0 - (-t / 40.0).exp());
            progress(
                Phase::Synthesis,
                pct as u8,
                &format!("writing the synthesis with {name}: {t:.0} s, {chars} characters so far"),
            );
        };
        let shown_sources = &candidates[..shown];
        let stop = |text: &str, done: bool| synthesis::stop_reading(text, shown_sources, done);
        let mut answer = self
            .stream(model.as_ref(), request, deadline, &heartbeat, &stop, cancel)
            .await;
        if let Some(stop) = answer.stopped {
            notes.push(stop.note().to_owned());
        } else if answer.cut {
            let finished = synthesis::finished_part(&answer.text).len();
            notes.push(if finished < answer.text.trim_end().len() {
                "the model hit its output-token limit; its unfinished last sentence was left out"
                    .to_owned()
            } else {
                "the model hit its output-token limit; the synthesis may be cut short".to_owned()
            });
            answer.text.truncate(finished);
        }
        if answer.usage.input_tokens == 0 {
            answer.usage.input_tokens =
                (count_tokens(&system, encoding) + count_tokens(&user, encoding)) as u64;
        }
        if answer.usage.output_tokens == 0 {
            answer.usage.output_tokens = count_tokens(&answer.text, encoding) as u64;
        }
        let usage = answer.usage;
        let kept = |notes: Vec<String>, budget_cut: bool, text: String| Synthesis {
            text,
            shown,
            model: Some(name.clone()),
            writer: Some(model.clone()),
            usage,
            notes,
            extractive_claims: None,
            budget_cut,
            per_part: false,
        };
        match answer.failure {
            Some(reason) if answer.text.trim().is_empty() || reason == "cancelled" => {
                notes.push(reason.clone());
                let mut s = extractive(reason, notes, true);
                s.usage = usage;
                s
            }
            Some(reason) => {
                notes.push(format!("{reason}; the partial answer is kept"));
                kept(notes, true, answer.text)
            }
            // The model answered, but with nothing to keep: the extractive synthesis stands in,
            // and the writer stays for a question in parts to ask each part again (`run.rs`).
            None if answer.text.trim().is_empty() => {
                let reason = format!("{name} answered with no text");
                notes.push(reason.clone());
                let mut s = extractive(reason, notes, true);
                s.usage = usage;
                s.writer = Some(model.clone());
                s.shown = shown;
                s
            }
            None if synthesis::repeats_example(&answer.text) => {
                let reason = format!(
                    "{name} repeated the prompt's example instead of answering the question"
                );
                notes.push(reason.clone());
                let mut s = extractive(reason, notes, false);
                s.usage = usage;
                s.writer = Some(model.clone());
                s.shown = shown;
                s
            }
            None => kept(notes, false, answer.text),
        }
    }

    /// The configured model, or why there is none: (reason, whether to note it, whether a
    /// budget ran out).
    async fn choose_model(
        &self,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Arc<dyn ChatModel>, (String, bool, bool)> {
        match &self.model {
            ModelChoice::Off => Err((
                "no model is configured for research".to_owned(),
                false,
                false,
            )),
            ModelChoice::Fixed(m) => Ok(m.clone()),
            ModelChoice::Router(router) => {
                let left = deadline.saturating_duration_since(Instant::now());
                let chosen = tokio::select! {
                    _ = cancel.cancelled() => return Err(("cancelled".to_owned(), false, false)),
                    r = tokio::time::timeout(left, router.model(self.settings.model, cancel.child_token())) => r,
                };
                match chosen {
                    Ok(Ok(m)) => Ok(m),
                    Ok(Err(err)) => Err((format!("no model was reachable ({err})"), true, false)),
                    Err(_) => Err((
                        "the time budget ran out before a model was found".to_owned(),
                        true,
                        true,
                    )),
                }
            }
        }
    }

    /// Tokens of passages the prompt may carry: the model's window less the output reserve,
    /// the margin for estimated counts and the rest of the prompt, at most `token_budget` and
    /// at most [`passage_share`] of the window. A model with a small window is a small model,
    /// most often on a CPU that reads a prompt at tens of tokens a second: filling its 8k window
    /// with passages spent the whole time budget before the first word, and a third of it
    /// (2,730 tokens) took 140 s to read on 2 shared cores (Qwen2.5-Coder-1.5B,
    /// docs/research.md, "Each part searched on its own"); the parts share the budget, so a
    /// sixth gives each part of a two-part question its best three or four passages, and a
    /// question of more parts gets more, up to a quarter.
    fn passage_budget(
        &self,
        model: &dyn ChatModel,
        query: &str,
        token_budget: usize,
        encoding: Encoding,
    ) -> usize {
        let budget = Budget::for_window(model.name(), model.context_window());
        let (system, user, _) = synthesis::prompt(query, &[], usize::MAX, encoding);
        let skeleton = ChatRequest {
            messages: vec![Message::system(system), Message::user(user)],
            tools: Vec::new(),
            options: ChatOptions {
                max_tokens: Some(self.settings.max_output_tokens),
                ..ChatOptions::default()
            },
        };
        let fixed = count_request(&skeleton, encoding);
        budget
            .available(&skeleton)
            .saturating_sub(fixed)
            .min(token_budget)
            .min(passage_share(
                model.context_window(),
                crate::research::parts::parts_of(query).len(),
            ))
            .max(200)
    }

    /// Streams one answer until it is done, fails, is cancelled, the deadline passes or `stop`
    /// (the text so far, whether it is complete) says where the model stopped answering,
    /// calling `heartbeat` (seconds, characters so far) at the configured interval. Unlike
    /// [`complete`], an answer cut short keeps the text it had.
    async fn stream(
        &self,
        model: &dyn ChatModel,
        request: ChatRequest,
        deadline: Instant,
        heartbeat: &(dyn Fn(f64, usize) + Send + Sync),
        stop: &StopReading<'_>,
        cancel: &CancellationToken,
    ) -> Streamed {
        let call_cancel = cancel.child_token();
        let mut stream = model.chat(request, call_cancel.clone());
        let started = Instant::now();
        let mut beat = tokio::time::interval(self.settings.heartbeat);
        beat.tick().await;
        let mut out = Streamed {
            text: String::new(),
            usage: Usage::default(),
            failure: None,
            cut: false,
            stopped: None,
        };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            tokio::select! {
                _ = cancel.cancelled() => {
                    call_cancel.cancel();
                    out.failure = Some("cancelled".to_owned());
                    break;
                }
                _ = tokio::time::sleep(left) => {
                    call_cancel.cancel();
                    out.failure = Some(format!("the time budget ({:.0} s) ran out while the model was writing", self.settings.time_budget.as_secs_f64()));
                    break;
                }
                _ = beat.tick() => heartbeat(started.elapsed().as_secs_f64(), out.text.chars().count()),
                event = stream.next() => match event {
                    Some(Ok(StreamEvent::TextDelta { text: delta })) => {
                        out.text.push_str(&delta);
                        if delta.contains('\n')
                            && let Some((at, why)) = stop(&out.text, false)
                        {
                            // What follows is the prompt's passages or the same block again,
                            // not an answer: stop paying for it.
                            call_cancel.cancel();
                            out.text.truncate(at);
                            out.stopped = Some(why);
                            break;
                        }
                    }
                    Some(Ok(StreamEvent::TextToolCalls { prose })) => out.text = prose,
                    Some(Ok(StreamEvent::Done { usage, finish })) => {
                        out.usage = usage;
                        out.cut = finish == crate::model::FinishReason::Length;
                        if let Some((at, why)) = stop(&out.text, true) {
                            out.text.truncate(at);
                            out.stopped = Some(why);
                        }
                        break;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(err)) => {
                        out.failure = Some(format!("the model failed ({err})"));
                        break;
                    }
                    None => {
                        out.failure = Some("the model's answer ended early".to_owned());
                        break;
                    }
                },
            }
        }
        out
    }

    /// The targeted pass for one part of the question ([`synthesis::part_prompt`]): one short
    /// call over the part's own passages. Returns the answer and the number of passages shown,
    /// or why there is none. With `meaning`, the sentences the model picked are taken nearest
    /// the part first ([`extractive::chosen_named`]); an embedding that fails leaves the
    /// model's order.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn ask_part(
        &self,
        model: &dyn ChatModel,
        part: &str,
        by: &parts::QuestionPart,
        passages: &[SourceRecord],
        meaning: Option<&Meaning<'_>>,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> (Result<(String, usize), String>, Usage) {
        let encoding = Encoding::for_model(model.name());
        let quotes = self.settings.quote_parts;
        let order = match meaning.filter(|_| quotes) {
            Some(meaning) => listing_order(meaning, part, by, passages, deadline).await,
            None => None,
        };
        let (system, user, shown, numbers) =
            synthesis::part_prompt(part, by, passages, encoding, quotes, order.as_deref());
        let request = ChatRequest {
            messages: vec![Message::system(system), Message::user(user)],
            tools: Vec::new(),
            options: ChatOptions {
                // A pick has one right answer, and is a few numbers long (a reply that copies
                // sentences instead is read as copies, the first of them whole).
                temperature: Some(if quotes { 0.0 } else { 0.2 }),
                max_tokens: Some(if quotes {
                    PICK_TOKENS
                } else {
                    PART_ANSWER_TOKENS
                }),
                ..ChatOptions::default()
            },
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (Err("the time budget ran out".to_owned()), Usage::default());
        }
        match tokio::time::timeout(left, complete(model, request, cancel.child_token())).await {
            // The sentences it copied, as the passages write them; a copy cut short by the
            // token limit still names its sentence.
            Ok(Ok(answer)) if quotes => {
                let shown_passages = &passages[..shown];
                let text = match extractive::named(&answer.text, shown_passages, &numbers) {
                    Some(named) => extractive::chosen_named(
                        &nearest_first(meaning, part, named, numbers.len(), deadline).await,
                        shown_passages,
                    ),
                    None => extractive::copied(&answer.text, shown_passages),
                };
                (Ok((text, shown)), answer.usage)
            }
            // Cut short by the token limit: its unfinished sentence is no answer.
            Ok(Ok(answer)) if answer.finish == Some(crate::model::FinishReason::Length) => (
                Ok((synthesis::finished_part(&answer.text).to_owned(), shown)),
                answer.usage,
            ),
            Ok(Ok(answer)) => (Ok((answer.text, shown)), answer.usage),
            Ok(Err(err)) => (Err(format!("the model failed ({err})")), Usage::default()),
            Err(_) => (Err("the time budget ran out".to_owned()), Usage::default()),
        }
    }

    /// The independent check: one short call to `model` per (sentence, passage) pair not
    /// held word for word (`judge.rs`), in order. Returns the verdicts (an error, with why,
    /// when not one pair got an answer) and the tokens used. A call that fails or the time
    /// running out ends the check; the pairs not asked keep no verdict.
    pub(crate) async fn judge(
        &self,
        model: &dyn ChatModel,
        pairs: &[judge::Pair],
        deadline: Instant,
        progress: ProgressFn<'_>,
        cancel: &CancellationToken,
    ) -> (Result<judge::Judged, String>, Usage) {
        // Pairs whose passage holds the statement word for word are not asked about.
        let asked = judge::to_ask(pairs);
        let mut answers: Vec<String> = Vec::new();
        let mut usage = Usage::default();
        let mut stopped = None;
        for (k, i) in asked.iter().enumerate() {
            progress(
                Phase::Corroboration,
                90,
                &format!(
                    "checking citation {} of {} with {}",
                    k + 1,
                    asked.len(),
                    model.name()
                ),
            );
            let request = ChatRequest {
                messages: judge::messages(&pairs[*i]),
                tools: Vec::new(),
                options: ChatOptions {
                    temperature: Some(0.0),
                    // YES or NO, with room for a model that starts with a mark.
                    max_tokens: Some(3),
                    ..ChatOptions::default()
                },
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                stopped = Some("the time budget ran out during the check".to_owned());
                break;
            }
            match tokio::time::timeout(left, complete(model, request, cancel.child_token())).await {
                Ok(Ok(answer)) => {
                    tracing::debug!(answer = %answer.text, pair = k + 1, "judge");
                    usage += answer.usage;
                    answers.push(answer.text);
                }
                Ok(Err(err)) => {
                    stopped = Some(format!("the model failed ({err})"));
                    break;
                }
                Err(_) => {
                    stopped = Some("the time budget ran out during the check".to_owned());
                    break;
                }
            }
        }
        match stopped {
            Some(why) if answers.is_empty() && !asked.is_empty() => (Err(why), usage),
            stopped => (Ok(judge::decide(pairs, &answers, stopped)), usage),
        }
    }
}

/// The order in which the pick lists the sentences of a part's passages (indices among them):
/// the [`extractive::PICK_POOL`] with the largest share of the part's words
/// ([`extractive::choices`]), in that order fused with their nearness to the part
/// ([`Meaning::fused_order`], one short call). `None`, and the words' order, when the
/// embedding fails (the log says why).
async fn listing_order(
    meaning: &Meaning<'_>,
    part: &str,
    by: &parts::QuestionPart,
    passages: &[SourceRecord],
    deadline: Instant,
) -> Option<Vec<usize>> {
    let shown = &passages[..passages.len().min(synthesis::PART_PASSAGES)];
    let pool = extractive::choices(shown, by, extractive::PICK_POOL);
    let texts: Vec<String> = pool.iter().map(|(_, t)| t.clone()).collect();
    match meaning.fused_order(part, &texts, deadline).await {
        Ok(order) => Some(order.into_iter().map(|k| pool[k].0).collect()),
        Err(why) => {
            tracing::warn!(%part, "the sentences listed in the words' order: {why}");
            None
        }
    }
}

/// The sentences a model `named` for `part`, nearest the part first with `meaning` (one short
/// call); as named without it, for fewer than two, when it named most of the `listed` sentences
/// ([`reordered`]), or when the embedding fails (the log says why).
async fn nearest_first(
    meaning: Option<&Meaning<'_>>,
    part: &str,
    named: Vec<extractive::Named>,
    listed: usize,
    deadline: Instant,
) -> Vec<extractive::Named> {
    let Some(meaning) = meaning.filter(|_| reordered(named.len(), listed)) else {
        return named;
    };
    let texts: Vec<String> = named.iter().map(|n| n.text.clone()).collect();
    match meaning.nearest_first(part, &texts, deadline).await {
        Ok(order) => order.into_iter().map(|i| named[i].clone()).collect(),
        Err(why) => {
            tracing::warn!(%part, "the picks in the model's order: {why}");
            named
        }
    }
}

/// Whether `named` sentences of `listed` are taken nearest the part first: two or more, and
/// at most half the list. A model that names most of the list ("(1), (2), … (8)", 22 of 99
/// parts over nine corpora's questions, 2026-12-05) says little about which answers, and the
/// list's own order (words and meaning together) chooses better than the nearest alone: over
/// those 22 parts the nearest first printed a located sentence for 10, the list's order for
/// about 13 (rclone's "can I just set a new password", where the nearest was "make sure the
/// passwords are the same in the new encrypted remote" and the first named "you need to
/// re-encrypt your data with a new password").
fn reordered(named: usize, listed: usize) -> bool {
    named > 1 && named * 2 <= listed
}

#[cfg(test)]
mod tests {
    use super::{passage_share, reordered};

    #[test]
    fn picks_are_taken_nearest_first_unless_the_model_named_most_of_the_list() {
        assert!(reordered(2, 8));
        assert!(reordered(4, 8));
        assert!(!reordered(1, 8));
        assert!(!reordered(5, 8));
        assert!(!reordered(8, 8));
    }

    #[test]
    fn a_question_of_more_parts_may_show_more_passages_up_to_a_quarter() {
        // An 8k window: a sixth for one or two parts, more for three, a quarter at most.
        assert_eq!(passage_share(8192, 0), 1365);
        assert_eq!(passage_share(8192, 1), 1365);
        assert_eq!(passage_share(8192, 2), 1365);
        assert_eq!(passage_share(8192, 3), 1860);
        assert_eq!(passage_share(8192, 6), 2048);
        // A large window: the sixth is already more than the parts ask for.
        assert_eq!(passage_share(128_000, 3), 21_333);
    }
}
