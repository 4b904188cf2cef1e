//! Long content a model streams as plain text (a write session, `docs/editing.md`): the pure
//! pieces — the session's end marker, cutting an answer at it, removing a fence that wraps the
//! whole content, joining a continuation to what was received without repeating the lines the
//! model wrote twice, and the signs that content stopped before its end.
//!
//! Small models cannot reliably put a 400-line file inside one JSON string; plain text ended by
//! a marker unique to the session survives being cut at the output-token limit, because what
//! came so far is kept and the model is asked to go on. Pure: no I/O, never panics.

use super::text;

/// The line that ends the content of session `id`. Unique to the session, so neither `DONE`
/// nor the word inside the content ends it.
pub fn end_marker(id: &str) -> String {
    format!("__END_WRITE_{id}__")
}

/// An answer split at the end marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut<'a> {
    /// The text before the marker line (everything, when there is none).
    pub body: &'a str,
    /// Whether the marker was found on a line of its own.
    pub ended: bool,
}

/// Finds `marker` alone on a line (surrounding spaces allowed) and returns what comes before it.
/// Text after the marker is not content.
///
/// A marker with only blank text before it and content after it is a stray one and the search
/// goes on: small models sometimes write the marker first, then the content, then the marker
/// again (`docs/editing.md`, "Write sessions"). A marker with nothing before and nothing after
/// it is the end of empty content (a continuation that only closes the session).
pub fn cut_at_marker<'a>(answer: &'a str, marker: &str) -> Cut<'a> {
    let mut body_start = 0;
    let mut start = 0;
    for line in answer.split_inclusive('\n') {
        let end = start + line.len();
        if line.trim() == marker {
            let before = &answer[body_start..start];
            let after = &answer[end..];
            if !before.trim().is_empty() || after.trim().is_empty() {
                return Cut {
                    body: before,
                    ended: true,
                };
            }
            body_start = end;
        }
        start = end;
    }
    Cut {
        body: &answer[body_start..],
        ended: false,
    }
}

/// A fence line: its character, its length and whether it has an info string (```` ```rust ````).
fn fence(line: &str) -> Option<(char, usize, bool)> {
    text::fence_line(line).map(|(ch, len, info)| (ch, len, !info.is_empty()))
}

/// Removes a code fence that wraps the whole content (blank lines around it allowed); content
/// with text outside the fence, or whose fences pair up otherwise, is returned as it is.
pub fn strip_wrapping_fence(content: &str) -> &str {
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let Some(first) = lines.iter().position(|l| !l.trim().is_empty()) else {
        return content;
    };
    let Some(last) = lines.iter().rposition(|l| !l.trim().is_empty()) else {
        return content;
    };
    if last <= first {
        return content;
    }
    let Some((ch, len, _)) = fence(lines[first]) else {
        return content;
    };
    if !text::closes_fence(lines[last], ch, len) {
        return content;
    }
    // Fences inside must pair up, or the outer ones are two separate blocks.
    let mut open = false;
    for l in &lines[first + 1..last] {
        if let Some((c, n, info)) = fence(l)
            && c == ch
            && n >= len
        {
            if !open {
                open = true;
            } else if !info {
                open = false;
            }
        }
    }
    if open {
        return content;
    }
    let start: usize = lines[..=first].iter().map(|l| l.len()).sum();
    let end: usize = lines[..last].iter().map(|l| l.len()).sum();
    &content[start..end]
}

/// Removes an opening fence at the top that is never closed: it wraps everything after it (a
/// model that wrote the closing fence after the end marker, as Qwen2.5-Coder 1.5B did, or never).
pub fn strip_unclosed_opening_fence(content: &str) -> &str {
    let Some(first) = content.lines().position(|l| !l.trim().is_empty()) else {
        return content;
    };
    if unclosed_fence(content) != Some(first + 1) {
        return content;
    }
    &content[after_lines(content, first + 1)..]
}

/// The byte offset right after the first `n` lines of `text` (its length when it has fewer).
pub fn after_lines(text: &str, n: usize) -> usize {
    text.split_inclusive('\n').take(n).map(str::len).sum()
}

