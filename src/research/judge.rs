//! The independent support check: every citation the overlap check kept gets a verdict from
//! the model — does the passage say what the sentence says? — asked **one pair per call**: the
//! same short instructions and two worked examples, then the pair (the passage's sentences
//! nearest the statement, at most [`EXCERPT_CHARS`], and the statement), answered YES or NO.
//! A local model reads a prompt at tens of tokens a second, and a server such as llama.cpp
//! keeps the shared beginning of consecutive prompts, so a call costs the pair's own tokens
//! and one token of answer.
//!
//! Why not one batched call, a verdict word per pair, or copied evidence (what the check asked
//! before): on 70 sentence–passage pairs from recorded runs, read by hand (docs/research.md,
//! "The model's check, measured"), Qwen2.5-Coder-1.5B answered a numbered list of verdicts by
//! position (35 of 70 agreed with the hand labels), and asked to copy the passage's words that
//! say each statement it copied the statement itself, on wrong pairs as on right ones (it caught
//! 1 of the 11 wrong citations). Asked one pair at a time, with an example of a quote that
//! shares a statement's words without saying it, it answered NO to wrong pairs and YES to every
//! right one, in less time per report (34 s against 43 s: the answer is one word per pair).
//!
//! A statement its passage holds word for word ([`verbatim`]) is supported without asking. The
//! answer is read distrustfully: a first word other than YES or NO is no verdict (the overlap
//! verdict stands and the report says so); a call that fails or runs out of time ends the
//! check, and the pairs not asked keep no verdict. Pure functions: no I/O.

use crate::model::Message;
use crate::research::passages::content_stems;
use crate::research::synthesis::{Validated, validate_judged};
use crate::research::{plural, support};
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
}

/// The verdict an answer gives: its first word, YES (supports) or NO (unrelated); anything else
/// is no verdict. `**Yes.**`, `NO, the quote…` and `yes` count; `The quote says…` does not.
pub fn verdict_of(answer: &str) -> Option<CitationVerdict> {
    let word: String = answer
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .chars()
        .take_while(|c| c.is_alphanumeric())
        .collect::<String>()
        .to_lowercase();
    match word.as_str() {
        "yes" => Some(CitationVerdict::Supports),
        "no" => Some(CitationVerdict::Unrelated),
        _ => None,
    }
}

/// One sentence–passage pair to judge.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub statement: String,
    /// The passage's text (its title and body); the prompt shows an excerpt.
    pub passage: String,
}

pub const SYSTEM: &str = "You check a report against its sources. You get a QUOTE from a \
source and a STATEMENT from the report. Answer YES if the QUOTE says what the STATEMENT says, \
NO if it does not. Answer with one word.";

/// What each pair is asked, after its QUOTE and STATEMENT.
pub const QUESTION: &str = "Does the QUOTE say what the STATEMENT says?";

/// The worked examples, as earlier turns of the conversation: first a quote that shares the
/// statement's words (an hour, knead, dough) without saying it — without it the model answered
/// YES to four of the right pairs' wrong twins it now rejects, and NO to four right pairs
/// (`pairyn` beside `pairshot` in the measurement) — then one that says it in other words.
pub const EXAMPLES: [(&str, &str, &str); 2] = [
    (
        "Bread dough rises for an hour in a warm place. Knead it again before baking.",
        "Knead the dough for an hour.",
        "NO",
    ),
    (
        "Bread dough rises for an hour in a warm place. Knead it again before baking.",
        "The dough needs about an hour to rise.",
        "YES",
    ),
];

fn ask(quote: &str, statement: &str) -> String {
    format!("QUOTE: {quote}\nSTATEMENT: {statement}\n{QUESTION}")
}

/// The messages of the call about one pair: the instructions, the examples, the pair.
pub fn messages(pair: &Pair) -> Vec<Message> {
    let mut messages = vec![Message::system(SYSTEM)];
    for (quote, statement, answer) in EXAMPLES {
        messages.push(Message::user(ask(quote, statement)));
        messages.push(Message::assistant(answer));
    }
    messages.push(Message::user(ask(
        &excerpt(&pair.statement, &pair.passage),
        pair.statement.trim(),
    )));
    messages
}

