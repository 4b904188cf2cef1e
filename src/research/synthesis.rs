//! Citations by construction: the model is shown a numbered source list and may cite only
//! `[n]`; its answer is then checked — markers outside the list are removed and reported,
//! sources are renumbered by first appearance and unused ones dropped — so a cited source is
//! always one that was retrieved. Also the prompt, the claims section, and the extractive
//! synthesis used when no model answers.
//!
//! Pure functions: no I/O, no model calls.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

use crate::store::SourceRecord;
use crate::tokens::{Encoding, count_tokens, truncate_to_tokens};

/// A model answer after validation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Validated {
    /// The synthesis (without the claims section), markers renumbered.
    pub text: String,
    /// Claims with the (new) numbers of the sources they cite.
    pub claims: Vec<(String, Vec<u32>)>,
    /// `order[new - 1]` is the 1-based number the source had in the prompt.
    pub order: Vec<u32>,
    /// Problems a reader should know about (removed markers, uncited claims).
    pub notes: Vec<String>,
}

fn marker_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // `[3]`, `[1, 4]`, `[2-5]`, `[2–5]`; not `[x]` or links `[text](url)`.
    RE.get_or_init(|| {
        Regex::new(r"\[(\d{1,4}(?:\s*(?:,|-|–)\s*\d{1,4})*)\]\(?")
            .unwrap_or_else(|_| unreachable_regex())
    })
}

#[cold]
fn unreachable_regex() -> Regex {
    // The pattern above is a constant tested by `validate_citations`'s tests.
    Regex::new("$^").expect("trivial regex")
}

fn claims_heading() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?mi)^\s{0,3}(?:#{1,6}\s*)?(?:\*\*)?\s*(?:key\s+)?claims\s*:?\s*(?:\*\*)?\s*:?\s*$",
        )
        .unwrap_or_else(|_| unreachable_regex())
    })
}

/// Validates `answer` written against `n_sources` numbered sources.
pub fn validate_citations(answer: &str, n_sources: usize) -> Validated {
    let mut notes = Vec::new();
    let mut removed: Vec<u32> = Vec::new();
    let mut order: Vec<u32> = Vec::new();
    let mut renumber: HashMap<u32, u32> = HashMap::new();
    let rewritten = marker_regex().replace_all(answer, |caps: &regex::Captures<'_>| {
        let whole = &caps[0];
        if whole.ends_with('(') {
            // A Markdown link `[1](…)`: not a citation; left as written.
            return whole.to_owned();
        }
        let mut out = String::new();
        for n in expand(&caps[1]) {
            if n == 0 || n as usize > n_sources {
                if !removed.contains(&n) {
                    removed.push(n);
                }
                continue;
            }
            let next = order.len() as u32 + 1;
            let new = *renumber.entry(n).or_insert_with(|| {
                order.push(n);
                next
            });
            let marker = format!("[{new}]");
            if !out.contains(&marker) {
                out.push_str(&marker);
            }
        }
        out
    });
    if !removed.is_empty() {
        let list: Vec<String> = removed.iter().map(|n| format!("[{n}]")).collect();
        notes.push(format!(
            "removed citation marker{} {}: the model was given {n_sources} source{} (no such source was retrieved)",
            if removed.len() == 1 { "" } else { "s" },
            list.join(", "),
            if n_sources == 1 { "" } else { "s" },
        ));
    }
    let text = tidy(&rewritten);
    let (body, claims_text) = match claims_heading().find(&text) {
        Some(m) => (
            text[..m.start()].to_owned(),
            Some(text[m.end()..].to_owned()),
        ),
        None => (text.clone(), None),
    };
    let mut claims = Vec::new();
    let mut uncited = 0;
    if let Some(section) = claims_text {
        for line in section.lines() {
            let line = line.trim();
            let item = line
                .strip_prefix("- ")
                .or_else(|| line.strip_prefix("* "))
                .or_else(|| line.strip_prefix("• "))
                .or_else(|| {
                    let digits = line.find(|c: char| !c.is_ascii_digit())?;
                    (digits > 0)
                        .then(|| {
                            line[digits..]
                                .strip_prefix(". ")
                                .or(line[digits..].strip_prefix(") "))
                        })
                        .flatten()
                });
            let Some(item) = item else { continue };
            let cited = markers_in(item);
            let claim = strip_markers(item);
            if claim.is_empty() {
                continue;
            }
            if cited.is_empty() {
                uncited += 1;
                continue;
            }
            claims.push((claim, cited));
        }
    }
    if claims.is_empty() {
        // No usable claims section: every cited sentence of the synthesis is a claim.
        for sentence in sentences(&body) {
            let cited = markers_in(&sentence);
            let claim = strip_markers(&sentence);
            if !cited.is_empty() && claim.len() > 15 {
                claims.push((claim, cited));
            }
        }
    }
    if uncited > 0 {
        notes.push(format!(
            "dropped {uncited} claim{} that cited no retrieved source",
            if uncited == 1 { "" } else { "s" }
        ));
    }
    Validated {
        text: body.trim().to_owned(),
        claims,
        order,
        notes,
    }
}

