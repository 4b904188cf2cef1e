//! The independent support check: every citation the overlap check kept gets an entailment
//! verdict from the model — supports / partly / contradicts / unrelated — in ONE batched call
//! per report (all sentence–passage pairs in one prompt, numbered; the answer is one line per
//! pair). A local model reads a prompt at tens of tokens a second, so each pair shows the
//! passage's sentences nearest the statement (at most [`EXCERPT_CHARS`]), not the whole passage.
//!
//! The answer of a small model is parsed leniently and distrustfully: a pair it skips keeps no
//! verdict (the overlap verdict stands and the report says so), a number it invents is ignored
//! and counted, a pair it answers twice keeps the first verdict. Pure functions: no I/O.

use std::sync::OnceLock;

use regex::Regex;

use crate::research::passages::content_stems;
use crate::research::synthesis::{Validated, validate_judged};
use crate::research::{citations, plural, support};
use crate::store::{SentenceCounts, SourceRecord};

/// Characters of a passage shown per pair.
pub const EXCERPT_CHARS: usize = 500;

/// A verdict of the judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CitationVerdict {
    Supports,
    Partly,
    Contradicts,
    Unrelated,
}

impl CitationVerdict {
    /// The word stored as the model's verdict.
    pub fn as_str(self) -> &'static str {
        match self {
            CitationVerdict::Supports => "supports",
            CitationVerdict::Partly => "partly",
            CitationVerdict::Contradicts => "contradicts",
            CitationVerdict::Unrelated => "unrelated",
        }
    }

    /// Whether the citation stays: the passage says all or part of the sentence.
    pub fn keeps(self) -> bool {
        matches!(self, CitationVerdict::Supports | CitationVerdict::Partly)
    }

    fn parse(word: &str) -> Option<CitationVerdict> {
        let w = word.to_lowercase();
        if w.starts_with("support") || w == "yes" || w == "entails" {
            Some(CitationVerdict::Supports)
        } else if w.starts_with("part") {
            Some(CitationVerdict::Partly)
        } else if w.starts_with("contradict") {
            Some(CitationVerdict::Contradicts)
        } else if w.starts_with("unrelated")
            || w.starts_with("irrelevant")
            || w == "no"
            || w == "none"
        {
            Some(CitationVerdict::Unrelated)
        } else {
            None
        }
    }
}

/// One sentence–passage pair to judge.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub statement: String,
    /// The passage's text (its title and body); the prompt shows an excerpt.
    pub passage: String,
}

pub const SYSTEM: &str = "You check a report against its sources. Each numbered item gives a \
QUOTE from a source and a STATEMENT from the report. For each item, write one line: the item's \
number, a colon and one word:\n\
SUPPORTS if the quote says what the statement says;\n\
PARTLY if the quote says only some of it;\n\
CONTRADICTS if the quote says something else;\n\
UNRELATED if the quote is about something else.\n\n\
Example answer for three items:\n1: SUPPORTS\n2: UNRELATED\n3: PARTLY";

/// The sentences (and code lines) of `passage` nearest `statement`: the best one and its
/// neighbours, in their order, at most [`EXCERPT_CHARS`].
pub fn excerpt(statement: &str, passage: &str) -> String {
    let pieces = support::passage_pieces(passage);
    if pieces.is_empty() {
        return String::new();
    }
    let wanted = content_stems(statement);
    let score = |p: &str| {
        let have = content_stems(p);
        wanted.iter().filter(|w| have.contains(w)).count()
    };
    let best = (0..pieces.len())
        .max_by_key(|i| (score(&pieces[*i]), std::cmp::Reverse(*i)))
        .unwrap_or(0);
    let cut = |p: &str| -> String {
        if p.len() <= EXCERPT_CHARS {
            return p.to_owned();
        }
        let mut end = EXCERPT_CHARS;
        while !p.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &p[..end])
    };
    let (mut lo, mut hi) = (best, best);
    let mut len = pieces[best].len();
    loop {
        let next = [(hi + 1 < pieces.len()).then(|| hi + 1), lo.checked_sub(1)]
            .into_iter()
            .flatten()
            .max_by_key(|i| score(&pieces[*i]));
        match next {
            Some(i) if len + pieces[i].len() < EXCERPT_CHARS => {
                len += pieces[i].len() + 1;
                if i > hi {
                    hi = i;
                } else {
                    lo = i;
                }
            }
            _ => break,
        }
    }
    cut(&pieces[lo..=hi].join(" "))
}

/// The user message: the numbered pairs and what to answer.
pub fn prompt(pairs: &[Pair]) -> (String, String) {
    let mut user = String::new();
    for (i, pair) in pairs.iter().enumerate() {
        user.push_str(&format!(
            "{}.\nQUOTE: {}\nSTATEMENT: {}\n\n",
            i + 1,
            excerpt(&pair.statement, &pair.passage),
            pair.statement.trim()
        ));
    }
    user.push_str(&format!(
        "Answer with one line for each item, 1 to {}, like \"1: SUPPORTS\".",
        pairs.len()
    ));
    (SYSTEM.to_owned(), user)
}

