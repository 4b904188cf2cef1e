//! A step that only renames one identifier is done by the server, without a model call.
//!
//! Measured on the develop bench with Qwen2.5-Coder-1.5B: asked to "rename the function
//! low_stock to items_below in inventory/core.py and in tests/test_core.py", the model rewrote
//! both files whole and dropped a parameter (`def items_below(threshold=5)`) and the test file's
//! `if __name__ == "__main__"` block, then spent nine calls and 500 s not recovering. A rename is
//! exact work an editor's rename does in milliseconds: replace the name where it stands as a
//! whole word in every source file of the workspace that has it, then run the check. When the
//! check passes, the step is done with no model call; when it fails (a name that is also a
//! word of other code, a language construct the word match cannot see), the working copy goes
//! back to the step's snapshot and the model does the step as usual.
//!
//! Only a request that is a rename and nothing else takes this path ("rename X to Y in a.py
//! and b.py"); "rename X to Y and add a test" is model work.

use super::explore::is_source;
use super::step::StepSpec;
use super::{DevelopFailure, Run, StepReport, StepStatus};

/// The largest file the rename reads (bytes); a larger one is left to the model.
const MAX_FILE_BYTES: usize = 1 << 20;

impl Run<'_> {
    /// Renames by the server when `spec` asks only for a rename and the check passes after it;
    /// `None` leaves the step to the model (the working copy as it was).
    pub(super) async fn rename_by_server(
        &mut self,
        spec: &StepSpec,
    ) -> Result<Option<StepReport>, DevelopFailure> {
        let Some((old, new)) = rename_request(&spec.text) else {
            return Ok(None);
        };
        let snapshot = {
            let s = self.session();
            (s.copy.clone(), s.ledger.clone())
        };
        let mut changed = Vec::new();
        let mut places = 0;
        let files: Vec<String> = self
            .workspace_files()
            .into_iter()
            .filter(|f| in_scope(f))
            .collect();
        // Scanned as they are on disk (an editor's client is not asked for every file); the
        // files that name either word are read again as the editor has them, all at once.
        let named: Vec<String> = files
            .into_iter()
            .filter(|rel| {
                self.scan_text(rel).is_some_and(|t| {
                    !word_positions(&t, &old).is_empty() || !word_positions(&t, &new).is_empty()
                })
            })
            .collect();
        self.prefetch(&named);
        let mut texts = Vec::new();
        for rel in named {
            let Some(text) = self.read_text(&rel) else {
                continue;
            };
            if text.len() > MAX_FILE_BYTES {
                continue;
            }
            // The new name already in use: a rename could merge two things into one.
            if !word_positions(&text, &new).is_empty() {
                return Ok(None);
            }
            let at = word_positions(&text, &old);
            if !at.is_empty() {
                texts.push((rel, text, at));
            }
        }
        if texts.is_empty() {
            return Ok(None);
        }
        let mut tests_renamed: Vec<String> = Vec::new();
        for (rel, text, at) in &texts {
            let mut edits: Vec<(usize, usize, String)> =
                at.iter().map(|&i| (i, old.len(), new.clone())).collect();
            for (i, len, name, was) in test_names(text, &old, &new) {
                if !tests_renamed.contains(&was) {
                    tests_renamed.push(was);
                }
                edits.push((i, len, name));
            }
            edits.sort_by_key(|e| e.0);
            let renamed = replace_at(text, &edits);
            if self.write_text(rel, text, &renamed) {
                places += at.len();
                changed.push(rel.clone());
            }
        }
        let runs = self.check_and_lint().await?;
        if !runs.iter().all(|r| r.passed) {
            let s = self.session();
            s.copy = snapshot.0;
            s.ledger = snapshot.1;
            return Ok(None);
        }
        Ok(Some(StepReport {
            name: spec.name.clone(),
            text: spec.text.clone(),
            status: StepStatus::Done,
            attempts: 0,
            model: "server".to_owned(),
            notes: vec![format!(
                "renamed `{old}` to `{new}` in {places} place{} ({}){} without a model call; the \
                 check passes",
                if places == 1 { "" } else { "s" },
                changed.join(", "),
                if tests_renamed.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", and the tests named after it ({})",
                        tests_renamed.join(", ")
                    )
                }
            )],
            changed,
            error: None,
        }))
    }
}

