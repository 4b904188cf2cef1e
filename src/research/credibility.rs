//! Credibility as a pure function of stored factors, with a one-line breakdown a reader can
//! check: `score = clamp(base × citations × corroboration × recency)`, overrides first (a
//! retraction scores 0; a predatory venue and a preprint are capped).
//!
//! The base comes from the venue type or from a tier the source's registrable domain belongs to
//! (whichever is higher), from lists in `data/credibility.toml` that users extend with their own
//! file. Domains are matched on eTLD+1 label by label, never by substring. This module does no
//! I/O except [`Lists::load`], which reads the user's files.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::research::dedupe::{normalize_title, year_of};
use crate::research::domain::{has_suffix, host_of, is_within, registrable_domain};
use crate::research::plural;
use crate::store::{Credibility, SourceRecord};

/// The built-in lists.
pub const DEFAULT_LISTS: &str = include_str!("../../data/credibility.toml");

/// One tier: a base score for the domains and suffixes it lists.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Tier {
    pub name: String,
    pub base: f64,
    #[serde(default)]
    pub domains: Vec<String>,
    #[serde(default)]
    pub suffixes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
struct ListFile {
    #[serde(default)]
    venue_types: BTreeMap<String, f64>,
    #[serde(default)]
    caps: BTreeMap<String, f64>,
    #[serde(default)]
    predatory: Predatory,
    #[serde(default)]
    tiers: Vec<Tier>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
struct Predatory {
    #[serde(default)]
    domains: Vec<String>,
    #[serde(default)]
    venues: Vec<String>,
}

/// Tiers and lists, built-in ones merged with the user's.
#[derive(Debug, Clone, PartialEq)]
pub struct Lists {
    /// Most specific file first.
    pub tiers: Vec<Tier>,
    pub venue_types: BTreeMap<String, f64>,
    pub preprint_cap: f64,
    pub predatory_cap: f64,
    pub predatory_domains: Vec<String>,
    /// Normalised venue names.
    pub predatory_venues: Vec<String>,
}

impl Default for Lists {
    fn default() -> Lists {
        let mut lists = Lists {
            tiers: Vec::new(),
            venue_types: BTreeMap::new(),
            preprint_cap: 0.6,
            predatory_cap: 0.15,
            predatory_domains: Vec::new(),
            predatory_venues: Vec::new(),
        };
        // The built-in file is tested to parse; a failure here would be a build defect.
        if let Ok(file) = toml::from_str::<ListFile>(DEFAULT_LISTS) {
            lists.add(file);
        }
        lists
    }
}

impl Lists {
    /// The built-in lists plus each existing file in `extra` (later files take precedence).
    /// Problems (unreadable or invalid files) are returned as messages; the file is skipped.
    pub fn load(extra: &[&Path]) -> (Lists, Vec<String>) {
        let mut lists = Lists::default();
        let mut problems = Vec::new();
        for path in extra {
            match std::fs::read_to_string(path) {
                Ok(text) => match lists.add_text(&text) {
                    Ok(()) => {}
                    Err(err) => {
                        problems.push(format!("{}: {err}; the file is ignored", path.display()))
                    }
                },
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => problems.push(format!("{}: cannot read: {err}", path.display())),
            }
        }
        (lists, problems)
    }

    /// Adds a file's tiers (before the existing ones) and lists.
    pub fn add_text(&mut self, text: &str) -> Result<(), String> {
        let file: ListFile = toml::from_str(text).map_err(|e| {
            format!(
                "expected a credibility file (tiers, venue_types, caps, predatory), found invalid TOML: {}",
                e.to_string().trim_end().replace('\n', " ")
            )
        })?;
        for tier in &file.tiers {
            if !(0.0..=1.0).contains(&tier.base) {
                return Err(format!(
                    "tier {:?}: expected a base from 0 to 1, found {}",
                    tier.name, tier.base
                ));
            }
        }
        self.add(file);
        Ok(())
    }

    fn add(&mut self, file: ListFile) {
        let mut tiers = file.tiers;
        tiers.append(&mut self.tiers);
        self.tiers = tiers;
        for (k, v) in file.venue_types {
            self.venue_types.insert(k, v.clamp(0.0, 1.0));
        }
        if let Some(c) = file.caps.get("preprint") {
            self.preprint_cap = c.clamp(0.0, 1.0);
        }
        if let Some(c) = file.caps.get("predatory") {
            self.predatory_cap = c.clamp(0.0, 1.0);
        }
        self.predatory_domains.extend(
            file.predatory
                .domains
                .iter()
                .map(|d| d.trim().to_ascii_lowercase()),
        );
        self.predatory_venues
            .extend(file.predatory.venues.iter().map(|v| normalize_title(v)));
    }

    /// The tier of `host`: an exact registrable-domain listing first, then a suffix rule.
    pub fn tier_of(&self, host: &str) -> Option<&Tier> {
        registrable_domain(host)?;
        self.tiers
            .iter()
            .find(|t| t.domains.iter().any(|d| is_within(host, d)))
            .or_else(|| {
                self.tiers
                    .iter()
                    .find(|t| t.suffixes.iter().any(|s| has_suffix(host, s)))
            })
    }