/// Whether `part`, added to `received`, closes a fence that wraps all of the content: the model
/// ended its content its own way (a closed code block, then nothing) instead of with the marker.
/// Qwen2.5-Coder 1.5B ended every answer of one recorded run so
/// (`fixtures/write/scenarios/recorded_closed_block_without_marker.json`).
pub fn closed_by_fence(received: &str, part: &str) -> bool {
    let whole = format!("{received}{part}");
    part.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| fence(l).is_some())
        && strip_wrapping_fence(&whole).len() != whole.len()
}

/// The line of a fence left open at the end of `text` (1-based), if any.
pub fn unclosed_fence(text: &str) -> Option<usize> {
    let mut open: Option<(char, usize, usize)> = None;
    for (i, l) in text.lines().enumerate() {
        let Some((c, n, _)) = fence(l) else {
            continue;
        };
        match open {
            None => open = Some((c, n, i + 1)),
            Some((oc, on, _)) if text::closes_fence(l, oc, on) => open = None,
            Some(_) => {}
        }
    }
    open.map(|(_, _, line)| line)
}

/// Whether a line carries meaning on its own: not blank, not only brackets and punctuation, not
/// a bare block closer (`end`, `fi`, `</div>`). Two equal meaningful lines side by side are
/// rare in real content, so an overlap containing one is the model repeating itself.
fn meaningful(line: &str) -> bool {
    let t = line.trim();
    let word = t.trim_end_matches([';', ',', ')']);
    let closer = matches!(word, "fi" | "done" | "esac" | "end")
        || word.starts_with("end") && word.chars().all(|c| c.is_ascii_alphabetic())
        || (t.starts_with("</") && t.ends_with('>') && !t[2..].contains('<'));
    t.chars().filter(|c| c.is_alphanumeric()).count() >= 2 && !closer
}

/// The complete lines of a part: a last line without its line break was cut mid-way and is
/// dropped (the continuation writes it again whole). Returns the kept text and the dropped
/// fragment.
pub fn complete_lines(part: &str) -> (&str, &str) {
    match part.rfind('\n') {
        Some(i) => (&part[..=i], &part[i + 1..]),
        None => ("", part),
    }
}

/// Appends a continuation to the content received so far (which ends with a line break or is
/// empty). A model asked to continue "from the line after X" often repeats X, a few lines
/// before it, or restarts from the top: the longest run of lines at the start of `next` that
/// equals the end of `received` is dropped when it holds a meaningful line. Lines compare
/// without trailing whitespace. A fence line starting the continuation, while the content's
/// opening fence is still open, is dropped too (a model wraps each part; if it meant to close the
/// fence, the content's opening fence is then removed as never closed).
pub fn join(received: &str, next: &str) -> String {
    let mut next = next;
    if let Some(first) = next.split_inclusive('\n').next()
        && fence(first).is_some()
        && starts_with_fence(received)
        && unclosed_fence(received).is_some()
    {
        next = &next[first.len()..];
    }
    let have: Vec<&str> = received.split_inclusive('\n').collect();
    let more: Vec<&str> = next.split_inclusive('\n').collect();
    let same = |a: &str, b: &str| a.trim_end() == b.trim_end();
    let mut overlap = 0;
    for r in (1..=have.len().min(more.len())).rev() {
        let tail = &have[have.len() - r..];
        let head = &more[..r];
        if tail.iter().zip(head).all(|(a, b)| same(a, b))
            && tail.iter().any(|l| meaningful(l))
            // The overlap must be whole lines: a last line of `next` without its break is
            // content still being written, not a copy.
            && (r < more.len() || more[r - 1].ends_with('\n'))
        {
            overlap = r;
            break;
        }
    }
    let mut out = String::with_capacity(received.len() + next.len());
    out.push_str(received);
    for l in &more[overlap..] {
        out.push_str(l);
    }
    out
}

