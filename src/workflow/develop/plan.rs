//! The plan of a develop run: numbered atomic steps, each naming the files it touches, the last
//! one always verification. The planner writes it as a Markdown list; [`parse`] reads that (and
//! the near misses small models produce) or says exactly what shape was expected, so the run can
//! ask once more with the parse error.
//!
//! Pure: text in, plan or error out.

use std::fmt::Write as _;

use serde::Serialize;

use crate::edit::text::{FenceLine, Fences};
use crate::edit::whole::looks_like_path;

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// 1-based, as shown to the user.
    pub number: usize,
    pub text: String,
    /// Workspace-relative paths the step names.
    pub files: Vec<String>,
    /// The verification step (runs the checks and tests; no model edits).
    pub verify: bool,
}

/// A parsed plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub steps: Vec<Step>,
}

impl Plan {
    /// The steps that change files (every step but verification).
    pub fn work(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(|s| !s.verify)
    }

    /// Every file the plan names, in order, once.
    pub fn files(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in self.steps.iter().flat_map(|s| &s.files) {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }

    /// The plan as the numbered list the models see (`current` marks one step).
    pub fn numbered(&self, current: Option<usize>) -> String {
        let mut out = String::new();
        for s in &self.steps {
            let mark = if Some(s.number) == current {
                "  <- this step"
            } else {
                ""
            };
            let files = if s.files.is_empty() {
                String::new()
            } else {
                format!(" (files: {})", s.files.join(", "))
            };
            let _ = writeln!(out, "{}. {}{files}{mark}", s.number, s.text);
        }
        out
    }
}

/// Why an answer is not a plan; the Display is written for the model that must fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(
        "the answer has no numbered steps; write the plan as a numbered list (`1. …`, `2. …`), one atomic change per step"
    )]
    NoSteps,
    #[error(
        "step {number} (\"{text}\") names no file; every step except the last must name the files it touches, e.g. `src/lib.rs`"
    )]
    NoFiles { number: usize, text: String },
    #[error(
        "step {number} names `{path}`, which is not in the list of files; name the files as the list writes them, or say that the step creates `{path}`"
    )]
    Missing { number: usize, path: String },
    #[error(
        "the plan has {count} steps; keep it to at most {max} atomic steps (merge small changes to the same file)"
    )]
    TooLong { count: usize, max: usize },
}

/// How a plan must look; shown in the first prompt and after a parse error. It has no example
/// steps: small models copy an example into their plan (Qwen2.5-Coder-1.5B planned `fn
/// is_pangram` in `src/pangram.py` for a Python project with `pangram.py` at its root, after an
/// example naming `fn …` in `src/…`), so the form is described in words only.
pub fn shape() -> String {
    "Answer with the plan as a numbered list of atomic steps (`1. …`, `2. …`), one change per \
     step. Each step says what to change and names in backticks the file it changes: a path \
     from the list of files above, written exactly as listed, or a new file, and then the step \
     says to create it. Keep the names the request and the files use. The last step is always \
     `Verify: run the checks and the tests`. No code in the plan."
        .to_owned()
}

/// Steps a plan may have (verification included).
pub const MAX_STEPS: usize = 12;

