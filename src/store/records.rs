//! The plain data a research run produces and the library keeps: one research record, its
//! sources with their credibility factors, its claims and the outcome of each provider.
//!
//! These are data only (serde structs, no behaviour beyond small accessors); `research/` fills
//! them and `store/` writes them, so neither depends on the other's internals.

use serde::{Deserialize, Serialize};

/// One source, merged across every provider that returned it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SourceRecord {
    /// Stable within a run: `doi:…`, `arxiv:…`, `url:…`, `title:…` or `file:…`.
    pub key: String,
    /// The provider that returned it first.
    pub provider: String,
    /// Every provider that returned it (merged duplicates).
    pub providers: Vec<String>,
    /// The provider's own id (OpenAlex `W…`, arXiv abs URL, S2 paper id, feed guid, path).
    pub provider_id: String,
    /// Lower-cased, without `https://doi.org/`.
    pub doi: Option<String>,
    /// Without the version suffix (`2301.01234`, `hep-th/9901001`).
    pub arxiv_id: Option<String>,
    /// Canonical URL: no `www.`, no fragment, no `utm_*` parameters.
    pub url: Option<String>,
    pub title: String,
    pub authors: Vec<String>,
    /// `YYYY-MM-DD`, `YYYY-MM` or `YYYY`.
    pub date: Option<String>,
    pub venue: Option<String>,
    /// `journal`, `conference`, `preprint`, `repository`, `book`, `web`, `news`, `workspace`,
    /// `library` or `unknown`.
    pub venue_type: String,
    pub citations: Option<u64>,
    pub retracted: bool,
    pub snippet: String,
    /// RFC 3339, UTC.
    pub retrieved_at: String,
    /// The citation number in the synthesis (`[n]`), when the synthesis cites it.
    pub n: Option<u32>,
    pub credibility: Credibility,
    /// For a workspace passage: the part of the question (index into `question_parts`) whose
    /// own search found it, `None` when found for the whole question. Where it stands among
    /// that part's finds is its place in the order found. Not stored: it orders one run's prompt.
    #[serde(skip)]
    pub found_for: Option<usize>,
    /// For a workspace passage: its place (0 the best) in the own search of each part of the
    /// question (index into `question_parts`) whose search ranked it, whichever part found it
    /// first. Not stored: it orders one run's prompts.
    #[serde(skip)]
    pub search_ranks: Vec<(usize, usize)>,
    /// For a workspace passage: the code each of its include markers names, as a fenced block
    /// of the file's lines (`research::includes::shown`), by the marker's line. Quoted in the
    /// marker's place; the passage's text, which is ranked and shown to the model, keeps the
    /// marker. Not stored: the report holds what was quoted.
    #[serde(skip)]
    pub included: Vec<(String, String)>,
}

/// The stored factors of a credibility score and the score they produce.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Credibility {
    /// The registrable domain (eTLD+1) the tier was matched on, if the source has a URL.
    pub domain: Option<String>,
    /// The tier's name (`peer-reviewed journal`, `government`, `preprint`, …).
    pub tier: String,
    pub base: f64,
    pub citation_factor: f64,
    /// Independent registrable domains supporting the claims this source supports (itself
    /// included), 0 before corroboration.
    pub independent_domains: u32,
    pub corroboration_factor: f64,
    /// 1.0 unless the question is time-sensitive.
    pub recency_factor: f64,
    /// An upper bound applied last (`preprint`, `predatory venue`), if any.
    pub cap: Option<f64>,
    pub cap_reason: Option<String>,
    pub score: f64,
    /// One line: `journal tier 0.85 × 1.1 (312 citations) × … = 0.95`.
    pub breakdown: String,
}

/// A key claim of the synthesis and the sources supporting it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Claim {
    /// 1-based.
    pub n: u32,
    pub text: String,
    /// Keys of the supporting sources.
    pub sources: Vec<String>,
    /// How many distinct registrable domains (or providers, for sources without a URL) those are.
    pub independent_domains: u32,
    /// The model wrote this sentence without a citation; it was attributed to the passage it
    /// overlaps most (the synthesis marks it "(attributed)").
    #[serde(default)]
    pub attributed: bool,
    /// One check per cited source: does that source support the claim?
    #[serde(default)]
    pub checks: Vec<CitationCheck>,
}

/// Whether one cited source supports one claim.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CitationCheck {
    pub source_key: String,
    /// The share of the claim's content words (stemmed) found in the source's text, 0–1.
    pub overlap: f64,
    /// `supported`, `partly`, `unsupported` or `contradicted`: the model's verdict when there
    /// is one, else the overlap's.
    pub verdict: String,
    /// With `--verify`: what the second model pass answered (`supports`, `partly`,
    /// `contradicts`), or `None` when no model checked.
    pub model_verdict: Option<String>,
}

