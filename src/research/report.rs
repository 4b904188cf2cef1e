//! The Markdown report of a research record: the synthesis, the claims with their support (each
//! citation's check), the sources with their scores and breakdowns, what each provider did,
//! notes, and a footer with the share of supported citations. It is what the
//! editor opens and what the terminal points to. Pure: [`write`] is the only I/O.

use std::fmt::Write as _;
use std::path::Path;

use crate::research::plural;
use crate::store::ResearchRecord;

/// The report's text.
pub fn render(r: &ResearchRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", one_line(&r.query));
    let how = match (&r.synthesis_kind[..], &r.model) {
        ("model", Some(m)) => format!("synthesis by {m}"),
        ("extractive", Some(m)) => format!("extractive synthesis ({m})"),
        ("extractive", None) => "extractive synthesis (no model)".to_owned(),
        (kind, _) => kind.to_owned(),
    };
    let _ = writeln!(
        out,
        "*Research `{}` · {} · {} · {:.1} s · {} source{} · {}*\n",
        r.id,
        r.created_at,
        how,
        r.duration_ms as f64 / 1000.0,
        r.sources.len(),
        plural(r.sources.len()),
        r.status
    );
    let _ = writeln!(out, "## Synthesis\n\n{}\n", r.synthesis.trim());
    if r.parts.len() > 1 || r.parts.iter().any(|p| !p.answered) {
        // "Addressed", not "answered": a sentence was kept for the part, which says nothing of
        // whether it answers it. Read by hand, 22 of the 35 parts the reports counted were
        // answered right over Poetry's and Starlette's docs; over direnv's and Hatch's the
        // reports counted 49 of their 51 parts addressed, and 22 of the 48 located parts were
        // answered right, every cited sentence its source's own (docs/research.md). So the
        // citation checks are not offered as saying that it answers.
        let _ = writeln!(
            out,
            "## Parts of the question\n\nA part is addressed when a sentence of the sources was \
             kept for it. The citation checks say the sources hold the sentence, not that it \
             answers the part: read it against the part.\n"
        );
        for (i, p) in r.parts.iter().enumerate() {
            let how = if !p.answered {
                "not answered".to_owned()
            } else {
                let refs: Vec<String> = p.sources.iter().map(|n| format!("[{n}]")).collect();
                format!(
                    "addressed{} by {}",
                    if p.quoted { " (quoted)" } else { "" },
                    refs.join(", ")
                )
            };
            let _ = writeln!(out, "{}. {} — {how}", i + 1, one_line(&p.part));
        }
        out.push('\n');
    }
    if !r.claims.is_empty() {
        let _ = writeln!(out, "## Claims\n");
        for c in &r.claims {
            let refs: Vec<String> = c
                .sources
                .iter()
                .filter_map(|k| r.sources.iter().find(|s| &s.key == k))
                .map(|s| match s.n {
                    Some(n) => format!("[{n}]"),
                    None => format!("`{}`", s.key),
                })
                .collect();
            let checks: Vec<String> = c
                .checks
                .iter()
                .map(|k| {
                    let n = r
                        .sources
                        .iter()
                        .find(|s| s.key == k.source_key)
                        .and_then(|s| s.n)
                        .map_or_else(|| format!("`{}`", k.source_key), |n| format!("[{n}]"));
                    match &k.model_verdict {
                        Some(m) => format!(
                            "{n} {} ({m}; {:.0}% word overlap)",
                            k.verdict,
                            k.overlap * 100.0
                        ),
                        None => {
                            format!("{n} {} ({:.0}% word overlap)", k.verdict, k.overlap * 100.0)
                        }
                    }
                })
                .collect();
            let _ = writeln!(
                out,
                "{}. {}{} — cites {} ({} independent source{}){}",
                c.n,
                one_line(&c.text),
                if c.attributed { " *(attributed)*" } else { "" },
                refs.join(", "),
                c.independent_domains,
                plural(c.independent_domains as usize),
                if checks.is_empty() {
                    String::new()
                } else {
                    format!("; {}", checks.join(", "))
                }
            );
        }
        out.push('\n');
    }
    let _ = writeln!(out, "## Sources\n");
    if r.sources.is_empty() {
        let _ = writeln!(out, "No source was found.\n");
    } else {
        let _ = writeln!(out, "| # | Source | Found by | Score | Why |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for s in &r.sources {
            let number =
                s.n.map(|n| format!("[{n}]"))
                    .unwrap_or_else(|| "–".to_owned());
            let title = cell(&s.title);
            let link = s.url.clone().or_else(|| {
                // Workspace files link to the file itself, so the editor opens them.
                (s.venue_type == "workspace" && s.provider_id.starts_with('/'))
                    .then(|| format!("file://{}", s.provider_id))
            });
            let mut source = match link {
                Some(url) => format!("[{title}]({})", url.replace(' ', "%20").replace(')', "%29")),
                None => title,
            };
            let mut meta = Vec::new();
            if let Some(v) = &s.venue {
                meta.push(cell(v));
            }
            if let Some(d) = &s.date {
                meta.push(d.clone());
            }
            if let Some(doi) = &s.doi {
                meta.push(format!("doi:{}", cell(doi)));
            }
            if s.retracted {
                meta.push("**RETRACTED**".to_owned());
            }
            if !meta.is_empty() {
                source.push_str(&format!(" — {}", meta.join(", ")));
            }
            let _ = writeln!(
                out,
                "| {number} | {source} | {} | {:.2} | {} |",
                s.providers.join(", "),
                s.credibility.score,
                cell(&s.credibility.breakdown)
            );
        }
        out.push('\n');
    }
    if !r.outcomes.is_empty() {
        let _ = writeln!(out, "## Providers\n");
        for o in &r.outcomes {
            let _ = write!(
                out,
                "- **{}**: {}, {} result{}, {} ms",
                o.provider,
                o.status,
                o.count,
                plural(o.count),
                o.millis
            );
            if let Some(m) = &o.message {
                let _ = write!(out, " — {}", one_line(m));
            }
            out.push('\n');
        }
        out.push('\n');
    }
    if !r.notes.is_empty() {
        let _ = writeln!(out, "## Notes\n");
        for n in &r.notes {
            let _ = writeln!(out, "- {}", one_line(n));
        }
        out.push('\n');
    }
    let _ = writeln!(out, "*{}*\n", support_line(r));
    if let Some(s) = &r.sentences {
        let _ = writeln!(out, "*{}*\n", sentences_line(s));
    }
    let _ = writeln!(
        out,
        "*Token use: {} in, {} out. Reopen with `patchwise research show {}`.*",
        r.input_tokens, r.output_tokens, r.id
    );
    out
}