/// Text as compared word for word: lower case, Markdown emphasis and backticks dropped, curly
/// quotes straightened, whitespace collapsed.
fn normalized(text: &str) -> String {
    let plain: String = text
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '`'))
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201c}' | '\u{201d}' => '"',
            c => c,
        })
        .collect::<String>()
        .to_lowercase();
    plain.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `passage` holds `statement` word for word (its end punctuation aside, Markdown
/// emphasis and spacing ignored), at least four words of it: such a pair is supported by
/// construction, and the model is not asked (22 such pairs of the 70 read by hand, all
/// supported).
pub fn verbatim(statement: &str, passage: &str) -> bool {
    let s = normalized(statement);
    let s = s.trim_end_matches(['.', ':', ';', '!', ' ']);
    s.split_whitespace().count() >= 4 && normalized(passage).contains(s)
}

/// The pairs the model is asked about, by index: those not [`verbatim`].
pub fn to_ask(pairs: &[Pair]) -> Vec<usize> {
    (0..pairs.len())
        .filter(|i| !verbatim(&pairs[*i].statement, &pairs[*i].passage))
        .collect()
}

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

/// The judge's answers, read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Judged {
    /// One per pair: `None` where no (readable) verdict came.
    pub verdicts: Vec<Option<CitationVerdict>>,
    /// Pairs supported without asking: the passage holds the statement word for word.
    pub verbatim: usize,
    /// Why the check stopped before asking about every pair (a failed call, the time budget).
    pub stopped: Option<String>,
}

impl Judged {
    pub fn skipped(&self) -> usize {
        self.verdicts.iter().filter(|v| v.is_none()).count()
    }
}

