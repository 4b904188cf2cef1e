//! What a request (or a plan step) asks for, read from its words: a test to write, the tests to
//! change, flags and functions to add, a file to create, tests that fail now. Each rule is
//! measured on request texts nobody here wrote (`fixtures/develop/requests/corpus.json`:
//! exercise instructions, issue titles and bodies, commit messages of public repositories,
//! each with the verdict a reader gives it), and each has no false positive there
//! (`docs/develop.md`, "Rules that read the request"): a rule that reads words where the request
//! only mentions them costs a model call for nothing, or holds a step back from being done. The
//! tests are what decide a step (`step.rs`); these rules only name what the tests cannot show.
//!
//! A rule reads words as a sentence has them: a verb that adds (`add`, `write`, `with`, …)
//! followed closely by what it adds. A word on its own ("unit tests" in "as they may be
//! referenced from other code like unit tests", "column(s)" in an exercise's text) asks for
//! nothing.

/// The words of `text`, lowercased, split at whitespace, with the punctuation around each word
/// trimmed (a file name such as `tests.toml` stays one word).
fn words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
                .trim_start_matches('-')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// The sentences of `text`: split at line breaks and at `. `, `? `, `! `, `; `.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(i) = rest
            .find([';', '.', '?', '!'])
            .filter(|&i| rest[i + 1..].chars().next().is_none_or(char::is_whitespace))
        {
            out.push(&rest[..i]);
            rest = &rest[i + 1..];
        }
        out.push(rest);
    }
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// Verbs that ask for something to be added.
const ADDS: &[&str] = &[
    "add",
    "adds",
    "added",
    "adding",
    "write",
    "writes",
    "writing",
    "written",
    "create",
    "creates",
    "created",
    "creating",
    "with",
    "include",
    "includes",
    "including",
];

/// Words that may stand between such a verb and the test it adds.
const TEST_FILLER: &[&str] = &[
    "a",
    "an",
    "the",
    "some",
    "more",
    "new",
    "unit",
    "integration",
    "regression",
    "basic",
    "additional",
    "another",
    "its",
    "their",
    "own",
    "missing",
    "matching",
    "one",
    "two",
    "few",
    "several",
    "simple",
    "small",
    "and",
    "doc",
    "e2e",
    "pytest",
    "jest",
    "mocha",
    "vitest",
    "junit",
    "rspec",
];

/// Words that turn a verb that adds into one that does not.
const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "don't",
    "dont",
    "doesn't",
    "without",
    "cannot",
    "can't",
    "needn't",
    "shouldn't",
    "won't",
];

/// Whether `word` names tests (not a file such as `tests.toml`, not `test_x`).
fn is_test_word(word: &str) -> bool {
    matches!(
        word,
        "test" | "tests" | "testcase" | "testcases" | "doctest" | "doctests" | "unittest"
    )
}

/// Whether a step's text asks for a test to be written: a verb that adds (`add`, `write`,
/// `create`, `with`, `including`) followed by the test within a few words that only qualify it
/// ("with a unit test", "add some more tests", "with unit and integration tests"); `and`
/// followed by an article ("add item_count(items) and a unit test for it"); not after a
/// negation ("not include tests", "don't add tests").
pub(super) fn asks_for_test(text: &str) -> bool {
    sentences(text).into_iter().any(|s| {
        let w = words(s);
        w.iter().enumerate().any(|(i, word)| {
            is_test_word(word)
                && (1..=5).any(|back| {
                    let Some(j) = i.checked_sub(back) else {
                        return false;
                    };
                    let between = &w[j + 1..i];
                    // "and" adds only what it introduces ("and a unit test", "and pytest
                    // tests"), not a list's last item ("docs and tests").
                    let verb = ADDS.contains(&w[j].as_str())
                        || (w[j] == "and" && between.first().is_some_and(|b| b != "and"));
                    // "We opted to not include tests for degenerate triangles" (exercism's
                    // triangle) says the opposite.
                    let negation = |k: usize| NEGATIONS.contains(&w[k].as_str());
                    let negated = (j >= 1 && negation(j - 1))
                        || (j >= 2 && w[j - 1] == "to" && negation(j - 2));
                    verb && !negated && between.iter().all(|b| TEST_FILLER.contains(&b.as_str()))
                })
        })
    })
}

