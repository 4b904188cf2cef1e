//! What the model is shown: the text before and after the cursor within a token budget, and
//! chunks of other open files.
//!
//! Budgets are counted at 3 bytes a token (code tokenizes at 3–4 bytes a token; erring short
//! keeps the prompt inside the budget). The text before the cursor starts at a line that moves
//! only in steps of [`PREFIX_STEP`] lines, so while the user types on, the prompt's start stays
//! the same and the provider's cached prefix is reused; the text after the cursor is cut at a
//! line end. Other files are the places the user edited lately ([`super::recent`]), then the
//! first lines of the other open documents, within their own budget.
//!
//! The lines after those the suffix shows come as one more chunk of the same file, last before
//! the file's own text: a keystroke does not change them, so the provider keeps them cached and
//! the model still sees what follows the cursor (the names a hole is used by, the definitions
//! that already exist) without reading a long suffix again on every keystroke. Most holes the
//! short suffix missed and the plain 64-line suffix got right had their answer 200–600 bytes
//! after the cursor (docs/editors.md).

use super::fim::{ExtraFile, FimInput};
use super::recent::{EditedChunk, RecentEdits};
use crate::syntax::Language;

/// Bytes counted as one token.
pub const BYTES_PER_TOKEN: usize = 3;
/// The start of the text before the cursor moves in steps of this many lines.
pub const PREFIX_STEP: usize = 32;
/// Lines of another file shown around its cursor, at most.
pub const EXTRA_CHUNK_LINES: usize = 64;

/// Another open document, as the prompt may show it.
#[derive(Debug, Clone)]
pub struct OtherDocument {
    pub path: String,
    pub text: String,
}

/// The budgets of one prompt, in tokens.
#[derive(Debug, Clone, Copy)]
pub struct PromptBudget {
    pub prefix_tokens: usize,
    pub suffix_tokens: usize,
    /// The lines after the suffix, as a chunk of the same file ahead of the prompt.
    pub later_tokens: usize,
    pub extra_tokens: usize,
}

/// Lines the chunk of later lines may stay off the line after the suffix, to start where the
/// previous request's started.
pub const LATER_SLACK: usize = 4;

/// The prompt's parts for a cursor at byte `offset` of `text` (clamped to a char boundary),
/// and where its chunk of later lines starts, counted in bytes from the end of `text` (the
/// previous request's, `later_from_end`, is kept when it is near: typing above it does not move
/// it, and moving the cursor a few lines does not change the chunk, so the provider's cache
/// still holds the text before the cursor).
pub fn gather(
    path: &str,
    text: &str,
    offset: usize,
    others: &[OtherDocument],
    recent: &RecentEdits,
    later_from_end: Option<usize>,
    budget: PromptBudget,
) -> (FimInput, Option<usize>) {
    let offset = floor_boundary(text, offset);
    let (before, after) = text.split_at(offset);
    let start = prefix_start(before, budget.prefix_tokens * BYTES_PER_TOKEN);
    let end = offset + suffix_end(after, budget.suffix_tokens * BYTES_PER_TOKEN);
    let next_line = line_after(text, offset);
    // A suffix cut inside a line longer than its budget: the chunk starts at the next line.
    let natural = if starts_line(text, end) {
        end
    } else {
        line_after(text, end)
    };
    let later_start = later_start(text, next_line, natural, later_from_end);
    let later = whole_lines(&text[later_start..], budget.later_tokens * BYTES_PER_TOKEN);
    let first_line = lines_in(&before[..start]);
    let last_line = lines_in(&text[..end.max(later_start + later.len())]);
    let language = language_of(path);
    let mut edited = recent.for_prompt(path, first_line..last_line + 1);
    edited.retain(|chunk| language_of(&chunk.path) == language);
    let others: Vec<&OtherDocument> = others
        .iter()
        .filter(|other| language_of(&other.path) == language)
        .collect();
    let mut extra = extra_files(&edited, &others, budget.extra_tokens * BYTES_PER_TOKEN);
    let mut anchor = None;
    if !later.trim().is_empty() {
        extra.push(ExtraFile {
            path: path.to_owned(),
            text: later.to_owned(),
        });
        anchor = Some(text.len() - later_start);
    }
    let input = FimInput {
        path: path.to_owned(),
        prefix: before[start..].to_owned(),
        suffix: text[offset..end].to_owned(),
        extra,
    };
    (input, anchor)
}

