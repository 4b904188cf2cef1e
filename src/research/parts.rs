//! The parts of a question and which sentences answer them. "How do sets differ from lists for
//! membership tests, and which of them keeps insertion order" has two parts; a report says per
//! part whether it was answered and by which sources, the extractive synthesis quotes at least
//! one sentence per part, and a model synthesis that leaves a part without a supported sentence
//! gets quoted sentences for it (docs/research.md, "Parts of the question").
//!
//! A part is measured by its own words: its content words less those every part shares (the
//! topic) and less words that only shape a question ("differ", "use", "work"). Each own word
//! weighs by how rare it is among the report's passages ([`parts_among`]): a word nearly every
//! passage holds — the product's name, "HTTPX" in HTTPX's docs — tells no part apart and weighs
//! almost nothing; "JSON" in two passages of fourteen weighs most of "send JSON data in a
//! request". A sentence answers the part whose weighted words it holds the largest share of,
//! when that share is at least [`FLOOR`]: one common word is not an answer. Pure functions: no
//! I/O.

use crate::research::passages::{content_stems, is_navigation, question_parts, stem, terms};
use crate::store::SourceRecord;

/// Words that shape a question rather than name what it asks about ("how do I make one
/// preprocessor run before another", "how does SUMMARY.md define the structure of a book":
/// weighed by rarity, "make", "another" and "define" outweighed what the parts ask about).
/// "How many times", "is given" shape a question too: in "how do I count how many times an
/// option is given, and what is the count when the option is not passed" they were the first
/// part's own words, and "To count the occurrence of an option, set `count=True`" held none of
/// them (Click's docs, 2026-11-28).
const SHAPE: [&str; 34] = [
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
    "make",
    "makes",
    "making",
    "made",
    "define",
    "defines",
    "defined",
    "another",
    "many",
    "much",
    "times",
    "given",
];

/// Words that shape a search but still tell a part apart: "find" and "locate" ask where
/// something is. Ranked by them, bat's "how do I find where the configuration file is" (where
/// "find" is rarer than "configuration" and "file") took first the sections that say "you can
/// find …" of other files, and the "Configuration file" section was not among the passages
/// shown; but a sentence holding only "configuration file" does not say where it is (the
/// sentences on its format would answer the part).
const SEARCH_SHAPE: [&str; 2] = ["find", "locate"];

/// The share of a part's weighted words a sentence must hold to answer it. Measured on the
/// recorded answers over HTTPX's docs and mdBook's guide (docs/research.md, "Measured: two
/// corpora patchwise did not write"): every sentence read as answering a part holds at least a
/// third of its weight; "HTTPX supports setting up HTTP proxies …" holds none of "which
/// environment variables does HTTPX read for proxies" once HTTPX weighs nothing.
pub const FLOOR: f64 = 1.0 / 3.0;

/// The share a quoted sentence must hold to be quoted for a part ([`enough_for`]).
pub const ENOUGH: f64 = 0.5;

/// One part of a question, the stems that tell it apart and what each weighs.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionPart {
    pub text: String,
    pub stems: Vec<String>,
    /// One per stem: 1 for every stem by [`parts_of`], by rarity among the passages by
    /// [`parts_among`].
    pub weights: Vec<f64>,
    /// The stems of the names the part says outside inline code ([`name_stems`]), by
    /// [`searched_parts`] only: a passage holding one that few passages hold is about the
    /// part ([`about`]).
    pub names: Vec<String>,
}

/// The parts of `question` weighed against the passages of its report (each a passage's title
/// and text): a stem weighs `ln((n + 1) / (df + 1))`, `n` the passages and `df` those holding
/// the stem, so a stem every passage holds weighs nothing, and so does a stem none holds. With
/// fewer than three passages, or where every stem of a part would weigh nothing, the part's
/// stems weigh alike.
pub fn parts_among<P: AsRef<str>>(
    question: &str,
    passages: impl IntoIterator<Item = P>,
) -> Vec<QuestionPart> {
    let words: Vec<Vec<String>> = passages
        .into_iter()
        .map(|p| content_stems(p.as_ref()))
        .collect();
    let n = words.len();
    let mut parts = parts_of(question);
    if n < 3 {
        return parts;
    }
    for part in &mut parts {
        let weights = idf_weights(&part.stems, &words);
        if weights.iter().sum::<f64>() > 1e-9 {
            part.weights = weights;
        }
    }
    parts
}

/// [`parts_among`] the sources of a report (their titles and texts).
pub fn parts_for(question: &str, sources: &[SourceRecord]) -> Vec<QuestionPart> {
    parts_among(
        question,
        sources
            .iter()
            .map(|s| format!("{}\n{}", s.title, s.snippet)),
    )
}

/// The parts of `question` (one when it has a single part), each with its own stems, all
/// weighing alike.
pub fn parts_of(question: &str) -> Vec<QuestionPart> {
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
            let stems = if own.is_empty() { stems.clone() } else { own };
            QuestionPart {
                text: text.trim().trim_end_matches('?').trim().to_owned(),
                weights: vec![1.0; stems.len()],
                stems,
                names: Vec::new(),
            }
        })
        .collect()
}

/// Whether a word of a sentence and a stem of a part name the same thing: equal, or one holds
/// the other whole (`unordered` holds `order`, `ordering` starts with it).
/// Each stem's inverse document frequency over `texts` (each text's stems). A word no text
/// holds tells no text's sentence apart either ("read" in "which environment variables does
/// HTTPX read", where the docs say "supports"): weight 0.
fn idf_weights(stems: &[String], texts: &[Vec<String>]) -> Vec<f64> {
    let n = texts.len();
    stems
        .iter()
        .map(|p| {
            let df = texts
                .iter()
                .filter(|w| w.iter().any(|w| meets(w, p)))
                .count();
            if df == 0 {
                0.0
            } else {
                ((n + 1) as f64 / (df + 1) as f64).ln()
            }
        })
        .collect()
}

fn meets(word: &str, part: &str) -> bool {
    word == part
        || (part.chars().count() >= 4 && word.contains(part))
        || (word.chars().count() >= 4 && part.starts_with(word))
}