/// The footer line on support: the share of citations whose source supports the sentence, and
/// — when a model wrote citations — the share of its own citations as it wrote them, before the
/// check re-cited or dropped sentences (the check uses the same overlap measure, so the first
/// share alone would flatter the model).
pub fn support_line(r: &ResearchRecord) -> String {
    let mut line = final_support(r);
    if let Some(raw) = &r.model_support
        && let Some(share) = raw.share
    {
        line.push_str(&format!(
            " The model's own citations, before the check: {:.0}% supported ({} of {}).",
            share * 100.0,
            raw.supported,
            raw.citations
        ));
    }
    line
}

/// What became of the model's sentences: cited by the model, attributed by the server, dropped.
pub fn sentences_line(s: &crate::store::SentenceCounts) -> String {
    let mut line = format!(
        "The model's sentences: {} cited by the model{}, {} attributed to a passage by the server, {} dropped",
        s.cited,
        if s.recited > 0 {
            format!(" ({} re-cited)", s.recited)
        } else {
            String::new()
        },
        s.attributed,
        s.dropped
    );
    if s.dropped_by_judge > 0 || s.judge_removed > 0 {
        line.push_str(&format!(
            " ({} after the model's check, which removed {} citation{})",
            s.dropped_by_judge,
            s.judge_removed,
            plural(s.judge_removed as usize)
        ));
    }
    line.push('.');
    line
}