/// Reads a plan from the planner's answer. `known` answers whether a path exists in the
/// workspace (a bare file name like `lib.rs` is matched against it); `is_path` lets words such
/// as `main.rs` count as files. A last step that is not verification gets one appended.
pub fn parse(answer: &str, known: &dyn Fn(&str) -> Option<String>) -> Result<Plan, PlanError> {
    let mut raw: Vec<(usize, String)> = Vec::new();
    let mut fences = Fences::default();
    for line in answer.lines() {
        let t = line.trim();
        let at = fences.line(line);
        if matches!(at, FenceLine::Open | FenceLine::Close) {
            continue;
        }
        let in_fence = at == FenceLine::Inside;
        if let Some((n, rest)) = numbered(t) {
            raw.push((n, rest.to_owned()));
        } else if let Some((_, text)) = raw.last_mut()
            && !t.is_empty()
            && !in_fence
            && (line.starts_with(' ') || line.starts_with('\t') || t.starts_with(['-', '*']))
        {
            // A continuation ("   - files: src/a.rs") belongs to the step above.
            text.push(' ');
            text.push_str(t.trim_start_matches(['-', '*']).trim());
        }
    }
    if raw.is_empty() {
        return Err(PlanError::NoSteps);
    }
    let mut steps: Vec<Step> = Vec::new();
    for (i, (_, text)) in raw.iter().enumerate() {
        let clean = strip_markup(text);
        let files = files_in(text, known);
        steps.push(Step {
            number: i + 1,
            verify: is_verification(&clean) && files.is_empty(),
            text: clean,
            files,
        });
    }
    // A small model that loops writes its steps again and again, often with the prompt's
    // example among them: once a step after the first verification step repeats one already
    // written, the plan ended at that verification step. A repeated step adds nothing anywhere.
    let mut seen = std::collections::HashSet::new();
    let first_verify = steps.iter().position(|s| s.verify).filter(|&v| v > 0);
    let mut looped = false;
    steps = steps
        .into_iter()
        .enumerate()
        .filter(|(i, s)| {
            let new = s.verify || seen.insert(normalized(&s.text));
            looped |= !new && first_verify.is_some_and(|v| *i > v);
            new
        })
        .map(|(_, s)| s)
        .collect();
    if looped && let Some(end) = steps.iter().position(|s| s.verify) {
        steps.truncate(end);
    }
    // Verification steps (anywhere) become the one final verification step.
    steps.retain(|s| !s.verify);
    if steps.is_empty() {
        return Err(PlanError::NoSteps);
    }
    for s in &steps {
        if s.files.is_empty() {
            return Err(PlanError::NoFiles {
                number: s.number,
                text: crate::edit::text::clip(&s.text, 80),
            });
        }
    }
    steps.push(Step {
        number: 0,
        text: "Verify: run the checks and the tests".to_owned(),
        files: Vec::new(),
        verify: true,
    });
    if steps.len() > MAX_STEPS {
        return Err(PlanError::TooLong {
            count: steps.len(),
            max: MAX_STEPS,
        });
    }
    for (i, s) in steps.iter_mut().enumerate() {
        s.number = i + 1;
    }
    Ok(Plan { steps })
}