/// The verdicts for `pairs` (all the pairs of the report): the [`verbatim`] ones supported
/// without asking, the others ([`to_ask`], in order) by their answers — `answers[k]` is the
/// answer about the k-th pair asked; a pair past the end of `answers` was not asked (the check
/// stopped, `stopped` says why).
pub fn decide(pairs: &[Pair], answers: &[String], stopped: Option<String>) -> Judged {
    let mut judged = Judged {
        verdicts: vec![Some(CitationVerdict::Supports); pairs.len()],
        verbatim: pairs.len(),
        stopped,
    };
    for (k, i) in to_ask(pairs).into_iter().enumerate() {
        judged.verbatim -= 1;
        judged.verdicts[i] = answers.get(k).and_then(|a| verdict_of(a));
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
    question: &str,
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
            "the model's check gave no verdict for {skipped} of {} citation{}{}; the overlap measure stands for those",
            asked.len(),
            plural(asked.len()),
            judged
                .stopped
                .as_ref()
                .map(|why| format!(" ({why})"))
                .unwrap_or_default()
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
        validate_judged(question, answer, shown, &rejected)
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

    /// The HTTPX quickstart page, section "Redirection and History" (as the passage reaches the judge).
    const REDIRECTS: &str = "docs/quickstart.md:418-449 — QuickStart › Redirection and History\n## Redirection and History\n\nBy default, HTTPX will **not** follow redirects for all HTTP methods, although\nthis can be explicitly enabled.\n\nFor example, GitHub redirects all HTTP requests to HTTPS.\n\n```pycon\n>>> r = httpx.get('http://github.com/')\n>>> r.status_code\n301\n```\n\nYou can modify the default redirection handling with the `follow_redirects` parameter:\n\n```pycon\n>>> r = httpx.get('http://github.com/', follow_redirects=True)\n>>> r.history\n[<Response [301 Moved Permanently]>]\n```\n\nThe `history` property of the response can be used to inspect any followed redirects.\nIt contains a list of any redirect responses that were followed, in the order\nin which they were made.";
    /// The HTTPX transports page, section "Custom transports".
    const TRANSPORTS: &str = "docs/advanced/transports.md:180-217 — Custom transports\n```python\nclass HTTPSRedirect(httpx.BaseTransport):\n    \"\"\"\n    A transport that always redirects to HTTPS.\n    \"\"\"\n    def handle_request(self, request):\n        url = request.url.copy_with(scheme=\"https\")\n        return httpx.Response(303, headers={\"Location\": str(url)})\n\n# A client where any `http` requests are always redirected to `https`\ntransport = httpx.Mounts({\n    'http://': HTTPSRedirect()\n    'https://': httpx.HTTPTransport()\n})\nclient = httpx.Client(transport=transport)\n```";
    /// The HTTPX compatibility guide, section "Redirects".
    const COMPAT: &str = "docs/compatibility.md — Requests Compatibility Guide › Redirects\nUnlike `requests`, HTTPX does **not follow redirects by default**.\n\nYou can still enable behaviour to automatically follow redirects, but you need to\ndo so explicitly...\n\n```python\nresponse = client.get(url, follow_redirects=True)\n```";

    fn pair(statement: &str, passage: &str) -> Pair {
        Pair {
            statement: statement.into(),
            passage: passage.into(),
        }
    }

    #[test]
    fn a_statement_its_passage_holds_word_for_word_is_not_asked_about() {
        // Emphasis, line breaks and the end punctuation aside.
        assert!(verbatim(
            "By default, HTTPX will **not** follow redirects for all HTTP methods, although this can be explicitly enabled.",
            REDIRECTS
        ));
        assert!(verbatim(
            "You can modify the default redirection handling with the `follow_redirects` parameter.",
            REDIRECTS
        ));
        // A word changed, another passage, too short to mean anything.
        assert!(!verbatim(
            "By default, HTTPX will not follow redirects for any HTTP method.",
            REDIRECTS
        ));
        assert!(!verbatim(
            "For example, GitHub redirects all HTTP requests to HTTPS.",
            TRANSPORTS
        ));
        assert!(!verbatim("It redirects.", "It redirects. Always."));
        let pairs = [
            pair(
                "For example, GitHub redirects all HTTP requests to HTTPS.",
                REDIRECTS,
            ),
            pair("By default, HTTPX does not follow redirects.", COMPAT),
        ];
        assert_eq!(to_ask(&pairs), vec![1]);
        // Nothing answered: the verbatim pair is supported, the other has no verdict.
        let judged = decide(&pairs, &[], Some("the model failed".into()));
        assert_eq!(judged.verdicts, vec![Some(CitationVerdict::Supports), None]);
        assert_eq!((judged.verbatim, judged.skipped()), (1, 1));
    }

    /// The first report on HTTPX's redirects (`httpx/q03`): its six pairs, none verbatim, and
    /// Qwen2.5-Coder-1.5B's answers to them, one call each (`scripts/bench/research-judge`,
    /// variant `pairshot`, 2026-11-27). By hand: the transports passage does not say the
    /// statement (pair 2); the rest support it or part of it.
    #[test]
    fn each_pair_gets_the_verdict_of_its_own_answer() {
        let default =
            "The default behavior of HTTPX is to **not** follow redirects for all HTTP methods.";
        let enabled =
            "This can be explicitly enabled by setting the `follow_redirects` parameter to `True`.";
        let pairs = [
            pair(default, REDIRECTS),
            pair(default, TRANSPORTS),
            pair(enabled, REDIRECTS),
            pair(enabled, COMPAT),
        ];
        assert_eq!(to_ask(&pairs), vec![0, 1, 2, 3]);
        let answers = ["YES", "NO", "YES", "YES"].map(String::from);
        let judged = decide(&pairs, &answers, None);
        assert_eq!(
            judged.verdicts,
            vec![
                Some(CitationVerdict::Supports),
                Some(CitationVerdict::Unrelated),
                Some(CitationVerdict::Supports),
                Some(CitationVerdict::Supports),
            ]
        );
        // Read leniently at the start, not beyond the first word.
        for (answer, verdict) in [
            ("YES", Some(CitationVerdict::Supports)),
            ("**Yes.**", Some(CitationVerdict::Supports)),
            (
                "no, the quote is about transports",
                Some(CitationVerdict::Unrelated),
            ),
            ("NO", Some(CitationVerdict::Unrelated)),
            ("The QUOTE says so.", None),
            ("Nope", None),
            ("", None),
        ] {
            assert_eq!(verdict_of(answer), verdict, "{answer:?}");
        }
        // The check stopped after two answers: the pairs not asked keep no verdict.
        let judged = decide(
            &pairs,
            &answers[..2],
            Some("the time budget ran out".into()),
        );
        assert_eq!(judged.verdicts[2..], [None, None]);
        assert_eq!(judged.skipped(), 2);
    }

    #[test]
    fn each_call_has_the_instructions_the_examples_and_the_pair() {
        let passage = "# Timeouts\n\nHTTPX is careful to enforce timeouts everywhere by default. The default behavior is to raise a `TimeoutException` after 5 seconds of network inactivity.\n\n## Setting and disabling timeouts\n\nYou can set timeouts for an individual request:\n\n```python\nhttpx.get('http://example.com/api/v1/example', timeout=10.0)\n```";
        let messages = messages(&pair(
            "  HTTPX raises a TimeoutException after 5 seconds of network inactivity. ",
            passage,
        ));
        let text: Vec<(String, String)> = messages
            .iter()
            .map(|m| match m {
                Message::System { content } => ("system".to_owned(), content.clone()),
                Message::User { content } => ("user".to_owned(), content.clone()),
                Message::Assistant { content, .. } => ("assistant".to_owned(), content.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        let roles: Vec<&str> = text.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "user", "assistant", "user"]
        );
        assert_eq!(text[0].1, SYSTEM);
        assert_eq!(
            text[1].1,
            "QUOTE: Bread dough rises for an hour in a warm place. Knead it again before baking.\nSTATEMENT: Knead the dough for an hour.\nDoes the QUOTE say what the STATEMENT says?"
        );
        assert_eq!((text[2].1.as_str(), text[4].1.as_str()), ("NO", "YES"));
        let last = &text[5].1;
        assert!(last.starts_with("QUOTE: HTTPX is careful"), "{last}");
        assert!(
            last.ends_with("\nSTATEMENT: HTTPX raises a TimeoutException after 5 seconds of network inactivity.\nDoes the QUOTE say what the STATEMENT says?"),
            "{last}"
        );
        let long = "Unrelated words about nothing at all here. ".repeat(40)
            + "The pool keeps ten connections alive.";
        let e = excerpt("How many connections does the pool keep alive?", &long);
        assert!(e.ends_with("The pool keeps ten connections alive."), "{e}");
        assert!(e.len() <= EXCERPT_CHARS + 3);
    }
}