/// Where the chunk of later lines starts: the line after the suffix (`natural`), or the
/// previous chunk's start (`from_end` bytes before the end) when that is a line start after the
/// cursor's line (`next_line` on) and within [`LATER_SLACK`] lines of `natural`.
fn later_start(text: &str, next_line: usize, natural: usize, from_end: Option<usize>) -> usize {
    let Some(previous) = from_end.and_then(|n| text.len().checked_sub(n)) else {
        return natural;
    };
    if previous < next_line || !starts_line(text, previous) {
        return natural;
    }
    let between = &text[previous.min(natural)..previous.max(natural)];
    if lines_in(between) > LATER_SLACK {
        natural
    } else {
        previous
    }
}

/// Whether byte `at` of `text` starts a line (the text's end counts: nothing follows it).
fn starts_line(text: &str, at: usize) -> bool {
    at == 0 || at >= text.len() || text.as_bytes()[at - 1] == b'\n'
}

/// Where the line after the one holding byte `at` starts (the text's end on the last line).
fn line_after(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |i| at + i + 1)
}

/// The whole lines at the start of `rest` within `max_bytes` (all of it when it fits).
fn whole_lines(rest: &str, max_bytes: usize) -> &str {
    if rest.len() <= max_bytes {
        return rest;
    }
    rest[..floor_boundary(rest, max_bytes)]
        .rfind('\n')
        .map_or("", |i| &rest[..=i])
}

fn lines_in(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count()
}

