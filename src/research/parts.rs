//! The parts of a question and which sentences answer them. "How do sets differ from lists for
//! membership tests, and which of them keeps insertion order" has two parts; a report says per
//! part whether it was answered and by which sources, the extractive synthesis quotes at least
//! one sentence per part, and a model synthesis that leaves a part without a supported sentence
//! gets quoted sentences for it (docs/research.md, "Parts of the question").
//!
//! A part is measured by its own words: its content words less those every part shares (the
//! topic) and less words that only shape a question ("differ", "use", "work"). A sentence
//! answers the part whose own words it holds the largest share of. Pure functions: no I/O.

use crate::research::passages::{content_stems, question_parts, stem};

/// Words that shape a question rather than name what it asks about.
const SHAPE: [&str; 22] = [
    "differ",
    "difference",
    "differences",
    "different",
    "compare",
    "compared",
    "comparison",
    "versus",
    "vs",
    "use",
    "using",
    "used",
    "work",
    "works",
    "happen",
    "happens",
    "mean",
    "means",
    "way",
    "ways",
    "between",
    "choose",
];

/// One part of a question and the stems that tell it apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub text: String,
    pub stems: Vec<String>,
}

/// The parts of `question` (one when it has a single part), each with its own stems.
pub fn parts_of(question: &str) -> Vec<Part> {
    let mut texts = question_parts(question);
    if texts.is_empty() {
        texts.push(question.trim().to_owned());
    }
    let shape: Vec<String> = SHAPE.iter().map(|w| stem(w)).collect();
    let all: Vec<Vec<String>> = texts
        .iter()
        .map(|t| {
            content_stems(t)
                .into_iter()
                .filter(|s| !shape.contains(s))
                .collect()
        })
        .collect();
    texts
        .iter()
        .zip(&all)
        .map(|(text, stems)| {
            let own: Vec<String> = if all.len() > 1 {
                stems
                    .iter()
                    .filter(|s| !all.iter().all(|other| other.contains(s)))
                    .cloned()
                    .collect()
            } else {
                stems.clone()
            };
            Part {
                text: text.trim().trim_end_matches('?').trim().to_owned(),
                stems: if own.is_empty() { stems.clone() } else { own },
            }
        })
        .collect()
}

/// Whether a word of a sentence and a stem of a part name the same thing: equal, or one holds
/// the other whole (`unordered` holds `order`, `ordering` starts with it).
fn meets(word: &str, part: &str) -> bool {
    word == part
        || (part.chars().count() >= 4 && word.contains(part))
        || (word.chars().count() >= 4 && part.starts_with(word))
}

/// How many of `part`'s stems the sentence holds.
pub fn hits(sentence: &str, part: &Part) -> usize {
    let words = content_stems(sentence);
    part.stems
        .iter()
        .filter(|p| words.iter().any(|w| meets(w, p)))
        .count()
}

/// The share of `part`'s stems the sentence holds.
pub fn share(sentence: &str, part: &Part) -> f64 {
    if part.stems.is_empty() {
        return 0.0;
    }
    hits(sentence, part) as f64 / part.stems.len() as f64
}

/// The parts (indices) a sentence answers: those whose stems it holds the largest share of, when
/// that share is above zero. A question with one part: that part, whatever the sentence says
/// (its words were checked against the passages already).
pub fn answered_by(sentence: &str, parts: &[Part]) -> Vec<usize> {
    if parts.len() <= 1 {
        return (0..parts.len()).collect();
    }
    let shares: Vec<f64> = parts.iter().map(|p| share(sentence, p)).collect();
    let best = shares.iter().copied().fold(0.0, f64::max);
    if best <= 0.0 {
        return Vec::new();
    }
    shares
        .iter()
        .enumerate()
        .filter(|(_, s)| (**s - best).abs() < 1e-9)
        .map(|(i, _)| i)
        .collect()
}

/// The parts a kept sentence answers: those it holds the largest share of ([`answered_by`]),
/// and any it holds at least half the words of ([`enough_for`]).
pub fn answers(sentence: &str, parts: &[Part]) -> Vec<usize> {
    let mut out = answered_by(sentence, parts);
    for (i, part) in parts.iter().enumerate() {
        if !out.contains(&i) && enough_for(sentence, part) {
            out.push(i);
        }
    }
    out.sort_unstable();
    out
}

/// Whether a quoted sentence is enough of an answer to `part` to quote for it: at least half of
/// the part's own words (one of one or two).
pub fn enough_for(sentence: &str, part: &Part) -> bool {
    let h = hits(sentence, part);
    h > 0 && h * 2 >= part.stems.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_told_apart_by_their_own_words() {
        let parts = parts_of(
            "how do sets differ from lists for membership tests, and which of them keeps insertion order",
        );
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].stems, vec!["set", "list", "membership", "test"]);
        assert_eq!(parts[1].stems, vec!["keep", "insertion", "order"]);
        assert_eq!(
            answered_by("A set answers membership tests faster than a list.", &parts),
            vec![0]
        );
        // `unordered` holds `order`: the sentence answers the second part.
        assert_eq!(
            answered_by(
                "Sets are unordered collections with no duplicate elements.",
                &parts
            ),
            vec![1]
        );
        assert_eq!(
            answered_by(
                "Dictionaries preserve insertion order since Python 3.7.",
                &parts
            ),
            vec![1]
        );
        assert!(answered_by("Tuples are immutable.", &parts).is_empty());
        assert!(enough_for(
            "A set is faster than a list for membership tests.",
            &parts[0]
        ));
        assert!(!enough_for("A list holds items.", &parts[0]));
    }

    #[test]
    fn one_part_takes_every_sentence() {
        let parts = parts_of("what does the gateway redact from its logs?");
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].text, "what does the gateway redact from its logs");
        assert_eq!(answered_by("Anything at all.", &parts), vec![0]);
    }
}