/// A step's text for spotting repeats: lower case, punctuation and markup dropped, one space
/// between words.
fn normalized(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `"3. text"`, `"3) text"`, `"Step 3: text"`, `"**3.** text"`, `"### 3. text"` → (3, text).
fn numbered(line: &str) -> Option<(usize, &str)> {
    let t = line.trim_start_matches(['#', '*', ' ']);
    let t = t
        .strip_prefix("Step ")
        .or_else(|| t.strip_prefix("step "))
        .unwrap_or(t);
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 2 {
        return None;
    }
    let n: usize = t[..digits].parse().ok()?;
    let rest = &t[digits..];
    let rest = rest
        .strip_prefix('.')
        .or_else(|| rest.strip_prefix(')'))
        .or_else(|| rest.strip_prefix(':'))?;
    let rest = rest.trim_start_matches(['*', ':']).trim();
    (!rest.is_empty()).then_some((n, rest))
}

fn strip_markup(text: &str) -> String {
    text.replace("**", "").trim().to_owned()
}

fn is_verification(text: &str) -> bool {
    let t = text.to_lowercase();
    [
        "verify",
        "verification",
        "run the test",
        "run tests",
        "run the check",
        "cargo test",
        "npm test",
        "pytest",
    ]
    .iter()
    .any(|k| t.contains(k))
}

/// The workspace paths a step names: words that look like paths (a `/` or a file extension),
/// with backticks, quotes and trailing punctuation removed, resolved through `known`.
fn files_in(text: &str, known: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')') {
        let w = word
            .trim_end_matches(['.', ','])
            .trim_matches(|c: char| "`'\"*[]{}<>:;!?".contains(c))
            .trim_end_matches('.')
            .trim_start_matches("./");
        if !looks_like_path(w) {
            continue;
        }
        let path = known(w).unwrap_or_else(|| w.to_owned());
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// The plan as the Markdown document the user approves.
pub fn document(request: &str, plan: &Plan, checks: &[String], notes: &[String]) -> String {
    let mut out = format!(
        "# Develop plan\n\n**Request:** {}\n\n## Steps\n\n",
        request.trim()
    );
    for s in &plan.steps {
        let _ = writeln!(out, "{}. {}", s.number, s.text);
        if !s.files.is_empty() {
            let files: Vec<String> = s.files.iter().map(|f| format!("`{f}`")).collect();
            let _ = writeln!(out, "   - files: {}", files.join(", "));
        }
    }
    out.push_str("\n## Commands run on the proposed text (in an overlay, never on your files)\n\n");
    if checks.is_empty() {
        out.push_str("- none\n");
    }
    for c in checks {
        let _ = writeln!(out, "- `{c}`");
    }
    for n in notes {
        let _ = writeln!(out, "- note: {n}");
    }
    out.push_str("\nNothing is written to your files until you accept the final proposal.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(p: &str) -> Option<String> {
        match p {
            "lib.rs" => Some("src/lib.rs".to_owned()),
            other => Some(other.to_owned()),
        }
    }

    #[test]
    fn a_plan_that_loops_ends_at_its_verification_step() {
        // Qwen2.5-Coder-1.5B on the bench task rust-add-fn: the real steps, then the prompt's
        // example over and over (here cut short; the real answer reached step 403).
        let mut answer = String::from(
            "1. Add `pub fn char_count` to `src/lib.rs`.\n2. Add a test for it in `src/lib.rs`.\n3. Verify: run the checks and the tests.\n",
        );
        let mut n = 4;
        while n < 40 {
            for line in [
                "Add `fn parse_flag` to `src/cli.rs`.",
                "Add a test for it in `tests/cli.rs`.",
                "Verify: run the checks and the tests.",
            ] {
                answer.push_str(&format!("{n}. {line}\n"));
                n += 1;
            }
        }
        answer.push_str("40. Add `fn main` to `src/mai");
        let plan = parse(&answer, &known).unwrap();
        let texts: Vec<&str> = plan.steps.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Add `pub fn char_count` to `src/lib.rs`.",
                "Add a test for it in `src/lib.rs`.",
                "Verify: run the checks and the tests"
            ]
        );
        // Repeats alone (no verification step to end at) are dropped too.
        let plan = parse(
            "1. Add `fn a` to `src/lib.rs`.\n2. Add `fn a` to `src/lib.rs`.\n3. Add a test in `tests/a.rs`.\n",
            &known,
        )
        .unwrap();
        assert_eq!(plan.steps.len(), 3, "{:?}", plan.steps);
    }

    #[test]
    fn the_shape_names_no_language_and_no_layout() {
        let shape = shape();
        for leak in ["fn ", "def ", "src/", "tests/", ".rs", ".py"] {
            assert!(!shape.contains(leak), "{leak} in {shape}");
        }
    }

    #[test]
    fn reads_plans_in_the_shapes_models_write() {
        let answer = "Here is the plan:\n\n1. Add `fn shout` to `src/lib.rs`.\n2) Call it from src/main.rs\n   - also update README.md\n**3.** Add a test in `tests/shout.rs`\n4. Run the tests to verify\n";
        let plan = parse(answer, &known).unwrap();
        let got: Vec<(String, Vec<String>, bool)> = plan
            .steps
            .iter()
            .map(|s| (s.text.clone(), s.files.clone(), s.verify))
            .collect();
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0].1, ["src/lib.rs"]);
        assert_eq!(got[1].1, ["src/main.rs", "README.md"]);
        assert_eq!(got[2].1, ["tests/shout.rs"]);
        assert!(got[3].2 && got[3].1.is_empty());
        assert_eq!(
            plan.files(),
            ["src/lib.rs", "src/main.rs", "README.md", "tests/shout.rs"]
        );
        // A bare file name resolves through the workspace; a missing verification is added.
        let plan = parse("Step 1: change lib.rs so it compiles", &known).unwrap();
        assert_eq!(plan.steps[0].files, ["src/lib.rs"]);
        assert!(plan.steps[1].verify && plan.steps.len() == 2);
    }

    #[test]
    fn says_what_shape_was_expected() {
        assert_eq!(
            parse("I would change some things.", &known),
            Err(PlanError::NoSteps)
        );
        let err = parse("1. Make it faster\n2. Verify", &known).unwrap_err();
        assert!(matches!(err, PlanError::NoFiles { number: 1, .. }), "{err}");
        assert!(err.to_string().contains("names no file"), "{err}");
        let long: String = (1..=20).map(|i| format!("{i}. edit f{i}.rs\n")).collect();
        assert!(matches!(
            parse(&long, &known),
            Err(PlanError::TooLong { .. })
        ));
        // Version numbers and method calls are not files.
        assert_eq!(
            files_in("bump to v1.2 and call self.x", &known),
            Vec::<String>::new()
        );
    }

    #[test]
    fn document_lists_steps_files_and_commands() {
        let plan = parse("1. edit `a.rs`\n2. verify", &known).unwrap();
        let doc = document("do it", &plan, &["cargo test".to_owned()], &[]);
        assert!(doc.contains("1. edit `a.rs`\n   - files: `a.rs`"), "{doc}");
        assert!(doc.contains("2. Verify"), "{doc}");
        assert!(doc.contains("- `cargo test`"), "{doc}");
    }
}
