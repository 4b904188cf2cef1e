//! The edit engine's cost per edit: locate-and-apply for each pass of the cascade on a 1 MB and
//! a 10 MB source file (the OLD block sits near the end, so every pass scans the whole file),
//! and the refusal path (closest-region search and message) on a 10 000-line file.
//!
//! The baseline in the same run is `str::replacen` of the exact OLD (no uniqueness check, no
//! refusal): the floor any engine pays to find and splice text.
//!
//! Run: `cargo bench --bench edit -- --quick`

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

use patchwise::edit::{self, ReplaceOptions};

/// Rust-looking source of at least `bytes`, every function distinct, indented by 4 spaces.
fn source(bytes: usize) -> String {
    let eol = "\n";
    let mut s = String::with_capacity(bytes + 256);
    let mut n = 0;
    while s.len() < bytes {
        for line in [
            format!("/// Handles request number {n}."),
            format!("pub fn handle_{n}(req: &Request) -> Result<Response> {{"),
            format!("    let body = req.body().context(\"missing body {n}\")?;"),
            "    let parsed: Payload = serde_json::from_str(&body)?;".to_string(),
            format!("    if parsed.id == {n} {{"),
            "        return Ok(Response::empty());".to_string(),
            "    }".to_string(),
            format!("    Ok(Response::json(&parsed, {n}))"),
            "}".to_string(),
            String::new(),
        ] {
            s.push_str(&line);
            s.push_str(eol);
        }
        n += 1;
    }
    s
}

/// The block to edit: the function `n` functions before the end of `text`.
fn target(text: &str) -> (String, String) {
    let count = text.matches("pub fn handle_").count();
    let n = count - 3;
    let old = [
        format!("pub fn handle_{n}(req: &Request) -> Result<Response> {{"),
        format!("    let body = req.body().context(\"missing body {n}\")?;"),
        "    let parsed: Payload = serde_json::from_str(&body)?;".to_string(),
        format!("    if parsed.id == {n} {{"),
        "        return Ok(Response::empty());".to_string(),
        "    }".to_string(),
    ]
    .join("\n");
    let new = old.replace("Response::empty()", "Response::not_modified()");
    (old, new)
}

fn map_lines(s: &str, f: impl Fn(&str) -> String) -> String {
    s.split('\n').map(f).collect::<Vec<_>>().join("\n")
}

/// (pass name, file, OLD, NEW) for every pass.
fn cases(bytes: usize) -> Vec<(&'static str, String, String, String)> {
    let file = source(bytes);
    let crlf = file.replace('\n', "\r\n");
    let (old, new) = target(&file);
    let start = file[..file.find(&old).unwrap()].matches('\n').count() + 1;
    let numbered = |s: &str| {
        s.split('\n')
            .enumerate()
            .map(|(i, l)| format!("{:>6}\t{l}", start + i))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let lines: Vec<&str> = old.split('\n').collect();
    let elided = format!(
        "{}\n    // ... existing code ...\n{}",
        lines[0],
        lines[3..].join("\n")
    );
    let elided_new = elided.replace("Response::empty()", "Response::not_modified()");
    let slipped = old.replace("from_str(&body)", "from_str(&text)");
    let slipped_new = new.replace("from_str(&body)", "from_str(&text)");
    vec![
        ("exact", file.clone(), old.clone(), new.clone()),
        ("line-endings", crlf, old.clone(), new.clone()),
        (
            "trailing-whitespace",
            file.clone(),
            map_lines(&old, |l| format!("{l}  ")),
            map_lines(&new, |l| format!("{l}  ")),
        ),
        (
            "indentation",
            file.clone(),
            map_lines(&old, |l| format!("    {l}")),
            map_lines(&new, |l| format!("    {l}")),
        ),
        (
            "tabs-to-spaces",
            file.clone(),
            map_lines(&old, |l| l.replace("    ", "\t")),
            map_lines(&new, |l| l.replace("    ", "\t")),
        ),
        (
            "blank-lines",
            file.clone(),
            format!("{old}\n\n"),
            format!("{new}\n\n"),
        ),
        (
            "typographic",
            file.clone(),
            old.replace('"', "\u{201c}"),
            new.replace('"', "\u{201c}"),
        ),
        ("line-numbers", file.clone(), numbered(&old), numbered(&new)),
        (
            "json-escaped",
            file.clone(),
            serde_json::to_string(&old).unwrap(),
            serde_json::to_string(&new).unwrap(),
        ),
        ("elision", file.clone(), elided, elided_new),
        ("fuzzy", file, slipped, slipped_new),
    ]
}

fn bench_passes(c: &mut Criterion) {
    for (label, bytes) in [("1MB", 1usize << 20), ("10MB", 10usize << 20)] {
        let mut group = c.benchmark_group(format!("locate_and_apply/{label}"));
        group.sample_size(10);
        group.warm_up_time(Duration::from_millis(500));
        group.measurement_time(Duration::from_secs(3));
        for (pass, file, old, new) in cases(bytes) {
            // The benchmark measures the pass it names, or it measures nothing.
            let applied = edit::replace(&file, &old, &new, ReplaceOptions::default())
                .unwrap_or_else(|r| panic!("{pass} on {label} refused: {r}"));
            let got = applied.matched_by().to_string();
            assert!(got.starts_with(pass), "{pass} matched by {got}");
            group.bench_with_input(BenchmarkId::new(pass, label), &(), |b, ()| {
                b.iter(|| {
                    edit::replace(
                        black_box(&file),
                        black_box(&old),
                        &new,
                        ReplaceOptions::default(),
                    )
                    .map(|a| a.text.len())
                })
            });
        }
        let (file, old, new) = {
            let file = source(bytes);
            let (old, new) = target(&file);
            (file, old, new)
        };
        group.bench_function(BenchmarkId::new("baseline-str-replacen", label), |b| {
            b.iter(|| black_box(&file).replacen(black_box(&old), &new, 1).len())
        });
        group.finish();
    }
}

fn bench_refusal(c: &mut Criterion) {
    let mut group = c.benchmark_group("refusal/10k-lines");
    group.sample_size(20);
    let mut file = source(1 << 20);
    let keep: usize = file
        .match_indices('\n')
        .nth(9_999)
        .map(|(i, _)| i + 1)
        .unwrap_or(file.len());
    file.truncate(keep);
    assert_eq!(file.lines().count(), 10_000);
    let (old, new) = target(&file);
    // Two tokens wrong: no pass may take it, so the closest region is searched and explained.
    let invented = old
        .replace("from_str(&body)", "from_slice(&bytes)")
        .replace("missing body", "no body");
    let r = edit::replace(&file, &invented, &new, ReplaceOptions::default()).unwrap_err();
    assert_eq!(r.kind.as_str(), "not-found");
    group.bench_function("not-found", |b| {
        b.iter(|| {
            edit::replace(
                black_box(&file),
                black_box(&invented),
                &new,
                ReplaceOptions::default(),
            )
            .is_err()
        })
    });
    let ambiguous = "        return Ok(Response::empty());\n    }";
    group.bench_function("ambiguous", |b| {
        b.iter(|| {
            edit::replace(
                black_box(&file),
                black_box(ambiguous),
                "x",
                ReplaceOptions::default(),
            )
            .is_err()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_passes, bench_refusal);
criterion_main!(benches);