fn expand(list: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in list.split(',') {
        let part = part.trim();
        let range = part.split_once('-').or_else(|| part.split_once('–'));
        match range {
            Some((a, b)) => {
                let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) else {
                    continue;
                };
                if a <= b && b - a < 50 {
                    out.extend(a..=b);
                } else {
                    out.extend([a, b]);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

fn markers_in(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for caps in marker_regex().captures_iter(text) {
        if caps[0].ends_with('(') {
            continue;
        }
        for n in expand(&caps[1]) {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

fn strip_markers(text: &str) -> String {
    let stripped = marker_regex().replace_all(text, |caps: &regex::Captures<'_>| {
        if caps[0].ends_with('(') {
            caps[0].to_owned()
        } else {
            String::new()
        }
    });
    tidy(&stripped).trim().to_owned()
}

fn space_before_punctuation() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"[ \t]+([.,;:!?])(\s|$)").unwrap_or_else(|_| unreachable_regex()))
}

/// Spaces left by removed markers: `word  .` → `word.`.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut l = line.to_owned();
        while l.contains("  ") && !l.trim_start().is_empty() && !line.starts_with("    ") {
            l = l.replace("  ", " ");
        }
        l = space_before_punctuation()
            .replace_all(&l, "$1$2")
            .into_owned();
        out.push_str(l.trim_end());
        out.push('\n');
    }
    out
}

/// Sentences of a text (split after `.`, `!`, `?` followed by a space or the end).
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        current.push(if c == '\n' { ' ' } else { c });
        let end = matches!(c, '.' | '!' | '?')
            && chars.get(i + 1).is_none_or(|n| n.is_whitespace())
            // "e.g." / "et al." / "Fig. 2" are not sentence ends.
            && !current.trim_end().ends_with("e.g.")
            && !current.trim_end().ends_with("i.e.")
            && !current.trim_end().ends_with("al.")
            // a marker may follow the full stop: keep `… end. [2]` together
            ;
        if end {
            // Attach trailing citation markers (`. [1][2]`) to this sentence.
            let rest: String = chars[i + 1..].iter().collect();
            let trimmed = rest.trim_start();
            if !trimmed.starts_with('[') {
                let s = current.trim().to_owned();
                if !s.is_empty() {
                    out.push(s);
                }
                current.clear();
            }
        } else if c == ']' {
            let rest: String = chars[i + 1..].iter().take(2).collect();
            let prev_end = ends_sentence_before_markers(&current);
            if prev_end && !rest.trim_start().starts_with('[') {
                let s = current.trim().to_owned();
                if !s.is_empty() {
                    out.push(s);
                }
                current.clear();
            }
        }
    }
    let s = current.trim().to_owned();
    if !s.is_empty() {
        out.push(s);
    }
    out
}

fn ends_sentence_before_markers(text: &str) -> bool {
    let mut t = text.trim_end();
    while let Some(inner) = t.strip_suffix(']') {
        match inner.rfind('[') {
            Some(open) => t = inner[..open].trim_end(),
            None => break,
        }
    }
    t.ends_with(['.', '!', '?'])
}

/// The system and user messages for a synthesis over `sources` (already in prompt order),
/// fitted to `token_budget` tokens of source text.
pub fn prompt(
    question: &str,
    sources: &[SourceRecord],
    token_budget: usize,
    encoding: Encoding,
) -> (String, String, usize) {
    let system =
        "You are a careful research assistant. Answer the question using ONLY the numbered \
sources below. Cite every factual statement with the source number in square brackets, like [1] \
or [2][3]; cite only numbers from the list, never invent sources, URLs or numbers. Where sources \
disagree, say so. If the sources do not answer the question, say that plainly.\n\n\
Write 2 to 5 short paragraphs of Markdown. Then write a line `Claims:` followed by 3 to 7 lines, \
each `- <one key claim> [n]` citing every source that supports that claim."
            .to_owned();
    let mut user = format!("Question: {}\n\nSources:\n", question.trim());
    let per_source = (token_budget / sources.len().max(1)).max(60);
    let mut used = 0;
    let mut shown = 0;
    for (i, s) in sources.iter().enumerate() {
        let mut head = format!("[{}] {}", i + 1, s.title.trim());
        let mut meta = Vec::new();
        if let Some(v) = &s.venue {
            meta.push(v.clone());
        }
        if let Some(d) = &s.date {
            meta.push(d.clone());
        }
        if let Some(u) = &s.url {
            meta.push(u.clone());
        }
        meta.push(format!("credibility {:.2}", s.credibility.score));
        if s.retracted {
            meta.push("RETRACTED".to_owned());
        }
        head.push_str(&format!(" ({})", meta.join("; ")));
        let snippet = truncate_to_tokens(s.snippet.trim(), per_source, encoding);
        let block = format!("{head}\n{snippet}\n\n");
        let cost = count_tokens(&block, encoding);
        if used + cost > token_budget && shown > 0 {
            break;
        }
        used += cost;
        shown += 1;
        user.push_str(&block);
    }
    (system, user, shown)
}