/// Verbs that change what is there.
const CHANGES: &[&str] = &[
    "update",
    "updates",
    "updated",
    "change",
    "changes",
    "changed",
    "edit",
    "edits",
    "adjust",
    "adjusts",
    "move",
    "moves",
    "moved",
    "rename",
    "renames",
    "renamed",
    "parametrize",
    "parameterize",
    "parametrized",
    "parameterized",
    "regenerate",
    "regenerated",
    "restore",
    "restores",
    "restored",
    "sync",
    "synced",
    "rewrite",
];

/// Whether a step's text asks to change the tests themselves: to write one, to rename what
/// they use, or a verb that changes followed within two words by the tests or a test's name
/// ("update the tests", "parametrize deprecation tests", "restore `test_echo_color_flag`").
pub(super) fn changes_tests(text: &str) -> bool {
    if asks_for_test(text) {
        return true;
    }
    sentences(text).into_iter().any(|s| {
        let w = words(s);
        let renames = w
            .iter()
            .any(|x| matches!(x.as_str(), "rename" | "renames" | "renaming"));
        renames
            || w.iter().enumerate().any(|(i, word)| {
                let names_tests =
                    is_test_word(word) || word.starts_with("test_") || word.ends_with("_test");
                names_tests
                    && (1..=3).any(|back| {
                        i.checked_sub(back)
                            .is_some_and(|j| CHANGES.contains(&w[j].as_str()))
                    })
            })
    })
}

/// Verbs that add a command-line flag.
const ADDS_FLAG: &[&str] = &[
    "add",
    "adds",
    "added",
    "adding",
    "new",
    "support",
    "supports",
    "introduce",
    "introduces",
    "accept",
    "accepts",
    "implement",
    "implements",
];