/// The source files a rename looks at: code (a package's `__init__.py` included, it re-exports
/// names), not vendored or built files.
fn in_scope(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let built = [
        "node_modules/",
        "target/",
        "dist/",
        "build/",
        ".git/",
        "vendor/",
    ]
    .iter()
    .any(|d| rel.starts_with(d) || rel.contains(&format!("/{d}")));
    !built && (is_source(rel) || name == "__init__.py")
}

/// The old and new name of a request that asks for one rename and nothing else: "rename the
/// function low_stock to items_below in inventory/core.py and in tests/test_core.py",
/// "rename `truncateSlug` to `shortenSlug`". `None` for anything more.
pub(super) fn rename_request(text: &str) -> Option<(String, String)> {
    let text = text.trim().trim_end_matches('.');
    let lower = text.to_lowercase();
    let start = lower.find("rename ")?;
    // Nothing before "rename" but a polite opening.
    if !lower[..start]
        .split_whitespace()
        .all(|w| matches!(w, "please" | "now" | "then" | "just"))
    {
        return None;
    }
    let mut words = text[start + "rename ".len()..]
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '`' || c == '"' || c == '\'' || c == ','));
    let mut old = words.next()?;
    while matches!(
        old.to_lowercase().as_str(),
        "the"
            | "function"
            | "method"
            | "class"
            | "variable"
            | "constant"
            | "type"
            | "struct"
            | "field"
            | "enum"
            | "trait"
            | "interface"
            | "fn"
            | "def"
            | "const"
            | "identifier"
    ) {
        old = words.next()?;
    }
    let old = old.trim_end_matches("()");
    if words.next()?.to_lowercase() != "to" {
        return None;
    }
    let new = words.next()?.trim_end_matches("()");
    if !is_identifier(old) || !is_identifier(new) || old == new {
        return None;
    }
    // What follows may only say where: "in a.py and in tests/b.py", "everywhere", "across
    // the project".
    for w in words {
        let w = w.to_lowercase();
        let place = matches!(
            w.as_str(),
            "in" | "and"
                | "both"
                | "the"
                | "files"
                | "file"
                | "everywhere"
                | "across"
                | "all"
                | "its"
                | "callers"
                | "uses"
                | "project"
                | "codebase"
                | "workspace"
                | "where"
                | "it"
                | "is"
                | "used"
                | "of"
                | "&"
        ) || w.contains('/')
            || w.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
                    && !ext.is_empty()
            });
        if !place {
            return None;
        }
    }
    Some((old.to_owned(), new.to_owned()))
}