/// What the checks say of the report's citations. Not a share of "supported" citations: the
/// checks remove what they reject, so what remains is supported by construction, and a
/// reader does not agree with every one (read by hand over Poetry's and Starlette's docs, 46
/// of 54 citations the checks kept; docs/research.md). The line says what was checked and how.
fn final_support(r: &ResearchRecord) -> String {
    let s = &r.support;
    if s.share.is_none() {
        return "Citations: none to check (the synthesis cites no source).".to_owned();
    }
    let how = if s.method == "model" {
        "judged by the model to be supported by their passage"
    } else {
        "share most of their content words with their passage"
    };
    let mut line = format!("Citations: {} kept; {} {how}", s.citations, s.supported);
    let mut rest = Vec::new();
    if s.partly > 0 {
        rest.push(format!("{} partly", s.partly));
    }
    if s.unsupported > 0 {
        rest.push(format!("{} not supported", s.unsupported));
    }
    if s.contradicted > 0 {
        rest.push(format!("{} contradicted", s.contradicted));
    }
    if !rest.is_empty() {
        line.push_str(&format!("; {}", rest.join(", ")));
    }
    if r.synthesis_kind == "extractive" {
        line.push_str("; the sentences are quoted from their sources");
    }
    line.push_str(
        ". A check, not a reader: read by hand, some citations it keeps are only partly supported.",
    );
    line
}

/// Writes the report to `path` (through a temporary file, so a reader never sees half of it).
pub fn write(record: &ResearchRecord, path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("md.tmp");
    std::fs::write(&tmp, render(record))?;
    std::fs::rename(&tmp, path)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CitationCheck, Claim, Credibility, SourceRecord, SupportSummary};

    #[test]
    fn renders_every_section() {
        let record = ResearchRecord {
            id: "01abc".into(),
            query: "why | pipes".into(),
            created_at: "2026-11-22T01:00:00Z".into(),
            status: "complete".into(),
            synthesis: "Pipes matter [1].".into(),
            synthesis_kind: "model".into(),
            model: Some("local/m".into()),
            sources: vec![SourceRecord {
                key: "url:example.org/a".into(),
                title: "A | B".into(),
                url: Some("https://example.org/a".into()),
                providers: vec!["brave".into()],
                n: Some(1),
                retracted: true,
                credibility: Credibility {
                    score: 0.0,
                    breakdown: "retracted → 0".into(),
                    ..Default::default()
                },
                ..Default::default()
            }],
            claims: vec![Claim {
                n: 1,
                text: "Pipes matter".into(),
                sources: vec!["url:example.org/a".into()],
                independent_domains: 1,
                attributed: true,
                checks: vec![CitationCheck {
                    source_key: "url:example.org/a".into(),
                    overlap: 0.5,
                    verdict: "supported".into(),
                    model_verdict: None,
                }],
            }],
            notes: vec!["removed citation marker [7]".into()],
            ..Default::default()
        };
        let record = ResearchRecord {
            support: SupportSummary::of(&record.claims),
            model_support: Some(SupportSummary {
                citations: 4,
                supported: 1,
                unsupported: 3,
                share: Some(0.25),
                method: "overlap".into(),
                ..Default::default()
            }),
            ..record
        };
        let text = render(&record);
        assert!(text.contains("## Synthesis\n\nPipes matter [1]."));
        assert!(text.contains(
            "1. Pipes matter *(attributed)* — cites [1] (1 independent source); [1] supported (50% word overlap)"
        ));
        assert!(text.contains(
            "*Citations: 1 kept; 1 share most of their content words with their passage. A check, not a reader: read by hand, some citations it keeps are only partly supported. The model's own citations, before the check: 25% supported (1 of 4).*"
        ));
        assert!(text.contains("| [1] | [A \\| B](https://example.org/a) — **RETRACTED** | brave | 0.00 | retracted → 0 |"));
        assert!(text.contains("- removed citation marker [7]"));
    }
}