/// Where the shown text before the cursor starts: the earliest line start, on a multiple of
/// [`PREFIX_STEP`] lines, that keeps it within `max_bytes`.
fn prefix_start(before: &str, max_bytes: usize) -> usize {
    if before.len() <= max_bytes {
        return 0;
    }
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(before.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let fits = |start: usize| before.len() - start <= max_bytes;
    // The stepped starts first (a stable prompt), then any line start, then a cut mid-line.
    if let Some(&start) = line_starts
        .iter()
        .enumerate()
        .filter(|(i, _)| i % PREFIX_STEP == 0)
        .map(|(_, s)| s)
        .find(|&&s| fits(s))
    {
        return start;
    }
    if let Some(&start) = line_starts.iter().find(|&&s| fits(s)) {
        return start;
    }
    ceil_boundary(before, before.len() - max_bytes)
}

/// Where the shown text after the cursor ends: the last line end within `max_bytes` (the rest
/// of the cursor's line always).
fn suffix_end(after: &str, max_bytes: usize) -> usize {
    if after.len() <= max_bytes {
        return after.len();
    }
    let first_line = after.find('\n').map_or(after.len(), |i| i + 1);
    if first_line >= max_bytes {
        return floor_boundary(after, first_line.min(max_bytes.max(4096)));
    }
    after[..floor_boundary(after, max_bytes)]
        .rfind('\n')
        .map_or(first_line, |i| i + 1)
}

/// Chunks of other places within `max_bytes`: the places edited lately first (`edited`, newest
/// first; a chunk too long keeps the lines around its middle, where the edit was), then each
/// other open file's first lines (up to [`EXTRA_CHUNK_LINES`]) in path order. Laid out as the
/// files' first lines, then the edited chunks oldest first, so the same state gives the same
/// text on every keystroke and the newest edit stands nearest the cursor's file.
fn extra_files(
    edited: &[&EditedChunk],
    others: &[&OtherDocument],
    max_bytes: usize,
) -> Vec<ExtraFile> {
    let mut left = max_bytes;
    let mut chunks = Vec::new();
    for chunk in edited {
        let room = left.saturating_sub(chunk.path.len() + 2);
        let text = middle_lines(&chunk.text, room);
        if text.trim().is_empty() {
            break;
        }
        left -= text.len() + chunk.path.len() + 2;
        chunks.push(ExtraFile {
            path: chunk.path.clone(),
            text: text.to_owned(),
        });
    }
    chunks.reverse();
    let mut out = heads(others, left);
    out.extend(chunks);
    out
}

/// The lines around the middle of `text` that fit in `max_bytes` (whole lines).
fn middle_lines(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .filter(|&s| s < text.len())
        .chain(std::iter::once(text.len()))
        .collect();
    // starts[i]..starts[i + 1] is line i; keep lines lo..hi, dropping the farther end first.
    let middle = (starts.len() - 1) / 2;
    let (mut lo, mut hi) = (0, starts.len() - 1);
    while lo < hi && starts[hi] - starts[lo] > max_bytes {
        if hi - middle > middle - lo {
            hi -= 1;
        } else {
            lo += 1;
        }
    }
    &text[starts[lo]..starts[hi]]
}

/// Each other open file's first lines within `max_bytes`, in path order.
fn heads(others: &[&OtherDocument], max_bytes: usize) -> Vec<ExtraFile> {
    let mut files: Vec<&OtherDocument> = others.to_vec();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let mut left = max_bytes;
    let mut out = Vec::new();
    for file in files {
        let end = file
            .text
            .match_indices('\n')
            .nth(EXTRA_CHUNK_LINES - 1)
            .map_or(file.text.len(), |(i, _)| i + 1);
        let chunk = whole_lines(&file.text[..end], left.saturating_sub(file.path.len() + 2));
        if chunk.trim().is_empty() {
            break;
        }
        left -= chunk.len() + file.path.len() + 2;
        out.push(ExtraFile {
            path: file.path.clone(),
            text: chunk.to_owned(),
        });
    }
    out
}

/// Extensions of the languages without a grammar here whose files use each other's code (a C++
/// file includes C headers), and of components that hold TypeScript (Vue, Svelte, Astro), with
/// the family's name. The languages with a grammar are told by [`Language::from_path`].
const LANGUAGE_FAMILIES: &[(&str, &[&str])] = &[
    ("typescript", &["vue", "svelte", "astro"]),
    (
        "c",
        &[
            "c", "h", "cc", "cpp", "cxx", "c++", "hpp", "hh", "hxx", "h++", "ipp", "inl",
        ],
    ),
    ("shell", &["sh", "bash", "zsh"]),
    ("yaml", &["yml", "yaml"]),
    ("markdown", &["md", "markdown"]),
];

/// The language a path's file is in, as far as the prompt cares: the language of its grammar
/// ([`Language::from_path`]; TypeScript, TSX and JavaScript one), else its family in
/// [`LANGUAGE_FAMILIES`] or its extension; a file without an extension is its own name
/// (`Makefile`, `Dockerfile`). Places in files of another language stay out of the prompt
/// (Copilot's neighbouring tabs are the recent files of the same language): measured on the
/// completion bench, a file's first arrivals, with the last places edited in a file of another
/// language ahead of them, went wrong where the same prompts without them did not
/// (docs/editors.md).
pub fn language_of(path: &str) -> String {
    match Language::from_path(path) {
        Some(Language::TypeScript | Language::Tsx | Language::JavaScript) => {
            return "typescript".to_owned();
        }
        Some(language) if language.is_parsed() => return language.name().to_owned(),
        _ => {}
    }
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let extension = match name.rsplit_once('.') {
        Some((stem, extension)) if !stem.is_empty() => extension.to_ascii_lowercase(),
        _ => return name.to_owned(),
    };
    LANGUAGE_FAMILIES
        .iter()
        .find(|(_, extensions)| extensions.contains(&extension.as_str()))
        .map_or(extension, |(family, _)| (*family).to_owned())
}

pub(crate) fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

fn ceil_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset += 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::complete::recent::EditedChunk;

    fn paths_and_texts(input: &FimInput) -> Vec<(&str, &str)> {
        input
            .extra
            .iter()
            .map(|f| (f.path.as_str(), f.text.as_str()))
            .collect()
    }

    /// `gather` for a file alone: no other documents, no places edited, no previous chunk.
    fn alone(text: &str, at: usize, budget: PromptBudget) -> FimInput {
        gather("a", text, at, &[], &RecentEdits::default(), None, budget).0
    }

    const NONE: PromptBudget = PromptBudget {
        prefix_tokens: 10_000,
        suffix_tokens: 10_000,
        later_tokens: 0,
        extra_tokens: 0,
    };

    #[test]
    fn a_small_file_is_shown_whole_around_the_cursor() {
        let input = alone("def f():\n    return 1\n", 13, NONE);
        assert_eq!(input.prefix, "def f():\n    ");
        assert_eq!(input.suffix, "return 1\n");
    }

    #[test]
    fn the_prompt_start_stays_put_while_the_user_types() {
        let mut text: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let budget = PromptBudget {
            prefix_tokens: 200,
            suffix_tokens: 10,
            later_tokens: 0,
            extra_tokens: 0,
        };
        let first = alone(&text, text.len(), budget);
        assert!(first.prefix.len() <= 600);
        text.push_str("x = 1");
        let later = alone(&text, text.len(), budget);
        assert!(later.prefix.starts_with(&first.prefix), "the start moved");
    }

    #[test]
    fn the_suffix_ends_at_a_line_end_and_other_files_come_in_path_order() {
        let text = "a\nbbbbbbbbbb\ncccccccccccccccccccc\n";
        let budget = PromptBudget {
            prefix_tokens: 100,
            suffix_tokens: 5,
            later_tokens: 0,
            extra_tokens: 100,
        };
        let others = [
            OtherDocument {
                path: "z.py".into(),
                text: "z = 1\n".into(),
            },
            OtherDocument {
                path: "b.py".into(),
                text: "b = 2\n".into(),
            },
        ];
        let input = gather(
            "a.py",
            text,
            0,
            &others,
            &RecentEdits::default(),
            None,
            budget,
        )
        .0;
        assert_eq!(input.suffix, "a\nbbbbbbbbbb\n");
        let paths: Vec<&str> = input.extra.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["b.py", "z.py"]);
    }

    #[test]
    fn places_in_files_of_another_language_stay_out_of_the_prompt() {
        let mut recent = RecentEdits::default();
        for (path, text) in [
            ("web/app.ts", "export const retries = 3;\n"),
            ("docs/guide.md", "# Retries\n"),
            ("src/limits.py", "RETRIES = 3\n"),
        ] {
            recent.edited(EditedChunk {
                path: path.into(),
                first_line: 0,
                text: text.into(),
            });
        }
        let others = [
            OtherDocument {
                path: "web/client.js".into(),
                text: "import { retries } from './app';\n".into(),
            },
            OtherDocument {
                path: "src/stubs.pyi".into(),
                text: "def fetch(url: str) -> bytes: ...\n".into(),
            },
            OtherDocument {
                path: "Makefile".into(),
                text: "test:\n\tpytest\n".into(),
            },
        ];
        let budget = PromptBudget {
            prefix_tokens: 100,
            suffix_tokens: 10,
            later_tokens: 0,
            extra_tokens: 1000,
        };
        let python = gather("src/fetch.py", "x = 1\n", 0, &others, &recent, None, budget).0;
        let paths: Vec<&str> = python.extra.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["src/stubs.pyi", "src/limits.py"]);
        let script = gather("web/ui.TSX", "", 0, &others, &recent, None, budget).0;
        let paths: Vec<&str> = script.extra.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["web/client.js", "web/app.ts"]);
        assert_eq!(language_of("Makefile"), "Makefile");
        assert_eq!(language_of("a/.bashrc"), ".bashrc");
        assert_eq!(language_of("x.hpp"), language_of("y.c"));
        assert_eq!(language_of("App.vue"), language_of("main.ts"));
        assert_eq!(language_of("Cargo.lock"), language_of("Cargo.toml"));
        assert_ne!(language_of("x.rs"), language_of("Cargo.toml"));
    }

    #[test]
    fn offsets_inside_a_character_or_past_the_end_are_clamped() {
        let input = alone("é\n", 1, NONE);
        assert_eq!(input.prefix, "");
        let input = alone("é\n", 99, NONE);
        assert_eq!(input.suffix, "");
        // A suffix budget that ends inside a character after the first line (it panicked).
        let budget = PromptBudget {
            suffix_tokens: 1,
            ..NONE
        };
        let input = alone("x\n😀😀\n", 0, budget);
        assert_eq!(input.suffix, "x\n");
    }

    #[test]
    fn a_place_edited_elsewhere_comes_after_the_other_files_and_not_where_the_user_types() {
        let text: String = (0..300).map(|i| format!("line {i}\n")).collect();
        let mut recent = RecentEdits::default();
        let chunk = |first_line: usize, text: &str| EditedChunk {
            path: "a.py".into(),
            first_line,
            text: text.into(),
        };
        recent.edited(chunk(10, "def edited_far_above():\n    pass\n"));
        recent.edited(chunk(290, "line 290\n"));
        let others = [OtherDocument {
            path: "b.py".into(),
            text: "b = 2\n".into(),
        }];
        let budget = PromptBudget {
            prefix_tokens: 100,
            suffix_tokens: 10,
            later_tokens: 0,
            extra_tokens: 100,
        };
        let cursor = text.find("line 295").unwrap();
        let input = gather("a.py", &text, cursor, &others, &recent, None, budget).0;
        let extra = paths_and_texts(&input);
        // Line 290 is in the prompt already (the place typed in); line 10 is far above it.
        assert_eq!(
            extra,
            [
                ("b.py", "b = 2\n"),
                ("a.py", "def edited_far_above():\n    pass\n")
            ]
        );
        // The same state, one keystroke later: the same text before the prefix.
        let mut typed = text.clone();
        typed.insert(cursor, 'x');
        let later = gather("a.py", &typed, cursor + 1, &others, &recent, None, budget).0;
        assert_eq!(later.extra, input.extra);
    }

    #[test]
    fn the_lines_after_the_suffix_come_last_as_a_chunk_of_the_same_file_and_stay_while_typing() {
        let text: String = (0..100).map(|i| format!("line {i:02}\n")).collect();
        let mut recent = RecentEdits::default();
        // An edit the later chunk shows already is not repeated.
        recent.edited(EditedChunk {
            path: "a.rs".into(),
            first_line: 60,
            text: "line 60\n".into(),
        });
        let others = [OtherDocument {
            path: "b.rs".into(),
            text: "b\n".into(),
        }];
        let budget = PromptBudget {
            prefix_tokens: 100,
            suffix_tokens: 6,
            later_tokens: 35,
            extra_tokens: 100,
        };
        let cursor = text.find("line 50").unwrap();
        let input = gather("a.rs", &text, cursor, &others, &recent, None, budget).0;
        assert_eq!(input.suffix, "line 50\nline 51\n");
        let extra = paths_and_texts(&input);
        // 105 bytes: the 13 whole lines after the suffix that fit, cut at a line end.
        let later: String = (52..65).map(|i| format!("line {i:02}\n")).collect();
        assert_eq!(extra, [("b.rs", "b\n"), ("a.rs", later.as_str())]);
        let mut typed = text.clone();
        typed.insert_str(cursor, "let x");
        let later_input = gather("a.rs", &typed, cursor + 5, &others, &recent, None, budget).0;
        assert_eq!(
            later_input.extra, input.extra,
            "a keystroke changed the chunk"
        );
        // At the end of the file there is nothing later.
        let end = gather("a.rs", &text, text.len(), &[], &recent, None, budget).0;
        assert!(
            end.extra
                .iter()
                .all(|f| f.path != "a.rs" || f.text.contains("line 60"))
        );
        assert_eq!(whole_lines("abc\ndef", 5), "abc\n");
        assert_eq!(whole_lines("abcdef", 3), "");
    }

    #[test]
    fn the_later_chunk_stays_where_it_was_while_the_cursor_moves_a_few_lines_or_writes_on() {
        let text: String = (0..200).map(|i| format!("line {i:03}\n")).collect();
        let budget = PromptBudget {
            prefix_tokens: 100,
            suffix_tokens: 6,
            later_tokens: 30,
            extra_tokens: 0,
        };
        let at = |text: &str, line: usize, previous: Option<usize>| {
            let cursor = text.find(&format!("line {line:03}")).unwrap();
            let (input, anchor) = gather(
                "a",
                text,
                cursor,
                &[],
                &RecentEdits::default(),
                previous,
                budget,
            );
            (input.extra.last().map(|f| f.text.clone()), anchor)
        };
        // At line 100: the suffix shows lines 100–101, the chunk starts at 102.
        let (chunk, anchor) = at(&text, 100, None);
        assert!(chunk.as_deref().unwrap().starts_with("line 102\n"));
        // One line down (the chunk still starts below the cursor's line), or three up: the same
        // chunk.
        assert_eq!(at(&text, 101, anchor), (chunk.clone(), anchor));
        assert_eq!(at(&text, 97, anchor), (chunk.clone(), anchor));
        // Past its start the chunk moves: it never shows the cursor's line.
        let (moved, _) = at(&text, 102, anchor);
        assert!(moved.as_deref().unwrap().starts_with("line 104\n"));
        // Far away it starts after the suffix again.
        let (far, _) = at(&text, 150, anchor);
        assert!(far.as_deref().unwrap().starts_with("line 152\n"));
        // Lines written above it (Enter, typing) do not move it.
        let cursor = text.find("line 100").unwrap();
        let mut written = text.clone();
        written.insert_str(cursor, "let a = 1;\nlet b = 2;\n");
        let (input, again) = gather(
            "a",
            &written,
            cursor + 22,
            &[],
            &RecentEdits::default(),
            anchor,
            budget,
        );
        assert_eq!(input.extra.last().map(|f| f.text.clone()), chunk);
        assert_eq!(again, anchor);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

        /// Any text, cursor, budgets and previous chunk: no panic, the prefix and the suffix
        /// meet at the cursor, and the chunk of later lines is whole lines after the cursor's.
        #[test]
        fn any_text_gathers_without_panic_and_the_later_chunk_is_below_the_cursor(
            pieces in proptest::collection::vec(0usize..6, 0..60),
            at in 0usize..300,
            anchor in proptest::option::of(0usize..300),
            suffix_tokens in 0usize..20,
            later_tokens in 0usize..40,
        ) {
            const PIECES: &[&str] = &["x", "é", "\n", "  ", "😀", "ab\n"];
            let text: String = pieces.iter().map(|&i| PIECES[i]).collect();
            let budget = PromptBudget { prefix_tokens: 10, suffix_tokens, later_tokens, extra_tokens: 0 };
            let (input, from_end) = gather("a", &text, at, &[], &RecentEdits::default(), anchor, budget);
            let cursor = floor_boundary(&text, at);
            proptest::prop_assert!(text[..cursor].ends_with(&input.prefix));
            proptest::prop_assert!(text[cursor..].starts_with(&input.suffix));
            if let Some(from_end) = from_end {
                let start = text.len() - from_end;
                let cursor_line_end = text[cursor..].find('\n').map_or(text.len(), |i| cursor + i + 1);
                proptest::prop_assert!(start >= cursor_line_end);
                proptest::prop_assert!(start == 0 || text[..start].ends_with('\n'));
                let chunk = &input.extra.last().unwrap().text;
                proptest::prop_assert!(text[start..].starts_with(chunk.as_str()));
                proptest::prop_assert!(chunk.ends_with('\n') || start + chunk.len() == text.len());
            }
        }
    }

    #[test]
    fn a_chunk_too_long_keeps_the_lines_around_its_middle() {
        let text = "l0\nl1\nl2\nl3\nl4\n";
        assert_eq!(middle_lines(text, 100), text);
        assert_eq!(middle_lines(text, 9), "l1\nl2\nl3\n");
        assert_eq!(middle_lines(text, 3), "l2\n");
        assert_eq!(middle_lines(text, 2), "");
        assert_eq!(middle_lines("no newline at all", 5), "");
    }
}