    fn is_predatory(&self, domain: Option<&str>, venue: Option<&str>) -> bool {
        let by_domain =
            domain.is_some_and(|d| self.predatory_domains.iter().any(|p| is_within(d, p)));
        let by_venue = venue.is_some_and(|v| {
            let v = normalize_title(v);
            !v.is_empty() && self.predatory_venues.contains(&v)
        });
        by_domain || by_venue
    }
}

/// What the score depends on besides the source itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Context {
    /// Only then does recency count.
    pub time_sensitive: bool,
    /// The current year, for ages.
    pub year: i32,
}

/// Scores `source` from its stored facts and `independent_domains` (0: not yet corroborated).
pub fn score(
    source: &SourceRecord,
    independent_domains: u32,
    lists: &Lists,
    context: Context,
) -> Credibility {
    let host = source.url.as_deref().and_then(host_of);
    let domain = host.as_deref().and_then(registrable_domain);
    let venue_base = lists
        .venue_types
        .get(&source.venue_type)
        .or_else(|| lists.venue_types.get("unknown"))
        .copied()
        .unwrap_or(0.35);
    let tier = host.as_deref().and_then(|h| lists.tier_of(h));
    let (tier_name, base) = match tier {
        Some(t) if t.base > venue_base => (t.name.clone(), t.base),
        _ => (venue_label(&source.venue_type), venue_base),
    };
    let mut c = Credibility {
        domain: domain.clone(),
        tier: tier_name.clone(),
        base,
        citation_factor: 1.0,
        independent_domains,
        corroboration_factor: 1.0,
        recency_factor: 1.0,
        cap: None,
        cap_reason: None,
        score: 0.0,
        breakdown: String::new(),
    };
    if source.retracted {
        c.breakdown = format!("retracted → 0 ({tier_name} {base:.2} before the retraction)");
        return c;
    }
    let mut parts = vec![format!("{tier_name} {base:.2}")];
    if let Some(n) = source.citations {
        // log scale: 10 citations ×1.08, 100 ×1.16, 1000 ×1.24, capped at ×1.3.
        c.citation_factor = (1.0 + 0.08 * ((n as f64) + 1.0).log10()).min(1.3);
        parts.push(format!(
            "{:.2} ({n} citation{})",
            c.citation_factor,
            plural(n as usize)
        ));
    }
    if independent_domains >= 2 {
        c.corroboration_factor = 1.0 + 0.05 * f64::from(independent_domains.min(5) - 1);
        parts.push(format!(
            "{:.2} ({independent_domains} independent sources)",
            c.corroboration_factor
        ));
    }
    if context.time_sensitive {
        let (factor, why) = match year_of(source.date.as_deref()) {
            Some(y) => {
                let age = (context.year - y).max(0);
                let f = match age {
                    0..=1 => 1.1,
                    2..=3 => 1.0,
                    4..=10 => 0.9,
                    _ => 0.8,
                };
                (f, format!("{y}"))
            }
            None => (0.9, "undated".to_owned()),
        };
        c.recency_factor = factor;
        parts.push(format!("{factor:.2} (recency: {why})"));
    }
    let raw = base * c.citation_factor * c.corroboration_factor * c.recency_factor;
    let mut value = raw.clamp(0.0, 1.0);
    let mut line = format!("{} = {:.2}", parts.join(" × "), value);
    if raw > 1.0 {
        line.push_str(" (clamped)");
    }
    let predatory = lists.is_predatory(domain.as_deref(), source.venue.as_deref());
    let preprint = source.venue_type == "preprint" || tier_name == "preprint server";
    let cap = if predatory {
        Some((lists.predatory_cap, "predatory venue"))
    } else if preprint {
        Some((lists.preprint_cap, "preprint"))
    } else {
        None
    };
    if let Some((limit, reason)) = cap {
        c.cap = Some(limit);
        c.cap_reason = Some(reason.to_owned());
        if value > limit {
            value = limit;
            line.push_str(&format!(", {reason} cap {limit:.2} → {value:.2}"));
        } else {
            line.push_str(&format!(" ({reason}, cap {limit:.2})"));
        }
    }
    c.score = (value * 1000.0).round() / 1000.0;
    c.breakdown = line;
    c
}

fn venue_label(kind: &str) -> String {
    match kind {
        "journal" => "peer-reviewed journal",
        "conference" => "peer-reviewed conference",
        "book" => "book",
        "preprint" => "preprint",
        "repository" => "repository",
        "news" => "news",
        "web" => "web page",
        "workspace" => "workspace file",
        "library" => "earlier research",
        _ => "unknown venue",
    }
    .to_owned()
}