/// The command-line flags a step asks to add (`--quiet`, `--dry-run`): in a sentence that says
/// "flag", "option", "argument" or "switch" and has a verb that adds one ("add", "new",
/// "support", …), the words there that start with two dashes. None from a sentence that fixes,
/// removes, renames or documents a flag ("fix regression with `--line-buffered` flag").
pub(super) fn asked_flags(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in sentences(text) {
        let w = words(s);
        let has = |list: &[&str]| w.iter().any(|x| list.contains(&x.as_str()));
        if !has(&[
            "flag",
            "flags",
            "option",
            "options",
            "argument",
            "arguments",
            "switch",
        ]) || !has(ADDS_FLAG)
            || has(&[
                "rename",
                "renames",
                "remove",
                "removes",
                "delete",
                "deletes",
                "replace",
                "replaces",
                "drop",
                "drops",
                "fix",
                "fixes",
                "disable",
                "disables",
                "deprecate",
                "clarify",
                "document",
            ])
        {
            continue;
        }
        for (i, _) in s.match_indices("--") {
            if s[..i].chars().next_back().is_some_and(|c| {
                !c.is_whitespace() && c != '`' && c != '"' && c != '\'' && c != '('
            }) {
                continue;
            }
            let name: String = s[i + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            let name = name.trim_end_matches('-');
            if name.len() >= 2 && name.starts_with(|c: char| c.is_ascii_alphabetic()) {
                let flag = format!("--{name}");
                if !out.contains(&flag) {
                    out.push(flag);
                }
            }
        }
    }
    out
}

/// Verbs that add a function.
const ADDS_FN: &[&str] = &[
    "add",
    "adds",
    "added",
    "adding",
    "implement",
    "implements",
    "write",
    "define",
    "defines",
    "create",
    "creates",
    "export",
    "exports",
];

/// Words that may stand between such a verb and the function's name.
const FN_FILLER: &[&str] = &[
    "a", "an", "the", "new", "function", "method", "helper", "public", "pub", "fn", "def",
    "static", "async", "free", "private", "called", "named", "class", "exported",
];

/// Words that say the name that follows is a function's.
const FN_WORDS: &[&str] = &["function", "method", "helper", "fn", "def"];

/// Functions a step asks to add or implement, by name: `name(` right after a verb that adds
/// ("add a function double(x: i32)", "implement `primes(limit)`"), or a backticked `fn name` /
/// `def name` / `function name`. None for a rename or a removal, where a name is meant to go;
/// a word before `(` elsewhere ("the best hand(s)", "aaa(@exp, …)") is no function to add.
pub(super) fn asked_names(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    if ["rename", "remove", "delete", "replace"]
        .iter()
        .any(|w| lower.contains(w))
    {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        let ok = name.len() >= 3 && super::rename::is_identifier(name);
        if ok && !out.iter().any(|o| o == name) {
            out.push(name.to_owned());
        }
    };
    for s in sentences(text) {
        for (i, _) in s.match_indices('(') {
            let start = s[..i]
                .rfind(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .map_or(0, |p| p + 1);
            if start == i || (start > 0 && s[..start].ends_with('.')) {
                continue;
            }
            let before = words(&s[..start]);
            // A verb that adds, or "with" and a word that says function ("with a function
            // average_word_length(", "with pub fn quote(", not "split it with words()").
            let asked = (1..=4).any(|back| {
                before.len().checked_sub(back).is_some_and(|j| {
                    let between = &before[j + 1..];
                    let verb = ADDS_FN.contains(&before[j].as_str())
                        || (before[j] == "with"
                            && between.iter().any(|b| FN_WORDS.contains(&b.as_str())));
                    verb && between.iter().all(|b| FN_FILLER.contains(&b.as_str()))
                })
            });
            if asked {
                push(&s[start..i]);
            }
        }
    }
    for name in defined_in_code_spans(text) {
        push(&name);
    }
    out
}

/// The names a backticked span defines (`fn name`, `def name`, `function name`, …).
pub(super) fn defined_in_code_spans(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for span in text.split('`').skip(1).step_by(2) {
        let span = span.trim();
        for kw in [
            "pub fn ",
            "fn ",
            "async def ",
            "def ",
            "function ",
            "export function ",
        ] {
            if let Some(rest) = span.strip_prefix(kw) {
                names.push(
                    rest.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect(),
                );
            }
        }
    }
    names
}

/// Words that may stand between "create" and the file it creates.
const FILE_FILLER: &[&str] = &[
    "a", "an", "the", "new", "empty", "separate", "test", "small",
];

/// Whether a text says to create a file: "create" (or "add") followed by a file, module,
/// package or folder, or by a path (`Create `stats.py` with a mean function`, "add a module
/// src/priority.js"), or "new file", "new module", "new test file", "new package".
pub(super) fn says_create(text: &str) -> bool {
    let lower = text.to_lowercase();
    if [
        "new file",
        "new module",
        "new test file",
        "new test module",
        "new package",
    ]
    .iter()
    .any(|p| lower.contains(p))
    {
        return true;
    }
    sentences(text).into_iter().any(|s| {
        let w = words(s);
        w.iter().enumerate().any(|(i, word)| {
            let creates = matches!(word.as_str(), "create" | "creates" | "creating");
            let adds = matches!(word.as_str(), "add" | "adds" | "adding");
            if !creates && !adds {
                return false;
            }
            let mut rest = w[i + 1..]
                .iter()
                .skip_while(|x| FILE_FILLER.contains(&x.as_str()));
            rest.next().is_some_and(|next| {
                matches!(
                    next.as_str(),
                    "file" | "files" | "module" | "package" | "folder" | "directory"
                ) || (creates && crate::edit::whole::looks_like_path(next))
            })
        })
    })
}

/// Whether a request says that tests fail now ("the test finds_the_longest_word fails: fix
/// longest_word", "fix the failing tests", "test_total fails"): a word of failing (`fail`,
/// `fails`, `failing`, `failed`, `broken`) and a word of testing (`test`, `tests`, a
/// `test_…` name) in one sentence.
pub(super) fn says_tests_fail(request: &str) -> bool {
    sentences(request).into_iter().any(|s| {
        let lower = s.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty())
            .collect();
        let fails = words
            .iter()
            .any(|w| matches!(*w, "fail" | "fails" | "failing" | "failed" | "broken"));
        let tests = words
            .iter()
            .any(|w| w.starts_with("test") || w.ends_with("_test") || w.ends_with("tests"));
        fails && tests
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_step_asks_for() {
        let double = "Add a function double(x: i32) -> i32 to src/lib.rs that returns twice x, with a unit test.";
        assert!(asks_for_test(double));
        assert_eq!(asked_names(double), ["double"]);
        assert_eq!(
            asked_names("Add `pub fn line_count` to `src/lib.rs`, called as self.count(x)."),
            ["line_count"]
        );
        assert!(asked_names("rename word_count(text) to count_words").is_empty());
        assert!(asked_names("Pick the best hand(s) from a list of poker hands.").is_empty());
        assert!(!asks_for_test(
            "the test test_total_value fails: fix total_value"
        ));
        // The Aider benchmark's suffix mentions unit tests; it asks for none.
        assert!(!asks_for_test(
            "Use the above instructions to modify the supplied files: bob.py. Don't change the \
             names of existing functions or classes, as they may be referenced from other code \
             like unit tests, etc."
        ));
        assert!(asks_for_test(
            "add item_count(items) and a unit test for it in tests/test_core.py"
        ));
        assert!(!asks_for_test("Updated & Added tests.toml files"));
        assert!(!changes_tests(
            "Implement is_pangram in pangram.py. The tests are in pangram_test.py."
        ));
        assert!(changes_tests(
            "rename the function low_stock to items_below in inventory/core.py and in tests/test_core.py"
        ));
        assert!(changes_tests(
            "add item_count(items) and a unit test for it in tests/test_core.py"
        ));
        assert_eq!(
            asked_flags(
                "add a --quiet flag to src/main.rs: when it is given first, print only the count"
            ),
            ["--quiet"]
        );
        assert_eq!(
            asked_flags("Add an option `--dry-run` (and --top N) to cli.py"),
            ["--dry-run", "--top"]
        );
        assert!(asked_flags("remove the --quiet flag").is_empty());
        assert!(asked_flags("searcher: fix regression with `--line-buffered` flag").is_empty());
        assert!(asked_flags("fix the off-by-one -- the loop ends early").is_empty());
        // The develop bench's requests (`fixtures/develop/bench/tasks.json`).
        assert!(asks_for_test(
            "add a pub fn char_count(text: &str) -> usize to src/lib.rs that counts the \
             characters of text, with a doc comment and a unit test"
        ));
        assert!(asks_for_test(
            "add a module textkit/readability.py with a function average_word_length(text) that \
             returns the mean length of the words of text (split it with words() from \
             textkit/words.py; 0.0 for a text without words), and pytest tests for it in \
             tests/test_readability.py"
        ));
        assert!(!asks_for_test("Update the docs and tests"));
        assert!(!asks_for_test(
            "We opted to not include tests for degenerate triangles in this exercise."
        ));
        assert!(!asks_for_test("Fix the parser; don't add tests for it"));
        assert!(!asks_for_test("It was decided not to write tests for this"));
        assert!(asks_for_test("Do not change the parser. Add tests for it"));
        assert_eq!(
            asked_names(
                "add a module textkit/readability.py with a function average_word_length(text) \
                 (split it with words() from textkit/words.py)"
            ),
            ["average_word_length"]
        );
        assert_eq!(
            asked_names("add an exported function wordCount(slug: string): number to src/slug.ts"),
            ["wordCount"]
        );
        assert_eq!(
            asked_names(
                "add a module src/priority.js that exports sortByPriority(items): a new array"
            ),
            ["sortByPriority"]
        );
        assert_eq!(
            asked_names("add a module src/escape.rs with pub fn quote(value: &str) -> String"),
            ["quote"]
        );
        assert!(says_create("Create `stats.py` with a mean function"));
        assert!(says_create(
            "add a module src/priority.js that exports sortByPriority"
        ));
        assert!(!says_create("Add `mean` to `stats.py`"));
        assert!(!says_create("Create a custom set type."));
    }

    #[test]
    fn requests_that_say_tests_fail() {
        for yes in [
            "the test finds_the_longest_word fails: fix longest_word in src/lib.rs",
            "the tests reads_a_line and parses_a_file fail: fix parse_line in src/lib.rs",
            "Fix the failing tests in tests/test_core.py",
            "test_total_value failed after the refactor; fix total_value",
            "The todo tests are broken, fix them",
        ] {
            assert!(says_tests_fail(yes), "{yes}");
        }
        for no in [
            "Implement is_pangram in pangram.py. The tests are in pangram_test.py.",
            "Add a function double(x: i32) -> i32 with a unit test.",
            "Make the parser fail on an empty key",
            "rename low_stock to items_below",
        ] {
            assert!(!says_tests_fail(no), "{no}");
        }
    }

    /// False positives and false negatives of each rule on the corpus, as `docs/develop.md`
    /// ("Rules that read the request") gives them: (rule, false positives, false negatives,
    /// texts where the verdict is yes).
    const MEASURED: &[(&str, usize, usize, usize)] = &[
        ("asks_for_test", 0, 4, 16),
        ("changes_tests", 0, 12, 33),
        ("asked_flags", 0, 3, 9),
        ("asked_names", 0, 3, 3),
        ("says_create", 0, 1, 1),
        ("says_tests_fail", 0, 3, 3),
        ("rename_request", 0, 0, 0),
    ];

    #[test]
    fn every_rule_on_requests_nobody_here_wrote() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/develop/requests/corpus.json");
        let corpus: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let requests = corpus["requests"].as_array().unwrap();
        assert!(requests.len() >= 100, "{} requests", requests.len());
        // (false positives, false negatives, yes) per rule, and what each got wrong.
        let mut counts: Vec<(usize, usize, usize)> = vec![(0, 0, 0); MEASURED.len()];
        let mut wrong: Vec<String> = Vec::new();
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        };
        for r in requests {
            let (id, text, expect) = (
                r["id"].as_str().unwrap(),
                r["text"].as_str().unwrap(),
                &r["expect"],
            );
            // Each rule as a list of what it finds: a yes/no rule finds "yes" or nothing.
            let yes = |b: bool| {
                if b {
                    vec!["yes".to_owned()]
                } else {
                    Vec::new()
                }
            };
            let rename = |v: Option<(String, String)>| {
                v.map(|(a, b)| vec![format!("{a}->{b}")])
                    .unwrap_or_default()
            };
            let expected_rename = strings(&expect["rename"]);
            let rules: [(Vec<String>, Vec<String>); 7] = [
                (
                    yes(asks_for_test(text)),
                    yes(expect["asks_for_test"] == true),
                ),
                (
                    yes(changes_tests(text)),
                    yes(expect["changes_tests"] == true),
                ),
                (asked_flags(text), strings(&expect["flags"])),
                (asked_names(text), strings(&expect["names"])),
                (yes(says_create(text)), yes(expect["creates_file"] == true)),
                (
                    yes(says_tests_fail(text)),
                    yes(expect["tests_fail"] == true),
                ),
                (
                    rename(super::super::rename::rename_request(text)),
                    if expected_rename.len() == 2 {
                        vec![format!("{}->{}", expected_rename[0], expected_rename[1])]
                    } else {
                        Vec::new()
                    },
                ),
            ];
            for (k, (got, want)) in rules.iter().enumerate() {
                let fp = got.iter().filter(|g| !want.contains(g)).count();
                let fn_ = want.iter().filter(|w| !got.contains(w)).count();
                counts[k].0 += fp;
                counts[k].1 += fn_;
                counts[k].2 += usize::from(!want.is_empty());
                if fp + fn_ > 0 {
                    wrong.push(format!(
                        "{}: {id}: got {got:?}, expected {want:?}",
                        MEASURED[k].0
                    ));
                }
            }
        }
        let table: Vec<String> = MEASURED
            .iter()
            .zip(&counts)
            .map(|((rule, ..), (fp, fn_, yes))| format!("(\"{rule}\", {fp}, {fn_}, {yes}),"))
            .collect();
        let report = format!("{}\n\n{}", table.join("\n"), wrong.join("\n"));
        for ((rule, fp, fn_, yes), got) in MEASURED.iter().zip(&counts) {
            assert_eq!((*fp, *fn_, *yes), *got, "{rule}\n{report}");
        }
        for (rule, fp, ..) in MEASURED {
            assert_eq!(*fp, 0, "{rule} has false positives\n{report}");
        }
    }
}