/// A continuation with the line numbers of the "last lines received" message copied in front of
/// its lines (`   149\t/// text`, sometimes twice: `   283\t   283\t\t#[test]`). Small models
/// echo the numbering they were shown. The numbers are stripped only when they are the file's
/// own: every line that is not blank or a fence carries one (`%6d\t`, or the number alone on an
/// empty line), they run consecutively, and the first lies within `near` (the lines around the
/// end of what was received), so a file whose lines start with a number stays as written.
pub fn strip_echoed_numbers(part: &str, near: std::ops::RangeInclusive<usize>) -> String {
    let mut text = part.to_owned();
    // Twice numbered is the most seen; a third layer would be a different habit.
    for _ in 0..3 {
        match strip_one_numbering(&text, &near) {
            Some(stripped) => text = stripped,
            None => break,
        }
    }
    text
}

fn strip_one_numbering(part: &str, near: &std::ops::RangeInclusive<usize>) -> Option<String> {
    let mut out = String::with_capacity(part.len());
    let mut next: Option<usize> = None;
    for raw in part.split_inclusive('\n') {
        let (body, eol) = match raw.strip_suffix('\n') {
            Some(b) => (b.strip_suffix('\r').unwrap_or(b), &raw[b.len()..]),
            None => (raw, ""),
        };
        if body.trim().is_empty() || fence(body).is_some() {
            out.push_str(raw);
            continue;
        }
        let trimmed = body.trim_start_matches([' ', '\t']);
        let digits = trimmed.len()
            - trimmed
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .len();
        if digits == 0 || digits > 7 {
            return None;
        }
        let n: usize = trimmed[..digits].parse().ok()?;
        let rest = &trimmed[digits..];
        let rest = match rest.strip_prefix('\t') {
            Some(r) => r,
            None if rest.trim().is_empty() => "",
            None => return None,
        };
        match next {
            None if !near.contains(&n) => return None,
            Some(expected) if n != expected => return None,
            _ => {}
        }
        next = Some(n + 1);
        out.push_str(rest);
        out.push_str(eol);
    }
    next.map(|_| out)
}

/// Where the end of `text` keeps repeating one block of lines: the model fell into a loop (a
/// small model at temperature 0 writes the same test function until the output-token limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loop {
    /// Lines kept: everything before the loop and its first block.
    pub keep_lines: usize,
    /// Lines in the repeated block.
    pub period: usize,
    /// How many times the block occurs (the last one may be cut short).
    pub times: usize,
}

/// Finds a block of up to 40 lines that repeats back to back at least three times up to the end
/// of `text` and covers at least 12 lines, holding a meaningful line (so closing braces and
/// blank lines never count). The last occurrence may be cut short. `None` when the end does not
/// loop.
pub fn looping_tail(text: &str) -> Option<Loop> {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let n = lines.len();
    (1..=40.min(n / 3)).find_map(|period| {
        // `run` lines at the end each equal the line `period` before them.
        let run = (period..n)
            .rev()
            .take_while(|&i| lines[i] == lines[i - period])
            .count();
        let covered = run + period;
        let block = &lines[n - covered..n - covered + period];
        (covered >= 3 * period && covered >= 12 && block.iter().any(|l| meaningful(l))).then(|| {
            Loop {
                keep_lines: n - run,
                period,
                times: covered.div_ceil(period),
            }
        })
    })
}

fn starts_with_fence(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(fence)
        .is_some()
}

/// The last `n` non-empty lines of `text`, with their 1-based numbers.
pub fn last_lines(text: &str, n: usize) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, l)| !l.trim().is_empty())
        .take(n)
        .map(|(i, l)| (i + 1, *l))
        .collect();
    out.reverse();
    out
}

/// Whether `path` names a Markdown file (`.md`, `.markdown`, `.mdx`, any case).
pub fn is_markdown(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".md", ".markdown", ".mdx"]
        .iter()
        .any(|e| lower.ends_with(e))
}

/// How the content is read for [`incomplete_signs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Markdown: a heading at the very end has nothing under it.
    Markdown,
    /// Code or data: quotes and line continuations count.
    Code,
    /// Anything else: only fences count.
    Text,
}

