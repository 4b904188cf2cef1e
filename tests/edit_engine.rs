//! Property tests of the edit engine: exact edits reverse, perturbed blocks land on their block
//! or nowhere, arbitrary input never panics, huge inputs stay well-behaved. The fixture corpus
//! (`fixtures/edit/`) runs one named test per case in `tests/edit_fixtures.rs`.

use patchwise::edit::{self, Operation, ReplaceOptions, apply_batch, formats};
use proptest::prelude::*;

/// A file of `n` distinct lines (each carries its index), indented like code.
fn unique_file(n: usize, crlf: bool) -> (String, Vec<String>) {
    let eol = if crlf { "\r\n" } else { "\n" };
    let lines: Vec<String> = (0..n)
        .map(|i| {
            let depth = (i * 7 % 5) % 3;
            format!(
                "{}let value_{i} = compute({i}, \"s{i}\");",
                "    ".repeat(depth)
            )
        })
        .collect();
    let mut text = String::new();
    for l in &lines {
        text.push_str(l);
        text.push_str(eol);
    }
    (text, lines)
}

/// Bytes before the first and after the last reported span are exactly the original's.
fn assert_outside_untouched(before: &str, after: &str, spans: &[std::ops::Range<usize>]) {
    let lo = spans.iter().map(|s| s.start).min().unwrap_or(0);
    let hi = spans.iter().map(|s| s.end).max().unwrap_or(before.len());
    assert!(
        after.starts_with(&before[..lo]),
        "bytes before the span changed"
    );
    assert!(
        after.ends_with(&before[hi..]),
        "bytes after the span changed"
    );
    if let [one] = spans {
        assert_eq!(
            after.len() - (before.len() - one.len()),
            after.len() - before[..one.start].len() - before[one.end..].len()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// An exact edit applied and then reversed gives back the original bytes.
    #[test]
    fn exact_edit_then_reverse_restores(
        n in 3usize..40,
        a in 0usize..40,
        len in 1usize..6,
        crlf in any::<bool>(),
        extra in "[a-z ]{0,12}",
    ) {
        let (text, lines) = unique_file(n, crlf);
        let a = a % n;
        let b = (a + len).min(n);
        let old = lines[a..b].join("\n");
        let new = format!("{}\n    // inserted {extra}", lines[a..b].join("\n").replace("compute", "evaluate"));
        let fwd = edit::replace(&text, &old, &new, ReplaceOptions::default())
            .unwrap_or_else(|r| panic!("forward refused: {r}"));
        let back = edit::replace(&fwd.text, &new, &old, ReplaceOptions::default())
            .unwrap_or_else(|r| panic!("reverse refused: {r}"));
        prop_assert_eq!(back.text, text);
    }

    /// A perturbed copy of a block of a file whose lines are all distinct is applied to that
    /// block or refused — never anywhere else — and nothing outside the span changes.
    #[test]
    fn perturbed_blocks_land_on_their_block_or_nowhere(
        n in 4usize..60,
        a in 0usize..60,
        len in 2usize..8,
        crlf in any::<bool>(),
        trailing in any::<bool>(),
        shift in 0usize..3,
        numbers in any::<bool>(),
        slip in proptest::option::of(0usize..8),
    ) {
        let (text, lines) = unique_file(n, crlf);
        let a = a % n;
        let b = (a + len).min(n);
        let mut old_lines: Vec<String> = lines[a..b].to_vec();
        let mut new_lines = old_lines.clone();
        let last = new_lines.len() - 1;
        new_lines[last].push_str(" // changed");
        if let Some(k) = slip
            && k < last
        {
            let l = old_lines[k].replace("compute", "calculate");
            old_lines[k] = l.clone();
            new_lines[k] = l;
        }
        let perturb = |ls: &[String], numbered: bool| -> String {
            ls.iter()
                .enumerate()
                .map(|(i, l)| {
                    let mut l = format!("{}{l}", "  ".repeat(shift));
                    if trailing {
                        l.push_str("  ");
                    }
                    if numbered {
                        l = format!("{:>6}\t{l}", a + i + 1);
                    }
                    l
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let old = perturb(&old_lines, numbers);
        let new = perturb(&new_lines, numbers);
        if let Ok(applied) = edit::replace(&text, &old, &new, ReplaceOptions::default()) {
            let spans = &applied.located[0].spans;
            assert_outside_untouched(&text, &applied.text, spans);
            let block = {
                let starts: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
                let s = if a == 0 { 0 } else { starts[a - 1] };
                let e = starts[b - 1];
                s..e
            };
            for sp in spans {
                prop_assert!(sp.start >= block.start && sp.end <= block.end,
                    "edit at {sp:?} outside the block {block:?} (pass {})", applied.matched_by());
            }
            prop_assert!(applied.text.contains("// changed"));
        }
    }

    /// Arbitrary OLD/NEW/file triples never panic, and whatever applies changes only the span.
    #[test]
    fn random_triples_never_panic(
        file in "(?s)[a-c \t\r\n{}()\"“”…·.]{0,300}",
        old in "(?s)[a-c \t\r\n{}()\"“”….#/]{0,40}",
        new in "(?s)[a-d \t\r\n{}()\"“”….#/]{0,40}",
        all in any::<bool>(),
    ) {
        if let Ok(applied) = edit::replace(&file, &old, &new, ReplaceOptions { replace_all: all }) {
            assert_outside_untouched(&file, &applied.text, &applied.located[0].spans);
        }
        let _ = formats::parse(&old);
    }

    /// Operations with arbitrary arguments (line numbers, regexes, anchors) never panic.
    #[test]
    fn random_operations_never_panic(
        file in "(?s)[a-c \t\r\n]{0,200}",
        line in 0usize..50,
        end in 0usize..50,
        pattern in "[a-c()\\[\\]*+?|\\\\^$.{}0-9]{0,12}",
        text in "(?s)[a-c \n\r]{0,20}",
        all in any::<bool>(),
    ) {
        let ops = vec![
            Operation::InsertAfterLine { line, text: text.clone() },
            Operation::InsertBeforeLine { line, text: text.clone() },
            Operation::ReplaceLines { start: line, end, text: text.clone() },
            Operation::ReplacePattern { pattern: pattern.clone(), replacement: text.clone(), all },
            Operation::Prepend { text: text.clone() },
            Operation::Append { text: text.clone() },
            Operation::InsertAfter { anchor: text.clone(), text: "x".into() },
            Operation::InsertBefore { anchor: pattern.clone(), text: text.clone() },
        ];
        for op in &ops {
            let _ = edit::apply(&file, op);
        }
        let _ = apply_batch(&file, &ops);
        let _ = formats::parse(&format!("<<<<<<< SEARCH\n{file}\n=======\n{text}\n>>>>>>> REPLACE\n"));
        let _ = formats::parse(&format!("*** Begin Patch\n*** Update File: a\n{file}\n*** End Patch\n"));
        let _ = formats::parse(&format!("--- a/x\n+++ b/x\n@@ -1 +1 @@\n{file}"));
    }
}

/// Large inputs: a 2 MB file, a 5 000-line OLD and pathological repetition stay well-behaved.
#[test]
fn huge_inputs_are_handled() {
    let (text, lines) = unique_file(40_000, false);
    let old = lines[20_000..25_000].join("\n");
    let new = old.replace("compute", "eval");
    let a = edit::replace(&text, &old, &new, ReplaceOptions::default()).unwrap();
    assert_eq!(a.matched_by().to_string(), "exact");
    let shifted: String = old.lines().map(|l| format!("  {l}\n")).collect();
    let a = edit::replace(&text, &shifted, &new, ReplaceOptions::default()).unwrap();
    assert_eq!(a.matched_by().to_string(), "indentation(-2)");
    let same = "a\n".repeat(100_000);
    let r = edit::replace(&same, "a\na", "b", ReplaceOptions::default()).unwrap_err();
    assert!(matches!(r.kind, edit::RefusalKind::Ambiguous { .. }));
    let a = edit::replace(&same, "a", "b", ReplaceOptions { replace_all: true }).unwrap();
    assert_eq!(a.replacements(), 100_000);
    let braces = "}\n".repeat(50_000);
    let r = edit::replace(&braces, "}\nnot here\n}\n}", "x", ReplaceOptions::default());
    assert!(r.is_err());
}

/// Every combination of the perturbations above on one file: nothing lands outside its block,
/// and the engine applies at least 97 % of them (the exceptions are refusals, never guesses).
#[test]
fn perturbation_grid_applies_nearly_everything_and_never_elsewhere() {
    let n = 30;
    let mut applied = 0;
    let mut total = 0;
    let mut refused = Vec::new();
    for crlf in [false, true] {
        let (text, lines) = unique_file(n, crlf);
        let starts: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
        for a in (0..n - 6).step_by(3) {
            for len in [2, 3, 5] {
                for trailing in [false, true] {
                    for shift in [0, 1, 2] {
                        for numbers in [false, true] {
                            // One wrong token needs at least two exact lines around it.
                            let slips: &[Option<usize>] =
                                if len >= 3 { &[None, Some(0)] } else { &[None] };
                            for &slip in slips {
                                total += 1;
                                let b = a + len;
                                let mut ol: Vec<String> = lines[a..b].to_vec();
                                let mut nl = ol.clone();
                                nl[len - 1].push_str(" // changed");
                                if let Some(k) = slip {
                                    ol[k] = ol[k].replace("compute", "calculate");
                                    nl[k] = ol[k].clone();
                                }
                                let p = |ls: &[String]| {
                                    ls.iter()
                                        .enumerate()
                                        .map(|(i, l)| {
                                            let mut l = format!("{}{l}", "  ".repeat(shift));
                                            if trailing {
                                                l.push(' ');
                                            }
                                            if numbers {
                                                l = format!("{} | {l}", a + i + 1);
                                            }
                                            l
                                        })
                                        .collect::<Vec<_>>()
                                        .join("\n")
                                };
                                let (old, new) = (p(&ol), p(&nl));
                                match edit::replace(&text, &old, &new, ReplaceOptions::default()) {
                                    Ok(x) => {
                                        applied += 1;
                                        let s = if a == 0 { 0 } else { starts[a - 1] };
                                        let e = starts[b - 1];
                                        for sp in &x.located[0].spans {
                                            assert!(
                                                sp.start >= s && sp.end <= e,
                                                "wrong place: {sp:?} outside {s}..{e} by {}",
                                                x.matched_by()
                                            );
                                        }
                                    }
                                    Err(r) => refused.push(format!(
                                        "crlf={crlf} a={a} len={len} trailing={trailing} shift={shift} numbers={numbers} slip={slip:?}: {}",
                                        r.kind.as_str()
                                    )),
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("perturbation grid: {applied}/{total} applied");
    assert!(
        applied * 100 >= total * 97,
        "only {applied}/{total} applied; refused:\n{}",
        refused.join("\n")
    );
}