/// The share of citations whose source supports the sentence citing it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SupportSummary {
    pub citations: u32,
    pub supported: u32,
    pub partly: u32,
    pub unsupported: u32,
    pub contradicted: u32,
    /// `supported / citations`, `None` without citations.
    pub share: Option<f64>,
    /// `overlap` (content words) or `model` (a second model pass checked every citation).
    pub method: String,
}

impl SupportSummary {
    /// Counts the checks of `claims`.
    pub fn of(claims: &[Claim]) -> SupportSummary {
        let mut s = SupportSummary {
            method: "overlap".to_owned(),
            ..SupportSummary::default()
        };
        let mut all_model = true;
        for check in claims.iter().flat_map(|c| &c.checks) {
            s.citations += 1;
            match check.verdict.as_str() {
                "supported" => s.supported += 1,
                "partly" => s.partly += 1,
                "contradicted" => s.contradicted += 1,
                _ => s.unsupported += 1,
            }
            all_model &= check.model_verdict.is_some();
        }
        if s.citations > 0 {
            s.share = Some(f64::from(s.supported) / f64::from(s.citations));
            if all_model {
                s.method = "model".to_owned();
            }
        }
        s
    }
}

/// What became of the sentences of a model's synthesis (docs/research.md, "Citations by
/// construction"): per report, how many the model cited itself, how many the server attributed
/// to a passage, and how many were dropped.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SentenceCounts {
    /// Kept with a citation the model wrote (its own markers, a marker at the end of the
    /// paragraph, or re-cited to the passage that supports the sentence).
    pub cited: u32,
    /// Of `cited`: re-cited to another passage than the model named.
    pub recited: u32,
    /// Kept without a citation of the model's: the server attributed them to a passage.
    pub attributed: u32,
    /// Dropped: no passage supports them (by overlap, or by the judge's verdict).
    pub dropped: u32,
    /// Of `dropped`: dropped because the judge found every passage they could cite unrelated
    /// or contradicting.
    pub dropped_by_judge: u32,
    /// Citations the judge removed (contradicts / unrelated).
    pub judge_removed: u32,
}

/// Whether one part of the question was answered, and by which sources.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PartAnswer {
    pub part: String,
    pub answered: bool,
    /// The numbers of the sources its sentences cite.
    pub sources: Vec<u32>,
    /// Answered by sentences quoted from the sources (not written by the model).
    pub quoted: bool,
}

/// What one provider did during a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SourceOutcome {
    pub provider: String,
    /// `ok`, `failed`, `timeout`, `cached`, `cancelled` or `disabled`.
    pub status: String,
    /// Records returned.
    pub count: usize,
    pub millis: u64,
    /// Why it failed, or what fallback was used.
    pub message: Option<String>,
}

/// A whole research run as saved in the library.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResearchRecord {
    /// Short and sortable by creation time (see [`crate::store::new_id`]).
    pub id: String,
    pub query: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// `complete`, or `partial` when some provider failed, a budget cut the run short, or the
    /// model's synthesis was replaced by the extractive one.
    pub status: String,
    /// Markdown with `[n]` markers numbered like [`SourceRecord::n`].
    pub synthesis: String,
    /// `model`, or `extractive` when no model answered.
    pub synthesis_kind: String,
    /// `provider/model` that wrote the synthesis.
    pub model: Option<String>,
    pub duration_ms: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Cited sources first, by citation number; then the rest by score.
    pub sources: Vec<SourceRecord>,
    pub claims: Vec<Claim>,
    pub outcomes: Vec<SourceOutcome>,
    /// Removed citation markers, budget cuts, model failures: what a reader should know.
    pub notes: Vec<String>,
    /// The support checks of the claims, counted (derived from `claims`).
    #[serde(default)]
    pub support: SupportSummary,
    /// The support of the model's own citations as it wrote them, before the check re-cited
    /// or dropped sentences (`None` when the model cited nothing or no model answered): the
    /// "before" of `support` (docs/research.md, "Is it right?").
    #[serde(default)]
    pub model_support: Option<SupportSummary>,
    /// What became of the model's sentences (`None` for an extractive synthesis).
    #[serde(default)]
    pub sentences: Option<SentenceCounts>,
    /// The parts of the question, each answered or not (docs/research.md).
    #[serde(default)]
    pub parts: Vec<PartAnswer>,
}

/// One line of `list` and `search`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResearchSummary {
    pub id: String,
    pub query: String,
    pub created_at: String,
}