/// Which of `part`'s stems the sentence holds.
fn held(sentence: &str, part: &QuestionPart) -> Vec<bool> {
    let words = content_stems(sentence);
    part.stems
        .iter()
        .map(|p| words.iter().any(|w| meets(w, p)))
        .collect()
}

/// How many of `part`'s stems that weigh something the sentence holds, and how many there are.
pub fn weighed_hits(sentence: &str, part: &QuestionPart) -> (usize, usize) {
    let weighed = |w: &f64| *w > 1e-9;
    let held = held(sentence, part)
        .into_iter()
        .zip(&part.weights)
        .filter(|(h, w)| *h && weighed(w))
        .count();
    (held, part.weights.iter().filter(|w| weighed(w)).count())
}

/// The share of `part`'s weight the sentence holds: the weights of the stems it holds over
/// the weights of all of them.
pub fn share(sentence: &str, part: &QuestionPart) -> f64 {
    let total: f64 = part.weights.iter().sum();
    if part.stems.is_empty() || total <= 0.0 {
        return 0.0;
    }
    let got: f64 = held(sentence, part)
        .into_iter()
        .zip(&part.weights)
        .filter(|(h, _)| *h)
        .map(|(_, w)| w)
        .sum();
    got / total
}

/// The parts (indices) a sentence answers: those whose weight it holds the largest share of,
/// when that share is at least [`FLOOR`]. A question with one part: that part, whatever the
/// sentence says (its words were checked against the passages already).
pub fn answered_by(sentence: &str, parts: &[QuestionPart]) -> Vec<usize> {
    if parts.len() <= 1 {
        return (0..parts.len()).collect();
    }
    let shares: Vec<f64> = parts.iter().map(|p| share(sentence, p)).collect();
    let best = shares.iter().copied().fold(0.0, f64::max);
    if best < FLOOR - 1e-9 {
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
/// and any it holds at least half the weight of ([`enough_for`]).
pub fn answers(sentence: &str, parts: &[QuestionPart]) -> Vec<usize> {
    let mut out = answered_by(sentence, parts);
    for (i, part) in parts.iter().enumerate() {
        if !out.contains(&i) && enough_for(sentence, part) {
            out.push(i);
        }
    }
    out.sort_unstable();
    out
}

/// Whether a quoted sentence is enough of an answer to `part` to quote for it: at least half
/// of the part's weight ([`ENOUGH`]; one of one or two words weighing alike).
pub fn enough_for(sentence: &str, part: &QuestionPart) -> bool {
    share(sentence, part) >= ENOUGH - 1e-9
}

/// The stems of the words that only shape a search ([`SHAPE`] and [`SEARCH_SHAPE`]).
fn searched_shape() -> Vec<String> {
    SHAPE.iter().chain(&SEARCH_SHAPE).map(|w| stem(w)).collect()
}

/// The parts of `question` as searched: each with all its content words (those it shares with
/// the other parts too: "theme" in "which theme does bat use by default, and how do I make a
/// theme choice permanent" is what both are about), less words that only shape a question,
/// weighed by their rarity among `sources` as in [`parts_among`].
pub fn searched_parts(question: &str, sources: &[SourceRecord]) -> Vec<QuestionPart> {
    let texts: Vec<Vec<String>> = sources
        .iter()
        .map(|s| content_stems(&format!("{}\n{}", s.title, s.snippet)))
        .collect();
    let shape = searched_shape();
    parts_of(question)
        .into_iter()
        .map(|part| {
            let stems: Vec<String> = content_stems(&part.text)
                .into_iter()
                .filter(|s| !shape.contains(s))
                .collect();
            let weights = idf_weights(&stems, &texts);
            let weights = if weights.iter().sum::<f64>() > 1e-9 {
                weights
            } else {
                vec![1.0; stems.len()]
            };
            let names = name_stems(&part.text);
            let all: Vec<String> = names.iter().map(|(s, _)| s.clone()).collect();
            let weights = names_weigh_half(&stems, weights, &all);
            QuestionPart {
                text: part.text,
                stems,
                weights,
                names: names
                    .into_iter()
                    .filter(|(_, in_code)| !in_code)
                    .map(|(s, _)| s)
                    .collect(),
            }
        })
        .collect()
}

/// The stems of the words of a part that name something rather than tell a story: a word in
/// backticks, a code with letters and digits (`UP034`, `E501`), a joined identifier
/// (`attr.ib`, `extend-unsafe-fixes`, `--fix`, `auto_envvar_prefix`), a word with a capital
/// inside it (`PyPI`, `HTTPX`), and a capitalised word that does not begin a sentence
/// (`Pyright`, `Black`). The docs say a name as the user wrote it; the words around it are
/// the user's own. Each with whether it was in inline code (which may be the user's own code:
/// `Client(token=...)`).
pub fn name_stems(text: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut code = false;
    let mut starts_sentence = true;
    for raw in text.split_whitespace() {
        let in_code = code || raw.starts_with('`');
        if raw.matches('`').count() % 2 == 1 {
            code = !code;
        }
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let letters = word.chars().any(char::is_alphabetic);
        let named = letters
            && (in_code
                || word.chars().any(|c| c.is_ascii_digit())
                || word.contains(['_', '.', '-', ':', '/'])
                || raw
                    .trim_start_matches(['`', '(', '"', '\''])
                    .starts_with("--")
                || word.chars().skip(1).any(char::is_uppercase)
                || (!starts_sentence && word.chars().next().is_some_and(char::is_uppercase)));
        if named {
            for term in terms(word) {
                let s = stem(&term);
                match out.iter_mut().find(|(o, _)| *o == s) {
                    Some(seen) => seen.1 &= in_code,
                    None => out.push((s, in_code)),
                }
            }
        }
        starts_sentence = raw.ends_with(['.', '?', '!', ':', '\u{2014}']) || raw == "\u{2014}";
    }
    out
}

/// `weights` with the part's names ([`name_stems`]) weighing at least as much together as
/// its other words: weighed by rarity alone, the words of the user's story outweighed the
/// name the docs use. Over Ruff's docs "how do I mark the fixes of one particular rule,
/// UP034, as risky" weighed "going", "mark" and "particular" (words no section uses) above
/// `UP034`, and the section whose example is `extend-unsafe-fixes = ["UP034"]` held too
/// little of the part to be ranked for it; the report said nothing found answers it.
fn names_weigh_half(stems: &[String], mut weights: Vec<f64>, names: &[String]) -> Vec<f64> {
    let is_name: Vec<bool> = stems.iter().map(|s| names.contains(s)).collect();
    let named: f64 = weights
        .iter()
        .zip(&is_name)
        .filter(|(_, n)| **n)
        .map(|(w, _)| w)
        .sum();
    let other = weights.iter().sum::<f64>() - named;
    if named > 1e-9 && other > named {
        let scale = other / named;
        for (w, n) in weights.iter_mut().zip(&is_name) {
            if *n {
                *w *= scale;
            }
        }
    }
    weights
}

/// Words by which a part points back at the part before it.
const POINTING: [&str; 8] = [
    "it", "its", "they", "them", "those", "these", "this", "that",
];

/// Whether a part points back at the part before it and says too little to be asked alone:
/// one of [`POINTING`] and at most three content words that do not only shape a question
/// ("where should those comments go", "and can I change that", "how do I get it back"). Asked
/// alone over Ruff's docs, "where should those comments go" (after "I wrapped a couple of
/// entries in `# fmt: off` / `# fmt: on` and Ruff reformats them anyway — why") got the Neovim
/// setup section and the answer "in the section titled 'Neovim 0.11+'", the worst sentence of
/// the run (2026-12-01). A part with at most one such word says too little without pointing
/// too: asked alone over Uvicorn's docs, "What do I have to change" (after "I thought Uvicorn
/// reads X-Forwarded-For / X-Forwarded-Proto out of the box") was searched by "change" and
/// answered with `docker compose up` rebuilding the image "when code changes" (2026-12-02).
pub fn points_back(text: &str) -> bool {
    let pointing = text
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| POINTING.contains(&w.to_lowercase().as_str()));
    let shape = searched_shape();
    let own = content_stems(text)
        .into_iter()
        .filter(|s| !shape.contains(s))
        .count();
    (pointing && own <= 3) || own <= 1
}

/// What the targeted pass asks for part `p` of `parts`, and the part it ranks the passages by:
/// the part itself, or, when it points back ([`points_back`]), the part before it and this one
/// together (the text joined by a dash, the words of both, this part's first), so that the
/// model knows what "those comments" are and the passages are about them. `searched` are the
/// parts as [`searched_parts`] weighs them.
pub fn asked_for(
    parts: &[QuestionPart],
    searched: &[QuestionPart],
    p: usize,
) -> Option<(String, QuestionPart)> {
    let part = parts.get(p)?;
    let own = searched.get(p)?;
    if p == 0 || !points_back(&part.text) {
        return Some((part.text.clone(), own.clone()));
    }
    let (before, before_searched) = (parts.get(p - 1)?, searched.get(p - 1)?);
    let mut joined = own.clone();
    for (stem, weight) in before_searched.stems.iter().zip(&before_searched.weights) {
        if !joined.stems.contains(stem) {
            joined.stems.push(stem.clone());
            joined.weights.push(*weight);
        }
    }
    for name in &before_searched.names {
        if !joined.names.contains(name) {
            joined.names.push(name.clone());
        }
    }
    let text = format!("{} \u{2014} {}", before.text, part.text);
    joined.text = text.clone();
    Some((text, joined))
}

/// The sources (indices) that hold at least [`FLOOR`] of `part`'s weighed words (a part of
/// [`searched_parts`]), the largest share first (ties keep the order they were found in);
/// navigation never ([`is_navigation`]).
pub fn ranked_for(part: &QuestionPart, sources: &[SourceRecord]) -> Vec<usize> {
    ranked_and_named(part, sources).0
}

/// The passages about `part`: those [`ranked_for`] it, then those that hold less of its words
/// but a name of it that at most [`NAMED`] passages hold ([`QuestionPart::names`]), the
/// larger share first; navigation never. What a part left unanswered is asked again with
/// ([`crate::research::run`]) and what its pointer names ([`most_about`]); the prompt's
/// order takes only the ranked ones ([`prompt_order`]): taken there too, a name as common as
/// "Python" in "my own MkDocs plugin as a Python package" gave its part the budget another
/// part's section needed.
pub fn about(part: &QuestionPart, sources: &[SourceRecord]) -> Vec<usize> {
    let (mut ranked, named) = ranked_and_named(part, sources);
    ranked.extend(named);
    ranked
}

/// The passages the targeted pass asks part `p` over (`part` as [`asked_for`] ranks it), best
/// first: those its own search found ([`SourceRecord::found_for`]) and those [`about`] it,
/// taken in turn, the search's first, each once; navigation never. The share weighs a word by
/// its rarity among the few passages found and ranks nothing below [`FLOOR`]; the search weighs
/// it by its rarity in the whole corpus and a heading's words more. Each finds answers the
/// other misses: over the 103 located parts of seven corpora's bench questions
/// (`scripts/bench/research-answers-*.md`) that a report splits as located, the answering
/// passage was among the first three for 79 taken in turn, 71 by the share alone and 65 by the
/// search alone, while 100 of the 103 were among the passages found. The search's best goes
/// first because the first passage is the one a small model answers from: over Uvicorn's and
/// just's docs (2026-12-02) Qwen2.5-Coder-1.5B quoted the first passage in 23 of the 29 calls
/// where it quoted any, and quoted the answering passage in 17 of 22 calls where it was first
/// against 4 of 11 where it was second or third; and the search's best is the answering passage
/// more often than the share's ([`searched_for`]; docs/research.md, "Each part searched on
/// its own"). `p` is `None` for a part asked with the part before it
/// ([`asked_for`]): its own search had only its few words ("where should those comments go").
pub fn asked_over(p: Option<usize>, part: &QuestionPart, sources: &[SourceRecord]) -> Vec<usize> {
    let by_share = about(part, sources);
    let by_search = searched_for(p, sources);
    let mut out: Vec<usize> = Vec::with_capacity(by_share.len() + by_search.len());
    for k in 0..by_share.len().max(by_search.len()) {
        for i in [by_search.get(k), by_share.get(k)].into_iter().flatten() {
            if !out.contains(i) {
                out.push(*i);
            }
        }
    }
    out
}

/// The passages part `p`'s own search ranked, in its order ([`SourceRecord::search_ranks`]);
/// navigation never. A passage another part's search found first is in the list
/// too: over seven corpora's bench questions, the first passage of a part's own prompt held
/// the answer for 63 of the 111 located parts split as located, against 49 with the share's
/// best first (`research-part-prompts`, 2026-12-02; about 50 with the passages found for the
/// part alone, a passage found first for another part left out).
fn searched_for(p: Option<usize>, sources: &[SourceRecord]) -> Vec<usize> {
    let Some(p) = p else {
        return Vec::new();
    };
    let mut ranked: Vec<(usize, usize)> = sources
        .iter()
        .enumerate()
        .filter(|(_, s)| !is_navigation(&s.snippet))
        .filter_map(|(i, s)| {
            let (_, place) = s.search_ranks.iter().find(|(part, _)| *part == p)?;
            Some((*place, i))
        })
        .collect();
    ranked.sort();
    ranked.into_iter().map(|(_, i)| i).collect()
}

fn ranked_and_named(part: &QuestionPart, sources: &[SourceRecord]) -> (Vec<usize>, Vec<usize>) {
    let texts: Vec<String> = sources
        .iter()
        .map(|s| format!("{}\n{}", s.title, s.snippet))
        .collect();
    let words: Vec<Vec<String>> = texts.iter().map(|t| content_stems(t)).collect();
    let holds = |i: usize, name: &str| words[i].iter().any(|w| meets(w, name));
    let rare: Vec<&String> = part
        .names
        .iter()
        .filter(|n| (1..=NAMED).contains(&(0..texts.len()).filter(|&i| holds(i, n)).count()))
        .collect();
    let mut above: Vec<(f64, usize)> = Vec::new();
    let mut named: Vec<(f64, usize)> = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        if is_navigation(&s.snippet) {
            continue;
        }
        let got = share(&texts[i], part);
        if got >= FLOOR - 1e-9 {
            above.push((got, i));
        } else if rare.iter().any(|n| holds(i, n)) {
            named.push((got, i));
        }
    }
    let best_first = |a: &(f64, usize), b: &(f64, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    above.sort_by(best_first);
    named.sort_by(best_first);
    let indices = |v: Vec<(f64, usize)>| v.into_iter().map(|(_, i)| i).collect();
    (indices(above), indices(named))
}

/// How many of a report's passages at most may hold a name of a part for each of them to be
/// about the part below [`FLOOR`] ([`about`]): over attrs' docs "Pylance/Pyright flags
/// my `Client(token=...)` call as an error even though it runs fine — how do I make it
/// understand" held too few of its story's words in the section on Pyright, and the report
/// said nothing found answers it. A name many passages hold tells none of them apart.
const NAMED: usize = 3;

/// How many passages a part left unanswered points the reader to ([`most_about`]).
pub const POINTED: usize = 3;

/// The passages (indices into `sources`) most about part `p` of `question`, best first (by the
/// share of its words and by its own search in turn, as [`asked_over`]), at most [`POINTED`],
/// none retracted and none the model `read` (was shown, in the synthesis's prompt or the
/// targeted pass's, and answered from): where a reader looks when the report could not answer
/// the part. With the stand-in model of `scripts/bench/research-part-prompts` (every part left
/// unanswered), the passages pointed to held a located answer of the question for 76 of the
/// 101 parts pointed at over seven corpora, against 69 by the share alone. The report
/// says which passages these are, not that nothing answers: over Starlette's docs the part
/// "how do I generate the URL of a route that lives inside a named Mount" was reported as
/// answered by nothing while the section that answers it was the first passage of the prompt
/// (the answer is in its code, `url_for("users:user_detail", …)`, which no quoted sentence
/// holds). Leaving out what the model read: of the parts over uv's and MkDocs' docs whose
/// answering section was not in the prompt, the three best by the part's ranking held it for
/// 7 of 20 with the prompt's passages counted and 9 without them (over bat's, Click's,
/// Poetry's and Starlette's, 1 of 16 and 6; three uv pointers read by hand named the shown
/// passages and none the answer).
pub fn most_about(
    question: &str,
    p: usize,
    sources: &[SourceRecord],
    read: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let searched = searched_parts(question, sources);
    // Ranked as the targeted pass asks the part: one that points back, by its words and the
    // part's before it. By its own few words ("how do I turn it on", after "is there tab
    // completion for the `hatch` command", Hatch's docs, 2026-12-02) the ranking found no
    // passage and the report said that nothing answers it, with 23 of 24 holding the words
    // asked by.
    let Some((asked, by)) = asked_for(&searched, &searched, p) else {
        return Vec::new();
    };
    let search = (asked == searched[p].text).then_some(p);
    asked_over(search, &by, sources)
        .into_iter()
        .filter(|i| !read(*i) && !sources[*i].retracted)
        .take(POINTED)
        .collect()
}

/// The sentence a report ends a part it could not answer with: the passages [`most_about`]
/// it as `[n]` markers (`number` gives a passage's marker from its index), or, when no
/// passage found holds enough of its words and its own search found none, that the passages
/// found do not answer it. `what`
/// says what was searched; `unread`, that the pointed passages are ones the model was not
/// shown; `asked`, the passages the part was asked over (its targeted pass), named first: a
/// small model that wrote nothing they support may still have had the answer there. Over
/// Uvicorn's and just's docs answered part by part (2026-12-01), the three passages a part
/// left unanswered was asked over held a located answer of its question for 10 of 15 such
/// parts, the passages pointed past them for 7, one or the other for 12.
pub fn unanswered_line(
    part: &str,
    what: &str,
    pointed: &[u32],
    unread: bool,
    asked: &[u32],
) -> String {
    if pointed.is_empty() {
        return format!("Nothing in the passages found answers \u{201c}{part}\u{201d}{what}.");
    }
    let markers: Vec<String> = pointed.iter().map(|n| format!("[{n}]")).collect();
    if unread && !asked.is_empty() {
        let again: Vec<String> = asked.iter().map(|n| format!("[{n}]")).collect();
        return format!(
            "Not answered: \u{201c}{part}\u{201d}{what}. The passage{} it was asked over, to read again: {}; the passage{} most about it that the model was not shown: {}.",
            if asked.len() == 1 { "" } else { "s" },
            again.join(", "),
            if pointed.len() == 1 { "" } else { "s" },
            markers.join(", ")
        );
    }
    format!(
        "Not answered: \u{201c}{part}\u{201d}{what}. The passage{} most about it{}, to read: {}.",
        if pointed.len() == 1 { "" } else { "s" },
        if unread {
            " that the model was not shown"
        } else {
            ""
        },
        markers.join(", ")
    )
}

/// The sources of a report in the order the prompt takes them, which fills its passage budget
/// from the top (docs/research.md, "Each part searched on its own"). Each part of the question
/// ranks the sources by the share of its weighed words they hold ([`ranked_for`]; ties
/// keep the order they were found in), with the best passage of its own search second when
/// the share does not put it first ([`SourceRecord::found_for`]): that search weighs a word by
/// how rare it is in the whole corpus and a heading's words more, where the share weighs it by
/// how rare it is among the few passages found, so the words of a question's story ("keep",
/// "old", "folder") outweigh its topic's there. Over uv's and MkDocs' docs, 7 of the 20 parts
/// whose answering passage was not shown had it first or second in their own search and lower
/// by the share. The parts take turns, the part with the fewest
/// tokens in the prompt so far taking its next best passage: however many passages fit, each
/// part has its best ones in front of the model, and the budget is shared between the parts
/// rather than spent on the part whose words the most passages hold. The sources no part
/// ranks follow in the order they came, and navigation (a table of contents, a list of links:
/// [`is_navigation`]) comes last.
pub fn prompt_order(question: &str, sources: Vec<SourceRecord>) -> Vec<SourceRecord> {
    let n = sources.len();
    let navigation: Vec<bool> = sources.iter().map(|s| is_navigation(&s.snippet)).collect();
    let parts = searched_parts(question, &sources);
    let mut order: Vec<usize> = Vec::with_capacity(n);
    let mut taken = vec![false; n];
    if parts.len() > 1 {
        let texts: Vec<String> = sources
            .iter()
            .map(|s| format!("{}\n{}", s.title, s.snippet))
            .collect();
        let rankings: Vec<Vec<usize>> = parts
            .iter()
            .enumerate()
            .map(|(p, part)| {
                let found = (0..n).find(|&i| sources[i].found_for == Some(p) && !navigation[i]);
                with_first_found(ranked_for(part, &sources), found)
            })
            .collect();
        // What a passage costs in the prompt, roughly: four characters a token, at most the
        // prompt's cap per passage.
        let cost = |i: usize| (texts[i].len() / 4).clamp(1, 600);
        let mut used = vec![0usize; parts.len()];
        loop {
            let next = |p: usize, taken: &[bool]| rankings[p].iter().copied().find(|i| !taken[*i]);
            let Some((p, i)) = (0..parts.len())
                .filter_map(|p| next(p, &taken).map(|i| (p, i)))
                .min_by_key(|(p, _)| (used[*p], *p))
            else {
                break;
            };
            taken[i] = true;
            used[p] += cost(i);
            order.push(i);
        }
    }
    order.extend((0..n).filter(|i| !taken[*i] && !navigation[*i]));
    order.extend((0..n).filter(|i| !taken[*i] && navigation[*i]));
    let mut slots: Vec<Option<SourceRecord>> = sources.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// `ranked` with `first` (the best of the part's own search) second, unless it is first
/// already. Taking the search's and the share's passages in turn, tried too, showed two more
/// answering sections over the six corpora's questions, but changed which passages each part
/// takes after its first two, and with them the others' share of the budget.
fn with_first_found(mut ranked: Vec<usize>, first: Option<usize>) -> Vec<usize> {
    if let Some(first) = first
        && ranked.first() != Some(&first)
    {
        ranked.retain(|&i| i != first);
        ranked.insert(1.min(ranked.len()), first);
    }
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_left_unanswered_points_past_what_the_model_read() {
        let source = |title: &str, text: &str| SourceRecord {
            title: title.to_owned(),
            snippet: text.to_owned(),
            ..SourceRecord::default()
        };
        let sources = vec![
            source("a.md", "The cache evicts the oldest entry when it is full."),
            source("b.md", "Evicted entries of the cache are logged."),
            source(
                "c.md",
                "The cache evicts entries by age; set the eviction age with `max_age`.",
            ),
            source("d.md", "Retries back off exponentially."),
        ];
        let question = "how does the cache evict entries, and how are retries spaced";
        assert_eq!(most_about(question, 0, &sources, |_| false), vec![0, 1, 2]);
        // What the part's own search found comes first, in turn with what holds its words.
        let mut found = sources.clone();
        found.push(SourceRecord {
            found_for: Some(0),
            search_ranks: vec![(0, 0)],
            ..source("e.md", "Set `max_age` to bound how long an item lives.")
        });
        assert_eq!(most_about(question, 0, &found, |_| false), vec![4, 0, 1]);
        // A part that points back is pointed to the passages of the words it is asked by,
        // its own and the part's before it: by "turn" alone, none.
        let completion = vec![
            source(
                "about.md",
                "Tab completion for zsh is a script saved with `_HATCH_COMPLETE=zsh_source hatch`.",
            ),
            source("env.md", "Environments are created on first use."),
            source(
                "zsh.md",
                "Source the zsh completion script from `~/.zshrc`.",
            ),
        ];
        let pointing = "is there tab completion for the hatch command on zsh? How do I turn it on?";
        assert_eq!(
            searched_parts(pointing, &completion).len(),
            2,
            "{:?}",
            searched_parts(pointing, &completion)
        );
        assert!(!most_about(pointing, 1, &completion, |_| false).is_empty());
        // The model was shown the first two: the reader is pointed to the third.
        assert_eq!(most_about(question, 0, &sources, |i| i < 2), vec![2]);
        assert_eq!(
            most_about(question, 0, &sources, |i| i < 4),
            Vec::<usize>::new()
        );
        assert!(
            unanswered_line("how does the cache evict entries", "", &[3], true, &[])
                .ends_with("The passage most about it that the model was not shown, to read: [3].")
        );
        assert!(
            unanswered_line("how does the cache evict entries", "", &[3], true, &[1, 2]).ends_with(
                "The passages it was asked over, to read again: [1], [2]; the passage most about it that the model was not shown: [3]."
            )
        );
    }

    #[test]
    fn a_part_is_asked_over_its_passages_by_its_own_search_and_by_share_in_turn() {
        let source = |title: &str, text: &str, found_for: Option<usize>| SourceRecord {
            title: title.to_owned(),
            snippet: text.to_owned(),
            found_for,
            ..SourceRecord::default()
        };
        let sources = vec![
            // Found for the first part, about its words.
            source(
                "a.md",
                "The cache evicts the oldest entry when it is full.",
                Some(0),
            ),
            source("b.md", "Evicted entries of the cache are logged.", Some(1)),
            // Found for the first part by words the share weighs little.
            source(
                "c.md",
                "Set `max_age` to bound how long an item lives.",
                Some(0),
            ),
            source("d.md", "Retries back off exponentially.", Some(1)),
            // Navigation is never asked over, whatever found it.
            source(
                "e.md",
                "- [Cache](cache.md)\n- [Retries](retries.md)\n- [Eviction](evict.md)\n- [Logs](logs.md)",
                Some(0),
            ),
            source("f.md", "The cache holds entries by key.", Some(0)),
        ];
        // Each placed in the search of the part that found it, in the order found.
        let mut sources = sources;
        for i in 0..sources.len() {
            if let Some(p) = sources[i].found_for {
                let place = sources[..i]
                    .iter()
                    .filter(|s| s.found_for == Some(p))
                    .count();
                sources[i].search_ranks = vec![(p, place)];
            }
        }
        let question = "how does the cache evict entries, and how are retries spaced";
        let part = &searched_parts(question, &sources)[0];
        let by_share = about(part, &sources);
        assert_eq!(by_share[..2], [0, 1]);
        assert!(!by_share.contains(&2));
        // The search's best, the share's best (the same passage: once), the search's second,
        // the share's second, and on in turn.
        let asked = asked_over(Some(0), part, &sources);
        assert_eq!(asked[..3], [0, 2, 1]);
        assert!(!asked.contains(&4));
        assert!(!asked.contains(&3));
        assert!(asked.contains(&5));
        // Where the search placed them: "Retries back off exponentially" was the second
        // part's best, though the first part's search found it first; the second part asks
        // over it first.
        let mut ranked = sources.clone();
        ranked[5].search_ranks = vec![(0, 0), (1, 0)];
        ranked[0].search_ranks = vec![(0, 1)];
        ranked[2].search_ranks = vec![(0, 2)];
        ranked[4].search_ranks = vec![(0, 3)];
        ranked[3].search_ranks = vec![(1, 1)];
        ranked[1].search_ranks = vec![(1, 2)];
        let second = &searched_parts(question, &ranked)[1];
        let asked = asked_over(Some(1), second, &ranked);
        assert_eq!(asked[0], 5, "{asked:?}");
        assert_eq!(searched_for(Some(1), &ranked), vec![5, 3, 1]);
        assert_eq!(searched_for(Some(0), &ranked), vec![5, 0, 2]);
    }

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
    fn words_most_passages_hold_weigh_little_and_one_shared_word_is_no_answer() {
        // HTTPX's docs (the closing measurement's httpx 4, shortened): "send", "request" and
        // "data" are in most passages, "JSON" in one.
        let passages = [
            "For more complicated data structures you'll often want to use JSON encoding instead.",
            "If you really do need to send request data using these http methods you should use the generic `.request` function instead.",
            "You can send form encoded data in the request body.",
            "Send binary request data with the `content` parameter.",
            "Upload files in a multipart request with the `files` parameter.",
        ];
        let question = "how do I send JSON data in a request, and how do I upload a file";
        let plain = parts_of(question);
        let weighed = parts_among(question, passages);
        assert_eq!(weighed[0].stems, vec!["send", "json", "data", "request"]);
        let weight =
            |s: &str| weighed[0].weights[weighed[0].stems.iter().position(|x| x == s).unwrap()];
        assert!(weight("json") > 2.0 * weight("send"), "{:?}", weighed[0]);
        // Three of the four words, and no JSON: enough by count, not by weight.
        let generic = passages[1];
        assert!(enough_for(generic, &plain[0]));
        assert!(!enough_for(generic, &weighed[0]));
        assert!(enough_for(
            "To send JSON data, pass it as the `json` parameter.",
            &weighed[0]
        ));
        // A word every passage holds weighs nothing, and so does one none holds; one shared
        // word is under the floor either way.
        let question = "how do I send requests through a proxy, and which environment variables does HTTPX read for proxies";
        let passages = [
            "HTTPX supports setting up HTTP proxies via the `proxy` parameter.",
            "The HTTPX library can be configured via environment variables.",
            "HTTPX sends requests through the proxy given by the HTTPS_PROXY environment variable.",
            "HTTPX has to establish a new connection for every single request.",
        ];
        let weighed = parts_among(question, passages);
        assert_eq!(
            weighed[1].stems,
            vec!["environment", "variabl", "httpx", "read"]
        );
        assert_eq!(&weighed[1].weights[2..], &[0.0, 0.0]);
        let proxies = passages[0];
        assert!(answered_by(proxies, &weighed).is_empty());
        assert!(answered_by(proxies, &parts_of(question)).is_empty());
        assert_eq!(answered_by(passages[1], &weighed), vec![1]);
    }

    fn passage(title: &str, snippet: &str) -> SourceRecord {
        SourceRecord {
            key: format!("file:{title}"),
            title: title.into(),
            snippet: snippet.into(),
            venue_type: "workspace".into(),
            ..SourceRecord::default()
        }
    }

    #[test]
    fn each_part_has_its_best_passages_at_the_top_of_the_prompt() {
        // The first part's words are in many passages, found first; the passage that answers
        // the second part comes after the first part's eleventh, and a table of contents that
        // names both comes before them all.
        let question =
            "how do I search only files of one type, and which flags also search hidden files";
        let mut sources = vec![passage(
            "FAQ.md:1-5",
            "* [How do I search only files of one type?](#type)\n* [Which flags search hidden files?](#hidden)\n* [Why is it fast?](#fast)",
        )];
        for i in 0..12 {
            sources.push(passage(
                &format!("GUIDE.md:{i}0-{i}9 — File types"),
                &format!(
                    "Use `-t` to search only files of one type; type {i} covers its own extensions."
                ),
            ));
        }
        sources.push(passage(
            "GUIDE.md:200-210 — Hidden files",
            "The `--hidden` flag searches hidden files and directories, and `-uu` also searches ignored ones.",
        ));
        let order: Vec<String> = prompt_order(question, sources)
            .into_iter()
            .map(|s| s.title)
            .collect();
        assert_eq!(order[0], "GUIDE.md:00-09 — File types", "{order:?}");
        assert_eq!(order[1], "GUIDE.md:200-210 — Hidden files", "{order:?}");
        assert_eq!(order.last().unwrap(), "FAQ.md:1-5", "{order:?}");
        assert_eq!(order.len(), 14);
    }

    #[test]
    fn a_part_takes_the_best_of_its_own_search_in_turn() {
        // The story around the first part ("keep", "old", "around", "though") is in three
        // passages and rare among those found, so by the share of its weighed words they come
        // before the passage that answers it, which the part's own search found first.
        let question = "I keep an old lockfile around though, so how do I upgrade only one package, and where does the download cache live";
        assert_eq!(parts_of(question).len(), 2, "{:?}", parts_of(question));
        let found = |title: &str, text: &str, part: Option<usize>| SourceRecord {
            found_for: part,
            ..passage(title, text)
        };
        let sources = || {
            vec![
                found(
                    "lock.md:1-9 — Upgrading one package",
                    "Pass `--upgrade-package NAME` to upgrade only that package; every other version stays.",
                    Some(0),
                ),
                found(
                    "cache.md:1-9 — Cache directory",
                    "The download cache lives in the user's cache directory; `--cache-dir` moves it.",
                    Some(1),
                ),
                found(
                    "news.md:1-9 — Old lockfiles",
                    "An old lockfile is kept around, though a newer one is written on upgrade.",
                    None,
                ),
                found(
                    "news.md:10-19 — Old versions",
                    "Old versions in the lockfile are kept around though nothing uses them; keep them or not.",
                    Some(0),
                ),
                found(
                    "news.md:20-29 — Keeping files",
                    "Lockfile copies you keep around stay old, though the tool never reads them.",
                    Some(0),
                ),
                found(
                    "pkg.md:1-9 — Packages",
                    "A package is upgraded when its version in the package index is newer.",
                    Some(0),
                ),
            ]
        };
        let order: Vec<String> = prompt_order(question, sources())
            .into_iter()
            .map(|s| s.title)
            .collect();
        let at = |order: &[String]| order.iter().position(|t| t.starts_with("lock.md")).unwrap();
        assert!(at(&order) <= 2, "{order:?}");
        // Without what each part's search found, the share alone puts the story first.
        let unfound: Vec<SourceRecord> = sources()
            .into_iter()
            .map(|s| SourceRecord {
                found_for: None,
                ..s
            })
            .collect();
        let share_only: Vec<String> = prompt_order(question, unfound)
            .into_iter()
            .map(|s| s.title)
            .collect();
        assert!(at(&share_only) > 2, "{share_only:?}");
    }

    #[test]
    fn the_names_a_part_says_are_told_from_its_story() {
        let names = name_stems(
            "Going the other way, how do I mark the fixes of one rule, UP034, as risky so \
             `--fix` skips them? Also, Pylance/Pyright flags my `Client(token=...)` call. \
             Is attr.ib going away? I'm on Black's side.",
        );
        let bare = |s: &str| names.contains(&(s.to_owned(), false));
        let code = |s: &str| names.contains(&(s.to_owned(), true));
        assert!(bare("up034") && bare("pylanc") && bare("pyright") && bare("attr"));
        assert!(bare("ib") && bare("black"));
        assert!(code("fix") && code("client") && code("token"));
        // Words that begin a sentence, and the user's own, are no names.
        for word in ["go", "also", "mark", "rule", "risky", "is", "on"] {
            assert!(!names.iter().any(|(s, _)| s == word), "{word}");
        }
    }

    #[test]
    fn a_name_the_docs_use_finds_its_section_among_the_users_own_words() {
        // Ruff's docs, shortened: the user's story ("going", "mark", "particular") is in
        // passages about other things, the rule's code in one.
        let sources = vec![
            passage(
                "linter.md — Fix safety",
                "Set rules' fixes as unsafe with `lint.extend-unsafe-fixes`:\n\n\
                 ```toml\n[tool.ruff.lint]\nextend-unsafe-fixes = [\"UP034\"]\n```",
            ),
            passage(
                "linter.md — Fixes",
                "Ruff can fix violations automatically with --fix.",
            ),
            passage(
                "formatter.md — Style",
                "The formatter applies a consistent style.",
            ),
            passage(
                "configuration.md — Rules",
                "Select rules by their code prefix.",
            ),
            passage("faq.md — Black", "Ruff's formatter is a drop-in for Black."),
            passage(
                "faq.md — Going",
                "Going from Flake8? Mark the particular plugins.",
            ),
            passage(
                "tutorial.md — Going on",
                "Going further, mark particular files to skip.",
            ),
            passage(
                "editors.md — On save",
                "Other fixes are applied automatically on save.",
            ),
        ];
        let question = "How do I select every rule? Going the other way, how do I mark the \
                        fixes of one particular rule, UP034, as risky so they are not applied \
                        automatically?";
        let parts = searched_parts(question, &sources);
        // Weighed by rarity alone, the passages of the story's words held as much of it.
        assert_eq!(ranked_for(&parts[1], &sources), vec![0]);

        // A name few passages hold makes a passage about the part (asked again with it,
        // pointed to) though it holds little else of the part; one every passage holds
        // does not.
        let sources = vec![
            passage(
                "types.md — Pyright",
                "Pyright does not support private attribute auto-aliasing; spell the alias out.",
            ),
            passage(
                "init.md — Private attributes",
                "attrs strips the underscore: `_x` is `x`.",
            ),
            passage(
                "api.md — field",
                "field(alias=...) names the argument of __init__.",
            ),
            passage(
                "overview.md — Why",
                "Classes without boilerplate; attrs writes __init__.",
            ),
            passage(
                "errors.md — Flags",
                "A validator flags a call as an error when run.",
            ),
            passage(
                "faq.md — Even",
                "Even though it runs, understand the flags first.",
            ),
            passage(
                "how.md — Run",
                "Run the call and understand the error it flags.",
            ),
            passage("http.md — Client", "A client sends a token with each call."),
        ];
        let question = "why is the argument named x, and why does Pylance/Pyright flag my \
                        `Client(token=...)` call as an error even though it runs fine";
        let parts = searched_parts(question, &sources);
        // "Pyright" in one passage: weighed half with the user's code, it is a sixth of the
        // part, and the story's words ("even", "though", "call") rank other passages.
        assert!(!ranked_for(&parts[1], &sources).contains(&0));
        assert_eq!(about(&parts[1], &sources).last(), Some(&0));
        let everywhere: Vec<SourceRecord> = (0..5)
            .map(|i| passage(&format!("p{i}.md"), "Pyright reads the stubs."))
            .collect();
        let parts = searched_parts(question, &everywhere);
        assert!(about(&parts[1], &everywhere).is_empty());
    }

    #[test]
    fn a_part_that_points_back_is_asked_with_the_part_before_it() {
        for text in [
            "where should those comments go",
            "and can I change that",
            "how do I get it back",
            "What do I have to change",
        ] {
            assert!(points_back(text), "{text}");
        }
        for text in [
            "how do I make the build fail when uv.lock is out of date",
            "where does it keep the cache of downloaded wheels between runs",
            "which pager does bat use by default",
        ] {
            assert!(!points_back(text), "{text}");
        }
        let question = "I wrapped entries in `# fmt: off` and Ruff reformats them anyway, why, \
                        and where should those comments go";
        let sources = vec![
            passage(
                "formatter.md — Format suppression",
                "`# fmt: off` comments work at statement level: inside an expression Ruff \
                 reformats the entries anyway; wrap the whole statement.",
            ),
            passage(
                "setup.md — Neovim",
                "Comments in your init.lua go above the setup call.",
            ),
            passage("faq.md — Black", "Ruff's formatter is a drop-in for Black."),
        ];
        let parts = parts_for(question, &sources);
        assert_eq!(parts.len(), 2, "{parts:?}");
        let searched = searched_parts(question, &sources);
        let (asked, joined) = asked_for(&parts, &searched, 1).unwrap();
        assert_eq!(
            asked,
            format!("{} \u{2014} where should those comments go", parts[0].text)
        );
        assert_eq!(about(&joined, &sources).first(), Some(&0));
        let (asked, _) = asked_for(&parts, &searched, 0).unwrap();
        assert_eq!(asked, parts[0].text);
    }

    #[test]
    fn find_is_no_word_to_search_a_part_by() {
        // bat's README and doc/assets.md (sharkdp/bat at 2ba8db9), shortened, in the order the
        // index found them for the question as a whole: "find" is as rare among them as
        // "configuration", and ranked the syntaxes sections as high as the configuration
        // file's for "how do I find where the configuration file is".
        let question = "how do I find where the configuration file is, and what is the format of the configuration file";
        let sources = vec![
            passage(
                "README.md:550-582 — Customization › Adding new syntaxes / language definitions",
                "Should you find that a particular syntax is not available within `bat`, you can follow these instructions to easily add new syntaxes to your current `bat` installation. Once you found a syntax description file (`*.sublime-syntax`), put it in the syntaxes folder.",
            ),
            passage(
                "doc/assets.md:1-14 — Adding new builtin languages for syntax highlighting",
                "Should you find that a particular syntax is not available within `bat` and think it should be included in `bat` by default, you can follow the instructions outlined below. Find a Sublime Text syntax for the given language.",
            ),
            passage(
                "README.md:748-770 — Configuration file",
                "`bat` can also be customized with a configuration file. The location of the file is dependent on your operating system. To get the default path for your system, call `bat --config-file`.",
            ),
            passage(
                "README.md:772-789 — Configuration file › Format",
                "The configuration file is a simple list of command line arguments. Use `bat --help` to see a full list of possible options and values. In addition, you can add comments by prepending a line with the `#` character.",
            ),
        ];
        let order: Vec<String> = prompt_order(question, sources)
            .into_iter()
            .map(|s| s.title)
            .collect();
        assert_eq!(
            order[0], "README.md:748-770 — Configuration file",
            "{order:?}"
        );
        assert_eq!(
            order[1], "README.md:772-789 — Configuration file › Format",
            "{order:?}"
        );
    }

    #[test]
    fn one_part_takes_every_sentence() {
        let parts = parts_of("what does the gateway redact from its logs?");
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].text, "what does the gateway redact from its logs");
        assert_eq!(answered_by("Anything at all.", &parts), vec![0]);
    }
}
