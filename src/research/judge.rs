//! The independent support check: every citation the overlap check kept gets an entailment
//! verdict — supports / partly / contradicts / unrelated — from ONE batched call per report (all
//! sentence–passage pairs in one prompt, numbered; the answer is one line per pair). A local
//! model reads a prompt at tens of tokens a second, so each pair shows the passage's sentences
//! nearest the statement (at most [`EXCERPT_CHARS`]), not the whole passage.
//!
//! The model is not asked for a verdict word: Qwen2.5-Coder-1.5B answered a list of verdicts by
//! position (in all 48 recorded answers items 1 and 2 were SUPPORTS and PARTLY and item 3 mostly
//! CONTRADICTS, the order the instructions listed them in, whatever the pairs were). It is asked
//! to copy the words of the quote that say the statement, or NONE, and the server decides
//! ([`copied_verdict`]): NONE is unrelated, copied words the passage does not hold are no
//! verdict (the model copies the statement itself when the passage says it in other words as
//! often as when the passage does not say it), copied words it holds give a verdict by the
//! share of the statement's content words they hold. A
//! statement its passage holds word for word ([`verbatim`]) is supported without asking.
//!
//! The answer of a small model is parsed leniently and distrustfully: a pair it skips keeps no
//! verdict (the overlap verdict stands and the report says so), a number it invents is ignored
//! and counted, a pair it answers twice keeps the first answer. Pure functions: no I/O.

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
number, a colon, and the words of the QUOTE that say what the STATEMENT says, copied exactly, \
between double quotes. If the QUOTE does not say it, write NONE after the colon.\n\n\
Example: for the item\n7.\nQUOTE: Bread dough rises for an hour in a warm place. Knead it again \
before baking.\nSTATEMENT: The dough needs about an hour to rise.\nthe line is:\n\
7: \"Bread dough rises for an hour\"";

/// Text as compared for copying: lower case, Markdown emphasis and backticks dropped, curly
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
/// construction, and the model is not asked (Qwen2.5-Coder-1.5B "contradicted" HTTPX's "You
/// can modify the default redirection handling with the `follow_redirects` parameter" beside
/// the passage that says it).
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
        "Answer with one line for each item, 1 to {}: its number, a colon and the copied words in double quotes, or NONE.",
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
    /// Pairs supported without asking: the passage holds the statement word for word.
    pub verbatim: usize,
    /// Pairs whose copied words the passage does not hold (no verdict: the model copied the
    /// statement itself as often as it paraphrased a passage that says it).
    pub not_in_passage: usize,
}

impl Judged {
    pub fn skipped(&self) -> usize {
        self.verdicts.iter().filter(|v| v.is_none()).count()
    }
}

fn line_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // `1: "words"`, `2. NONE`, `**3** - "words"`, `Item 4: "words"`, `[5]: NONE`.
    citations::regex(
        &RE,
        r"(?im)^[\s>*\-#]*(?:item|pair|statement)?\s*\[?\*{0,2}(\d{1,3})\*{0,2}\]?\s*[:.)\-–=]+[ \t]*(.*)$",
    )
}

/// What one answer line says about its pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// The verdict the server gives the copied words.
    Verdict(CitationVerdict),
    /// Copied words the passage (as shown or whole) does not hold: the statement copied, or
    /// the passage paraphrased — nothing the server can stand behind either way.
    NotInPassage,
    /// Nothing the server can check (a bare verdict word, an empty line).
    Unreadable,
}