/// Signs in the text alone that content stopped before its end: a fence left open, a Markdown
/// heading with nothing under it at the end, a last line cut inside a string or after a line
/// continuation. Each sign is a sentence for the model.
pub fn incomplete_signs(text: &str, kind: Kind) -> Vec<String> {
    let mut signs = Vec::new();
    if kind != Kind::Code
        && let Some(line) = unclosed_fence(text)
    {
        signs.push(format!(
            "the code fence opened at line {line} is never closed"
        ));
    }
    let Some(&(n, last)) = last_lines(text, 1).first() else {
        return signs;
    };
    let t = last.trim();
    match kind {
        Kind::Markdown => {
            if t.starts_with('#') && t.trim_start_matches('#').starts_with(' ') {
                signs.push(format!(
                    "it ends with the heading \"{t}\" (line {n}) and nothing under it"
                ));
            }
        }
        Kind::Code => {
            if odd_quotes(t) {
                signs.push(format!(
                    "the last line (line {n}) ends inside a string: `{t}`"
                ));
            } else if t.ends_with('\\') {
                signs.push(format!(
                    "the last line (line {n}) ends with a line continuation `\\`"
                ));
            }
        }
        Kind::Text => {}
    }
    signs
}

/// Whether a line has an odd number of unescaped double quotes (a string left open).
fn odd_quotes(line: &str) -> bool {
    let mut count = 0;
    let mut escaped = false;
    for c in line.chars() {
        match c {
            '\\' if !escaped => {
                escaped = true;
                continue;
            }
            '"' if !escaped => count += 1,
            _ => {}
        }
        escaped = false;
    }
    count % 2 == 1
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_marker_ends_only_on_its_own_line() {
        let m = end_marker("w1");
        assert_eq!(m, "__END_WRITE_w1__");
        let a = format!("DONE\ndone\nDONE.\nsay {m} here\n{m}\ntrailing prose");
        let cut = cut_at_marker(&a, &m);
        assert!(cut.ended);
        assert_eq!(cut.body, format!("DONE\ndone\nDONE.\nsay {m} here\n"));
        let cut = cut_at_marker("a\nb\nDONE\n", &m);
        assert!(!cut.ended);
        assert_eq!(cut.body, "a\nb\nDONE\n");
        assert!(cut_at_marker(&format!("x\n  {m}  \r\n"), &m).ended);
        assert!(!cut_at_marker("__END_WRITE_w2__\n", &m).ended);
    }

    #[test]
    fn echoed_line_numbers_are_stripped_once_or_twice() {
        // Shapes recorded from Qwen2.5-Coder 1.5B (fixtures/model/write-sessions/session-0-loop.json).
        let once = "```\n   149\t/// end of doc\n   150\t}\n   151\n   152\t#[cfg(test)]\n";
        assert_eq!(
            strip_echoed_numbers(once, 143..=149),
            "```\n/// end of doc\n}\n\n#[cfg(test)]\n"
        );
        let twice = "   283\t   283\t\t#[test]\n   284\t   284\t\tfn t() {}\n   285\t   285\n";
        assert_eq!(
            strip_echoed_numbers(twice, 277..=283),
            "\t#[test]\n\tfn t() {}\n\n"
        );
    }

    #[test]
    fn numbers_that_are_not_the_files_stay() {
        // Far from the end of what was received: the file's own numbering (a TSV with an index).
        let tsv = "1\tapple\n2\tpear\n";
        assert_eq!(strip_echoed_numbers(tsv, 40..=46), tsv);
        // Not consecutive, or a line without a number: written as meant.
        let gaps = "   41\ta\n   43\tb\n";
        assert_eq!(strip_echoed_numbers(gaps, 40..=46), gaps);
        let mixed = "   41\ta\nb\n";
        assert_eq!(strip_echoed_numbers(mixed, 40..=46), mixed);
    }

    #[test]
    fn a_block_written_over_and_over_is_a_loop() {
        let block = "    #[test]\n    fn t() {\n        assert!(ok());\n    }\n\n";
        // Cut at the limit inside a fifth copy (the cut-off fragment is already dropped).
        let text = format!(
            "fn ok() -> bool {{ true }}\n\n{}    #[test]\n",
            block.repeat(4)
        );
        let found = looping_tail(&text).expect("a loop");
        assert_eq!(found.period, 5);
        // The blank line before the first copy repeats too, so the loop is read as starting
        // there: kept are the first line, that blank line and one copy without its own blank.
        assert_eq!(found.keep_lines, 6);
        assert_eq!(found.times, 5);
    }

    #[test]
    fn short_or_trivial_repeats_are_not_loops() {
        // Two occurrences only.
        let block = "    #[test]\n    fn t() {\n        assert!(ok());\n    }\n\n";
        assert_eq!(looping_tail(&block.repeat(2)), None);
        // Closing braces and blank lines.
        assert_eq!(looping_tail(&"}\n\n".repeat(12)), None);
        // Fewer than 12 lines in all.
        assert_eq!(looping_tail(&"x = 1\n".repeat(11)), None);
        assert!(looping_tail(&"x = 1\n".repeat(12)).is_some());
    }

    #[test]
    fn a_closed_block_around_all_of_it_ends_the_content() {
        assert!(closed_by_fence("", "```rust\nfn a() {}\n```\n"));
        // A continuation closing the fence the content opened.
        assert!(closed_by_fence("```rust\nfn a() {\n", "}\n```\n"));
        // No fence, text after the block, or an opening fence only: not ended.
        assert!(!closed_by_fence("", "fn a() {}\n"));
        assert!(!closed_by_fence(
            "",
            "```rust\nfn a() {}\n```\nThat is the file.\n"
        ));
        assert!(!closed_by_fence("", "```rust\nfn a() {}\n"));
        // Two separate blocks are not one around all of it.
        assert!(!closed_by_fence(
            "",
            "```rust\na\n```\ntext\n```rust\nb\n```\n"
        ));
    }

    #[test]
    fn a_marker_before_the_content_is_a_stray_one() {
        let m = end_marker("w1");
        // The marker, then the fenced content, then the marker again (Qwen2.5-Coder 1.5B).
        let a = format!("{m}\n```yaml\non: push\n```\n{m}\n");
        let cut = cut_at_marker(&a, &m);
        assert!(cut.ended);
        assert_eq!(cut.body, "```yaml\non: push\n```\n");
        // Only the stray marker: the content after it is cut short, not ended.
        let a = format!("\n{m}\nfn a() {{}}\n");
        let cut = cut_at_marker(&a, &m);
        assert!(!cut.ended);
        assert_eq!(cut.body, "fn a() {}\n");
        // A marker alone ends empty content (a continuation that only closes the session).
        let a = format!("\n{m}\n\n");
        let cut = cut_at_marker(&a, &m);
        assert!(cut.ended);
        assert_eq!(cut.body, "\n");
    }

    #[test]
    fn fences_go_only_when_they_wrap_everything() {
        assert_eq!(
            strip_wrapping_fence("```rust\nfn a() {}\n```\n"),
            "fn a() {}\n"
        );
        assert_eq!(strip_wrapping_fence("\n~~~\nx\n~~~"), "x\n");
        let md = "```markdown\n# T\n\n```sh\nrun\n```\n\nmore\n```\n";
        assert_eq!(strip_wrapping_fence(md), "# T\n\n```sh\nrun\n```\n\nmore\n");
        // Two blocks with prose between: not one wrapper.
        let two = "```sh\na\n```\n\ntext\n\n```sh\nb\n```\n";
        assert_eq!(strip_wrapping_fence(two), two);
        let prose = "Here it is:\n```\nx\n```\n";
        assert_eq!(strip_wrapping_fence(prose), prose);
        assert_eq!(strip_wrapping_fence("plain\n"), "plain\n");
        assert_eq!(strip_wrapping_fence("```\n"), "```\n");
        // Recorded: the closing fence came after the end marker; doc-test fences inside stay.
        let rec = "```\nuse x;\n/// ```\n/// ok\n/// ```\n";
        assert_eq!(
            strip_unclosed_opening_fence(rec),
            "use x;\n/// ```\n/// ok\n/// ```\n"
        );
        assert_eq!(
            strip_unclosed_opening_fence("```sh\nrun\n```\n"),
            "```sh\nrun\n```\n"
        );
        assert_eq!(
            strip_unclosed_opening_fence("text\n```sh\n"),
            "text\n```sh\n"
        );
    }

    #[test]
    fn a_cut_line_is_dropped_and_repeated_lines_are_joined_once() {
        assert_eq!(complete_lines("a\nb\npartial"), ("a\nb\n", "partial"));
        assert_eq!(complete_lines("a\n"), ("a\n", ""));
        let received = "fn a() {\n    let x = 1;\n";
        assert_eq!(
            join(received, "    let x = 1;\n    x\n}\n"),
            "fn a() {\n    let x = 1;\n    x\n}\n"
        );
        assert_eq!(
            join(received, "fn a() {\n    let x = 1;\n    x\n}\n"),
            "fn a() {\n    let x = 1;\n    x\n}\n"
        );
        // A closing brace after a closing brace is content, not a repeat.
        assert_eq!(join("  }\n", "  }\n}\n"), "  }\n  }\n}\n");
        assert_eq!(join("", "a\n"), "a\n");
        // The continuation's own opening fence, while the content's first one is open.
        assert_eq!(
            join("```rust\nfn a() {\n", "```rust\n}\n```\n"),
            "```rust\nfn a() {\n}\n```\n"
        );
        // Recorded from Qwen2.5-Coder 1.5B: a bare fence, the last line again, then the marker.
        assert_eq!(
            join(
                "```\nclass A:\n        return cls(items)\n",
                "```\n        return cls(items)\n"
            ),
            "```\nclass A:\n        return cls(items)\n"
        );
    }

    #[test]
    fn signs_of_content_that_stopped_early() {
        assert_eq!(
            incomplete_signs("# Title\n\ntext\n\n## Usage\n", Kind::Markdown),
            ["it ends with the heading \"## Usage\" (line 5) and nothing under it"]
        );
        assert_eq!(
            incomplete_signs("a\n```sh\nrun\n", Kind::Markdown),
            ["the code fence opened at line 2 is never closed"]
        );
        assert_eq!(
            incomplete_signs("x = \"abc\ny = \"unterminated\n", Kind::Code).len(),
            1
        );
        assert!(incomplete_signs("x = \"a\\\"b\"\n", Kind::Code).is_empty());
        assert!(incomplete_signs("# done\n\ntext\n", Kind::Markdown).is_empty());
        assert!(incomplete_signs("", Kind::Text).is_empty());
    }

    /// Code-like lines: meaningful ones are unique (as in real files), closers and blank lines
    /// repeat freely.
    fn file() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec(0u8..6, 1..60).prop_map(|kinds| {
            kinds
                .iter()
                .enumerate()
                .map(|(i, k)| match k {
                    0 => String::new(),
                    1 => "}".to_owned(),
                    2 => "    end".to_owned(),
                    3 => format!("    let v{i} = {i};"),
                    4 => format!("fn f{i}() {{"),
                    _ => format!("// note {i}"),
                })
                .collect()
        })
    }

    proptest! {
        /// Joining never duplicates or drops a line, for any split point, whether the model
        /// continues right after the last line, repeats some lines holding a meaningful one, or
        /// starts over from the top.
        #[test]
        fn joining_parts_keeps_every_line_once(
            lines in file(),
            split in 0usize..60,
            repeat in 0usize..5,
            cut in "[a-z ]{0,6}",
        ) {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let split = split.min(lines.len());
            let (head, tail) = lines.split_at(split);
            // What the first answer sent: whole lines, then maybe a fragment of the next one.
            let first: String = head.iter().map(|l| format!("{l}\n")).collect::<String>()
                + if tail.is_empty() { "" } else { &cut };
            let (received, _) = complete_lines(&first);
            let repeated = if repeat == 4 { head.len() } else { repeat.min(head.len()) };
            let copy = &head[head.len() - repeated..];
            let honest = copy.is_empty() || copy.iter().any(|l| meaningful(l));
            prop_assume!(honest);
            let next: String = copy.iter().chain(tail).map(|l| format!("{l}\n")).collect();
            prop_assert_eq!(join(received, &next), text);
        }
    }
}