/// The answer when no model is reachable: the best sentences of the most credible sources (in
/// the given order), each cited, labelled as extractive. Returns the text and its claims
/// (numbered against `sources`, 1-based).
pub fn extractive(
    question: &str,
    sources: &[SourceRecord],
    reason: &str,
) -> (String, Vec<(String, Vec<u32>)>) {
    let terms: Vec<String> = question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 2)
        .map(str::to_lowercase)
        .collect();
    let mut lines = Vec::new();
    let mut claims = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        if lines.len() >= 6 || s.retracted || s.credibility.score <= 0.0 {
            continue;
        }
        // Lines first: workspace snippets are one matching line each.
        let best = s
            .snippet
            .lines()
            .flat_map(sentences)
            .filter(|x| x.len() >= 20 && x.len() <= 600)
            .map(|x| {
                let lower = x.to_lowercase();
                let hits = terms.iter().filter(|t| lower.contains(t.as_str())).count();
                (hits, x)
            })
            .filter(|(hits, _)| *hits > 0)
            .max_by_key(|(hits, x)| (*hits, std::cmp::Reverse(x.len())));
        if let Some((_, sentence)) = best {
            let n = i as u32 + 1;
            let clean = strip_markers(&sentence);
            lines.push(format!("- {clean} [{n}]"));
            claims.push((clean, vec![n]));
        }
    }
    let mut text = format!(
        "*Extractive synthesis — {reason}. These are the most relevant sentences of the most credible sources, quoted as found; no model wrote or checked them.*\n\n"
    );
    if lines.is_empty() {
        text.push_str("None of the retrieved sources has a sentence about the question.");
    } else {
        text.push_str(&lines.join("\n"));
    }
    (text, claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_markers_are_removed_and_reported() {
        let answer = "Tidal locking is common [7]. Close-in planets lock quickly [2][5].\n\nClaims:\n- Close-in planets lock quickly [2, 5]\n- Locking is universal [7]\n";
        let v = validate_citations(answer, 5);
        assert_eq!(
            v.text,
            "Tidal locking is common. Close-in planets lock quickly [1][2]."
        );
        assert_eq!(v.order, vec![2, 5]);
        assert_eq!(
            v.claims,
            vec![("Close-in planets lock quickly".to_owned(), vec![1, 2])]
        );
        assert_eq!(v.notes.len(), 2);
        assert!(
            v.notes[0].contains("removed citation marker [7]"),
            "{:?}",
            v.notes
        );
        assert!(v.notes[0].contains("given 5 sources"));
        assert!(v.notes[1].contains("dropped 1 claim"));
    }

    #[test]
    fn renumbers_by_first_appearance_and_handles_ranges_zero_and_links() {
        let v = validate_citations(
            "First [3]. Then [1-2] and [0]. See [the docs](https://x) and [3].",
            3,
        );
        assert_eq!(v.order, vec![3, 1, 2]);
        assert_eq!(
            v.text,
            "First [1]. Then [2][3] and. See [the docs](https://x) and [1]."
        );
        assert!(v.notes[0].contains("[0]"));
        // Without a claims section, cited sentences become claims.
        assert_eq!(v.claims[0].1, vec![1]);
    }

    #[test]
    fn no_sources_means_every_marker_goes() {
        let v = validate_citations("A [1]. B [2].", 0);
        assert_eq!(v.text, "A. B.");
        assert!(v.order.is_empty());
        assert!(v.claims.is_empty());
    }

    #[test]
    fn sentences_keep_their_markers() {
        assert_eq!(
            sentences("One fact. [1] Two e.g. this [2]. Three?"),
            vec!["One fact. [1]", "Two e.g. this [2].", "Three?"]
        );
    }

    #[test]
    fn extractive_cites_each_sentence() {
        let sources = vec![
            SourceRecord {
                snippet: "Unrelated opening words here. Tidal locking happens when a moon's rotation matches its orbit.".into(),
                credibility: crate::store::Credibility { score: 0.8, ..Default::default() },
                ..Default::default()
            },
            SourceRecord {
                snippet: "Retracted claims about tidal locking are all wrong here.".into(),
                retracted: true,
                ..Default::default()
            },
        ];
        let (text, claims) =
            extractive("what is tidal locking", &sources, "no model was reachable");
        assert!(text.starts_with("*Extractive synthesis — no model was reachable."));
        assert!(
            text.contains("- Tidal locking happens when a moon's rotation matches its orbit. [1]")
        );
        assert_eq!(claims.len(), 1);
    }
}