/// The server's verdict on the words the judge copied for `pair` (`rest`: the line after the
/// item's number). NONE is unrelated; copied words must be in the passage (or its excerpt, as
/// shown), and then the share of the statement's content words they hold decides, as the
/// overlap check does: at least 0.6 supports, 0.3 partly, less unrelated (the model copied
/// words about something else).
pub fn copied_verdict(rest: &str, pair: &Pair) -> Copied {
    let rest = rest.trim().trim_start_matches('*').trim();
    let first_word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_lowercase();
    if first_word == "none" {
        return Copied::Verdict(CitationVerdict::Unrelated);
    }
    let span = match (rest.find(['"', '\u{201c}']), rest.rfind(['"', '\u{201d}'])) {
        (Some(open), Some(close)) if close > open => {
            let open = open + rest[open..].chars().next().map_or(1, char::len_utf8);
            &rest[open..close]
        }
        _ => {
            // Words without quotes: a verdict word can't be checked; other words are taken
            // as the copy.
            if CitationVerdict::parse(&first_word).is_some() && rest.split_whitespace().count() <= 3
            {
                return Copied::Unreadable;
            }
            rest
        }
    };
    let copy = normalized(span);
    let copy = copy.trim_matches(|c: char| c == '.' || c == ' ' || c == ',' || c == ':');
    if copy.split_whitespace().count() < 2 {
        return Copied::Unreadable;
    }
    let shown = normalized(&excerpt(&pair.statement, &pair.passage));
    let shown = shown.trim_end_matches('…');
    if !shown.contains(copy) && !normalized(&pair.passage).contains(copy) {
        return Copied::NotInPassage;
    }
    let wanted = support::claim_stems(&pair.statement);
    let have: std::collections::HashSet<String> = content_stems(span).into_iter().collect();
    let (share, _) = support::overlap(&wanted, &have);
    Copied::Verdict(if share >= support::SUPPORTED {
        CitationVerdict::Supports
    } else if share >= support::PARTLY {
        CitationVerdict::Partly
    } else {
        CitationVerdict::Unrelated
    })
}

/// The answer's lines: the item number and what follows it, in the answer's order.
pub fn lines(answer: &str) -> Vec<(u32, String)> {
    line_regex()
        .captures_iter(answer)
        .filter_map(|caps| {
            let k = caps[1].parse::<u32>().ok()?;
            Some((k, caps.get(2).map_or("", |m| m.as_str()).to_owned()))
        })
        .collect()
}

/// Parses the judge's answer about `pairs` (all the pairs of the report: the [`verbatim`]
/// ones are supported without asking, the answer's items are the others, [`to_ask`], in
/// order).
pub fn parse(answer: &str, pairs: &[Pair]) -> Judged {
    decide(pairs, &lines(answer))
}