/// Whether a question asks about the present (then recency counts).
pub fn is_time_sensitive(question: &str, current_year: i32) -> bool {
    let q = question.to_lowercase();
    const WORDS: [&str; 14] = [
        "latest",
        "current",
        "currently",
        "recent",
        "recently",
        "today",
        "now",
        "this year",
        "new",
        "newest",
        "upcoming",
        "state of the art",
        "as of",
        "trend",
    ];
    let words: Vec<&str> = q.split(|c: char| !c.is_alphanumeric()).collect();
    WORDS.iter().any(|w| {
        if w.contains(' ') {
            q.contains(w)
        } else {
            words.contains(w)
        }
    }) || words
        .iter()
        .filter_map(|w| w.parse::<i32>().ok())
        .any(|y| (current_year - 1..=current_year + 1).contains(&y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(f: impl FnOnce(&mut SourceRecord)) -> SourceRecord {
        let mut s = SourceRecord {
            venue_type: "web".to_owned(),
            ..SourceRecord::default()
        };
        f(&mut s);
        s
    }

    const NOW: Context = Context {
        time_sensitive: false,
        year: 2026,
    };

    fn check(s: &SourceRecord, domains: u32, context: Context, score: f64, breakdown: &str) {
        let c = super::score(s, domains, &Lists::default(), context);
        assert_eq!(c.breakdown, breakdown);
        assert!((c.score - score).abs() < 1e-9, "{} != {score}", c.score);
    }

    #[test]
    fn default_lists_parse() {
        let file: ListFile = toml::from_str(DEFAULT_LISTS).unwrap();
        assert!(file.tiers.len() >= 8);
        assert!(Lists::default().tiers.len() >= 8);
    }

    #[test]
    fn golden_scores() {
        check(
            &source(|s| s.url = Some("https://www.un.org/en/climatechange".into())),
            0,
            NOW,
            0.85,
            "intergovernmental or government 0.85 = 0.85",
        );
        // `sun.org` is not `un.org`: an unlisted .org web page.
        check(
            &source(|s| s.url = Some("https://sun.org/climate".into())),
            0,
            NOW,
            0.40,
            "web page 0.40 = 0.40",
        );
        check(
            &source(|s| {
                s.url = Some("https://doi.org/10.1/x".into());
                s.venue_type = "journal".into();
                s.citations = Some(312);
            }),
            3,
            NOW,
            0.99,
            "peer-reviewed journal 0.75 × 1.20 (312 citations) × 1.10 (3 independent sources) = 0.99",
        );
        check(
            &source(|s| {
                s.url = Some("https://arxiv.org/abs/2301.00001".into());
                s.venue_type = "preprint".into();
                s.citations = Some(5000);
            }),
            5,
            NOW,
            0.6,
            "preprint 0.55 × 1.30 (5000 citations) × 1.20 (5 independent sources) = 0.86, preprint cap 0.60 → 0.60",
        );
        check(
            &source(|s| {
                s.url = Some("https://www.nature.com/articles/x".into());
                s.venue_type = "journal".into();
                s.retracted = true;
                s.citations = Some(900);
            }),
            4,
            NOW,
            0.0,
            "retracted → 0 (peer-reviewed publisher 0.85 before the retraction)",
        );
        check(
            &source(|s| {
                s.url = Some("https://www.omicsonline.org/open-access/x".into());
                s.venue_type = "journal".into();
            }),
            0,
            NOW,
            0.15,
            "peer-reviewed journal 0.75 = 0.75, predatory venue cap 0.15 → 0.15",
        );
        check(
            &source(|s| {
                s.url = Some("https://news.bbc.co.uk/x".into());
                s.venue_type = "news".into();
                s.date = Some("2026-01-02".into());
            }),
            0,
            Context {
                time_sensitive: true,
                year: 2026,
            },
            0.715,
            "news of record 0.65 × 1.10 (recency: 2026) = 0.72",
        );
        check(
            &source(|s| s.url = Some("https://physics.stanford.edu/x".into())),
            0,
            NOW,
            0.75,
            "academic institution 0.75 = 0.75",
        );
    }

    #[test]
    fn user_tiers_take_precedence_and_bad_files_are_reported() {
        let mut lists = Lists::default();
        lists
            .add_text("[[tiers]]\nname = \"my team\"\nbase = 0.95\ndomains = [\"example.org\"]\n")
            .unwrap();
        assert_eq!(lists.tier_of("docs.example.org").unwrap().name, "my team");
        assert!(lists.tier_of("notexample.org").is_none());
        let err = lists.add_text("[[tiers]]\nname = 1").unwrap_err();
        assert!(err.starts_with("expected a credibility file"), "{err}");
        let err = lists
            .add_text("[[tiers]]\nname = \"x\"\nbase = 3.0\n")
            .unwrap_err();
        assert!(err.contains("expected a base from 0 to 1"), "{err}");
    }

    #[test]
    fn time_sensitivity() {
        assert!(is_time_sensitive("What is the latest Rust release?", 2026));
        assert!(is_time_sensitive("GPU prices in 2026", 2026));
        assert!(!is_time_sensitive("How does tidal locking work?", 2026));
        assert!(!is_time_sensitive("knowledge of the 1990 census", 2026));
    }
}