/// The judge's answer, parsed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Judged {
    /// One per pair: `None` where the answer gave no (readable) verdict.
    pub verdicts: Vec<Option<CitationVerdict>>,
    /// Item numbers the answer gave a verdict for that were not asked.
    pub invented: Vec<u32>,
}

impl Judged {
    pub fn skipped(&self) -> usize {
        self.verdicts.iter().filter(|v| v.is_none()).count()
    }
}

fn line_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // `1: SUPPORTS`, `2. partly`, `**3** - Unrelated`, `Item 4: CONTRADICTS`, `[5] supports`.
    citations::regex(
        &RE,
        r"(?im)^[\s>*\-#]*(?:item|pair|statement)?\s*\[?\*{0,2}(\d{1,3})\*{0,2}\]?\s*[:.)\-–=]*\s*\**\s*([a-z]+)",
    )
}

/// Parses the judge's answer for `n` pairs.
pub fn parse(answer: &str, n: usize) -> Judged {
    let mut judged = Judged {
        verdicts: vec![None; n],
        invented: Vec::new(),
    };
    let mut lines = 0;
    for caps in line_regex().captures_iter(answer) {
        let Ok(k) = caps[1].parse::<u32>() else {
            continue;
        };
        let Some(verdict) = CitationVerdict::parse(&caps[2]) else {
            continue;
        };
        lines += 1;
        match judged.verdicts.get_mut((k as usize).wrapping_sub(1)) {
            Some(slot) if slot.is_none() => *slot = Some(verdict),
            Some(_) => {}
            None => {
                if !judged.invented.contains(&k) {
                    judged.invented.push(k);
                }
            }
        }
    }
    // A single pair answered with a bare word ("SUPPORTS").
    if lines == 0 && n == 1 {
        judged.verdicts[0] = answer
            .split(|c: char| !c.is_alphanumeric())
            .find_map(CitationVerdict::parse);
    }
    judged
}

/// A pair to ask about: a claim's text and a passage's number in the synthesis prompt, and
/// whether it is an alternate (the best other passage that supports the sentence by overlap)
/// rather than a citation the overlap check kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub statement: String,
    pub passage: u32,
    pub alternate: bool,
}

/// The pairs to judge for a validated answer: every citation of its claims, and for each claim
/// the best other shown passage that supports it by overlap, so that a rejected citation can
/// be replaced by a judged one.
pub fn pairs_for(first: &Validated, shown: &[SourceRecord]) -> Vec<Asked> {
    let stems: Vec<_> = shown
        .iter()
        .map(|s| support::passage_stems(&s.title, &s.snippet))
        .collect();
    let mut asked = Vec::new();
    for claim in &first.claims {
        let cited: Vec<u32> = claim
            .sources
            .iter()
            .filter_map(|n| first.order.get((*n as usize).wrapping_sub(1)).copied())
            .collect();
        for old in &cited {
            asked.push(Asked {
                statement: claim.text.clone(),
                passage: *old,
                alternate: false,
            });
        }
        let words = support::claim_stems(&claim.text);
        let alternate = (1..=shown.len() as u32)
            .filter(|n| {
                !cited.contains(n) && support::supports(&claim.text, &stems[*n as usize - 1])
            })
            .max_by(|a, b| {
                let share = |n: u32| support::overlap(&words, &stems[n as usize - 1]).0;
                share(*a).total_cmp(&share(*b)).then(b.cmp(a))
            });
        if let Some(n) = alternate {
            asked.push(Asked {
                statement: claim.text.clone(),
                passage: n,
                alternate: true,
            });
        }
    }
    asked
}

/// The prompt's pairs for `asked`.
pub fn pairs_of(asked: &[Asked], shown: &[SourceRecord]) -> Vec<Pair> {
    asked
        .iter()
        .map(|a| {
            let s = &shown[a.passage as usize - 1];
            Pair {
                statement: a.statement.clone(),
                passage: format!("{}\n{}", s.title, s.snippet),
            }
        })
        .collect()
}