/// [`parse`] of the answer's [`lines`].
pub fn decide(pairs: &[Pair], lines: &[(u32, String)]) -> Judged {
    let asked = to_ask(pairs);
    let mut judged = Judged {
        verdicts: vec![None; pairs.len()],
        ..Judged::default()
    };
    for i in 0..pairs.len() {
        if !asked.contains(&i) {
            judged.verdicts[i] = Some(CitationVerdict::Supports);
            judged.verbatim += 1;
        }
    }
    let mut answered = vec![false; asked.len()];
    for (k, rest) in lines {
        let k = *k;
        match (k as usize).checked_sub(1).filter(|i| *i < asked.len()) {
            Some(i) if !answered[i] => {
                answered[i] = true;
                let pair = &pairs[asked[i]];
                judged.verdicts[asked[i]] = match copied_verdict(rest, pair) {
                    Copied::Verdict(v) => Some(v),
                    Copied::NotInPassage => {
                        judged.not_in_passage += 1;
                        None
                    }
                    Copied::Unreadable => None,
                };
            }
            Some(_) => {}
            None => {
                if !judged.invented.contains(&k) {
                    judged.invented.push(k);
                }
            }
        }
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
    if judged.not_in_passage > 0 {
        notes.push(format!(
            "the model's check copied, for {} citation{}, words the passage does not hold (no verdict)",
            judged.not_in_passage,
            plural(judged.not_in_passage)
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
            pair(
                "For example, GitHub redirects all HTTP requests to HTTPS.",
                TRANSPORTS,
            ),
        ];
        assert_eq!(to_ask(&pairs), vec![1]);
        let (_, user) = prompt(&[pairs[1].clone()]);
        assert!(
            user.starts_with("1.\nQUOTE: docs/advanced/transports.md"),
            "{user}"
        );
        assert!(!user.contains("2.\nQUOTE"), "{user}");
    }

    /// Items 2, 4 and 6 of the report on HTTPX's redirects: the model's answer to the check
    /// (`scripts/bench/research-judge`, variant `copy`, 2026-11-27), the verbatim items aside.
    #[test]
    fn the_server_decides_on_the_words_the_model_copied() {
        let pairs = [
            pair(
                "By default, HTTPX will **not** follow redirects for all HTTP methods, although this can be explicitly enabled.",
                REDIRECTS,
            ),
            pair(
                "By default, HTTPX will **not** follow redirects for all HTTP methods, although this can be explicitly enabled.",
                COMPAT,
            ),
            pair(
                "For example, GitHub redirects all HTTP requests to HTTPS.",
                TRANSPORTS,
            ),
            pair(
                "This can be explicitly enabled by setting the `follow_redirects` parameter to `True`.",
                COMPAT,
            ),
        ];
        assert_eq!(to_ask(&pairs), vec![1, 2, 3]);
        let answer = "1: \"Unlike `requests`, HTTPX does **not follow redirects by default**. You can still enable behaviour to automatically follow redirects, but you need to do so explicitly...\"\n2: \"For example, GitHub redirects all HTTP requests to HTTPS.\"\n3: NONE";
        let judged = parse(answer, &pairs);
        assert_eq!(
            judged.verdicts,
            vec![
                // Verbatim: supported without asking.
                Some(CitationVerdict::Supports),
                // Copied from the passage, and holding most of the statement's words.
                Some(CitationVerdict::Supports),
                // The statement put in the passage's mouth: no verdict (the overlap stands).
                None,
                // NONE.
                Some(CitationVerdict::Unrelated),
            ]
        );
        assert_eq!((judged.verbatim, judged.not_in_passage), (1, 1));
        // Copied words about something else in the passage are unrelated; a part of the
        // statement is partly.
        assert_eq!(
            copied_verdict("\"GitHub redirects all HTTP requests to HTTPS\"", &pairs[0]),
            Copied::Verdict(CitationVerdict::Unrelated)
        );
        assert_eq!(
            copied_verdict(
                "“The `history` property of the response can be used to inspect any followed redirects.”",
                &pair(
                    "The `history` property of a response lists the redirects that were followed, in the order in which they were made.",
                    REDIRECTS
                )
            ),
            Copied::Verdict(CitationVerdict::Partly)
        );
        // A verdict word can't be checked: no verdict.
        assert_eq!(copied_verdict("SUPPORTS", &pairs[1]), Copied::Unreadable);
    }

    #[test]
    fn a_skipped_pair_has_no_verdict_and_an_invented_one_is_counted() {
        let pairs = [
            pair(
                "HTTPX does not follow redirects by default, unlike requests.",
                COMPAT,
            ),
            pair(
                "For example, GitHub redirects all HTTP requests to HTTPS.",
                TRANSPORTS,
            ),
            pair("GitHub redirects all HTTP requests.", COMPAT),
        ];
        assert_eq!(to_ask(&pairs), vec![0, 1, 2]);
        // The answer skips 2, answers 1 twice (the first counts), invents 4 and 7, and
        // writes the number forms a small model writes.
        let judged = parse(
            "**1** - \"Unlike `requests`, HTTPX does **not follow redirects by default**\"\n[3]: NONE\nItem 4: NONE\n1: NONE\n7. \"x y\"\nAll done.",
            &pairs,
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
        // Nothing readable.
        assert_eq!(parse("1: MAYBE", &pairs[..1]).verdicts, vec![None]);
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
        assert!(system.contains("copied exactly"));
        assert!(system.contains("NONE"));
        assert!(user.starts_with("1.\nQUOTE: HTTPX is careful"), "{user}");
        assert!(user.contains("STATEMENT: A timeout can be set for one request."));
        assert!(user.ends_with(
            "1 to 2: its number, a colon and the copied words in double quotes, or NONE."
        ));
        let long = "Unrelated words about nothing at all here. ".repeat(40)
            + "The pool keeps ten connections alive.";
        let e = excerpt("How many connections does the pool keep alive?", &long);
        assert!(e.ends_with("The pool keeps ten connections alive."), "{e}");
        assert!(e.len() <= EXCERPT_CHARS + 3);
    }
}