/// A word that can name a function or variable in the languages develop edits.
pub(super) fn is_identifier(w: &str) -> bool {
    w.len() >= 2
        && w.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
        && w.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Byte offsets where `name` stands as a whole word (not part of a longer identifier).
fn word_positions(text: &str, name: &str) -> Vec<usize> {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
    text.match_indices(name)
        .filter(|(i, _)| {
            !ident(text[..*i].chars().next_back()) && !ident(text[i + name.len()..].chars().next())
        })
        .map(|(i, _)| i)
        .collect()
}

/// The tests named after the function a rename renames, as a user renames them with it:
/// `test_low_stock` (and `test_low_stock_empty`) become `test_items_below`, `testTruncateSlug`
/// becomes `testShortenSlug` — a test name left behind says the old name (the develop bench's
/// check for py-rename, "no `low_stock` left", failed on `def test_low_stock`). Only names
/// that start with `test` and then the old name: a name that merely contains it (`word_count`
/// when renaming `count`) is another thing. A new test name already in use is left alone.
/// Returns (offset, length, replacement, the old test name) for each place.
fn test_names(text: &str, old: &str, new: &str) -> Vec<(usize, usize, String, String)> {
    let capital = |w: &str| {
        let mut c = w.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect::<String>())
            .unwrap_or_default()
    };
    let forms = [
        (format!("test_{old}"), format!("test_{new}"), '_'),
        (
            format!("test{}", capital(old)),
            format!("test{}", capital(new)),
            'A',
        ),
    ];
    let mut out = Vec::new();
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (ident(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                start = None;
                let id = &text[s..i];
                for (was, now, joint) in &forms {
                    let Some(rest) = id.strip_prefix(was.as_str()) else {
                        continue;
                    };
                    // The name ends there, or goes on as a new word (`_empty`, `Empty`).
                    let next = rest.chars().next();
                    let goes_on = match joint {
                        '_' => next.is_none_or(|c| c == '_'),
                        _ => next.is_none_or(|c| c.is_uppercase() || c.is_ascii_digit()),
                    };
                    let renamed = format!("{now}{rest}");
                    if goes_on && word_positions(text, &renamed).is_empty() {
                        out.push((s, was.len(), now.clone(), id.to_owned()));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// `text` with each (offset, length, replacement) of `edits` (ascending, not overlapping) made.
fn replace_at(text: &str, edits: &[(usize, usize, String)]) -> String {
    let mut out = String::with_capacity(text.len() + edits.len() * 8);
    let mut last = 0;
    for (i, len, new) in edits {
        out.push_str(&text[last..*i]);
        out.push_str(new);
        last = i + len;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_that_is_only_a_rename() {
        let pair = |a: &str, b: &str| Some((a.to_owned(), b.to_owned()));
        assert_eq!(
            rename_request(
                "rename the function low_stock to items_below in inventory/core.py and in tests/test_core.py"
            ),
            pair("low_stock", "items_below")
        );
        assert_eq!(
            rename_request(
                "rename truncateSlug to shortenSlug in src/slug.ts and src/slug.test.ts"
            ),
            pair("truncateSlug", "shortenSlug")
        );
        assert_eq!(
            rename_request("Please rename `word_count()` to `count_words` everywhere."),
            pair("word_count", "count_words")
        );
        assert_eq!(
            rename_request("rename formatTodo to renderTodo in src/todo.js and src/cli.js"),
            pair("formatTodo", "renderTodo")
        );
        for not_only in [
            "rename low_stock to items_below and add a test for it",
            "rename low_stock to items_below, then make it take a threshold",
            "add a flag, then rename main to run",
            "rename the file a.py to b.py",
            "rename x to x",
            "rename the variables to something clearer",
        ] {
            assert_eq!(rename_request(not_only), None, "{not_only}");
        }
    }

    #[test]
    fn only_whole_words_are_renamed() {
        let text = "def low_stock(items):\n    return low_stock_all(items) + my_low_stock\n\nlow_stock([])  # low_stock\n";
        let at = word_positions(text, "low_stock");
        assert_eq!(at.len(), 3);
        let edits: Vec<_> = at
            .iter()
            .map(|&i| (i, "low_stock".len(), "items_below".to_owned()))
            .collect();
        assert_eq!(
            replace_at(text, &edits),
            "def items_below(items):\n    return low_stock_all(items) + my_low_stock\n\nitems_below([])  # items_below\n"
        );
        assert!(word_positions("const $low = 1;", "low").is_empty());
        assert!(in_scope("textkit/__init__.py") && in_scope("src/lib.rs"));
        assert!(!in_scope("node_modules/x/index.js") && !in_scope("README.md"));
    }

    #[test]
    fn the_tests_named_after_the_function_are_renamed_with_it() {
        let py = "from inventory.core import low_stock\n\nclass CoreTest(unittest.TestCase):\n    \
                  def test_low_stock(self):\n        pass\n\n    def test_low_stock_empty(self):\n        \
                  pass\n\n    def test_low_stocks(self):\n        pass\n\n    def test_my_low_stock(self):\n        pass\n";
        let got: Vec<_> = test_names(py, "low_stock", "items_below")
            .into_iter()
            .map(|(i, len, new, was)| (py[i..i + len].to_owned(), new, was))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "test_low_stock".into(),
                    "test_items_below".into(),
                    "test_low_stock".into()
                ),
                (
                    "test_low_stock".into(),
                    "test_items_below".into(),
                    "test_low_stock_empty".into()
                ),
            ]
        );
        let js = "test('truncateSlug cuts', () => {});\nfunction testTruncateSlugLong() {}\n\
                  function testTruncateSlugs() {}\n";
        let got: Vec<_> = test_names(js, "truncateSlug", "shortenSlug")
            .into_iter()
            .map(|(_, _, new, was)| (new, was))
            .collect();
        assert_eq!(
            got,
            vec![("testShortenSlug".into(), "testTruncateSlugLong".into())]
        );
        // Renaming `count` leaves `word_count` and a `test_count_words` alone when
        // `test_total_words` exists already.
        let rs = "fn word_count() {}\nfn test_count_words() {}\nfn test_total_words() {}\n";
        assert!(test_names(rs, "count", "total").is_empty());
    }
}