/// Applies the judge's verdicts to `first` (the validation of `answer` against `shown`):
/// validates the answer again without the pairs it rejected, so a sentence keeps its other
/// citations, is re-cited or attributed to a passage not rejected, or is dropped; then gives
/// each claim's citations their verdicts. Counts what it changed in `counts` and returns the
/// answer and the notes a reader should see.
pub fn apply(
    answer: &str,
    shown: &[SourceRecord],
    first: Validated,
    asked: &[Asked],
    judged: &Judged,
    counts: &mut SentenceCounts,
) -> (Validated, Vec<String>) {
    let mut notes = Vec::new();
    let skipped = judged.skipped();
    if skipped > 0 {
        notes.push(format!(
            "the model's check gave no verdict for {skipped} of {} citation{}; the overlap measure stands for those",
            asked.len(),
            plural(asked.len())
        ));
    }
    if !judged.invented.is_empty() {
        notes.push(format!(
            "the model's check answered for {} item{} it was not asked about (ignored)",
            judged.invented.len(),
            plural(judged.invented.len())
        ));
    }
    let rejected: Vec<(String, u32)> = asked
        .iter()
        .zip(&judged.verdicts)
        .filter(|(_, v)| v.is_some_and(|v| !v.keeps()))
        .map(|(a, _)| (a.statement.clone(), a.passage))
        .collect();
    let kept_before = first.cited + first.attributed;
    let mut v = if rejected.is_empty() {
        first
    } else {
        validate_judged(answer, shown, &rejected)
    };
    let removed = asked
        .iter()
        .zip(&judged.verdicts)
        .filter(|(a, v)| !a.alternate && v.is_some_and(|v| !v.keeps()))
        .count();
    counts.judge_removed = removed as u32;
    counts.dropped_by_judge = kept_before.saturating_sub(v.cited + v.attributed) as u32;
    if removed > 0 {
        notes.push(format!(
            "the model's check found {removed} citation{} unrelated to or contradicting {} sentence{}: removed, the sentence kept with another citation, re-cited to a passage the check accepts, or dropped ({} dropped)",
            plural(removed),
            if removed == 1 { "its" } else { "their" },
            if removed == 1 { "" } else { "s" },
            counts.dropped_by_judge
        ));
    }
    let order = v.order.clone();
    for claim in &mut v.claims {
        claim.verdicts = claim
            .sources
            .iter()
            .map(|n| {
                let old = order.get((*n as usize).wrapping_sub(1)).copied()?;
                let at = asked
                    .iter()
                    .position(|a| a.statement == claim.text && a.passage == old)?;
                judged.verdicts[at].map(CitationVerdict::as_str)
            })
            .collect();
    }
    (v, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_per_line_in_the_forms_a_small_model_writes() {
        let answer = "1: SUPPORTS\n2. partly\n**3** - Unrelated\nItem 4: CONTRADICTS\n[5] supports the statement";
        let judged = parse(answer, 5);
        assert_eq!(
            judged.verdicts,
            vec![
                Some(CitationVerdict::Supports),
                Some(CitationVerdict::Partly),
                Some(CitationVerdict::Unrelated),
                Some(CitationVerdict::Contradicts),
                Some(CitationVerdict::Supports),
            ]
        );
        assert!(judged.invented.is_empty());
    }

    #[test]
    fn a_skipped_pair_has_no_verdict_and_an_invented_one_is_counted() {
        // Three pairs asked; the answer skips 2, answers 1 twice and invents 4 and 7.
        let judged = parse(
            "1: SUPPORTS\n3: UNRELATED\n4: SUPPORTS\n1: CONTRADICTS\n7: PARTLY\nAll done.",
            3,
        );
        assert_eq!(
            judged.verdicts,
            vec![
                Some(CitationVerdict::Supports),
                None,
                Some(CitationVerdict::Unrelated)
            ]
        );
        assert_eq!(judged.invented, vec![4, 7]);
        assert_eq!(judged.skipped(), 1);
        // An unreadable word is no verdict.
        assert_eq!(parse("1: MAYBE", 1).verdicts, vec![None]);
        // One pair, one bare word.
        assert_eq!(
            parse("Supports.", 1).verdicts,
            vec![Some(CitationVerdict::Supports)]
        );
    }

    #[test]
    fn the_prompt_numbers_the_pairs_and_quotes_the_nearest_sentences() {
        let passage = "# Timeouts\n\nHTTPX is careful to enforce timeouts everywhere by default. The default behavior is to raise a `TimeoutException` after 5 seconds of network inactivity.\n\n## Setting and disabling timeouts\n\nYou can set timeouts for an individual request:\n\n```python\nhttpx.get('http://example.com/api/v1/example', timeout=10.0)\n```";
        let pairs = vec![
            Pair {
                statement: "HTTPX raises a TimeoutException after 5 seconds of network inactivity."
                    .into(),
                passage: passage.into(),
            },
            Pair {
                statement: "A timeout can be set for one request.".into(),
                passage: passage.into(),
            },
        ];
        let (system, user) = prompt(&pairs);
        assert!(system.contains("1: SUPPORTS"));
        assert!(user.starts_with("1.\nQUOTE: HTTPX is careful"), "{user}");
        assert!(user.contains("STATEMENT: A timeout can be set for one request."));
        assert!(user.ends_with("1 to 2, like \"1: SUPPORTS\"."));
        let long = "Unrelated words about nothing at all here. ".repeat(40)
            + "The pool keeps ten connections alive.";
        let e = excerpt("How many connections does the pool keep alive?", &long);
        assert!(e.ends_with("The pool keeps ten connections alive."), "{e}");
        assert!(e.len() <= EXCERPT_CHARS + 3);
    }
}
