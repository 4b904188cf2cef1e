//! The explore and plan phases of a develop run: the `planner` sees a .gitignore-aware tree and
//! the files the request's words point at, may call the read-only tools for a bounded number of
//! rounds, and answers with a numbered plan; an answer that is not a plan is retried once with the
//! parse error. Planning never changes a file: any other tool call is answered with an error.
//!
//! A plan is grounded in the tree (`docs/develop.md`, "Plans grounded in the workspace"): a
//! request that names its files, or a workspace with one source file beside its tests, needs no
//! planner; a path the tree does not have is mapped to the one file with its name, or sent back
//! once with the tree unless the step says to create it.

use serde_json::json;

use crate::model::{Message, ToolCall, ToolChoice, ToolSpec};
use crate::tools::{self, ToolOutcome};
use crate::workflow::model_loop::answer::push_results;

use super::asked::says_create;
use super::plan::{self, Plan, PlanError};
use super::{DevelopFailure, EXPLORE, PLAN, Run, RunPhase};

impl Run<'_> {
    pub(super) async fn plan(&mut self) -> Result<Plan, DevelopFailure> {
        if let Some((plan, why)) = self.direct_plan() {
            self.report.planned = Some(why.clone());
            self.report_progress(RunPhase::Plan, format!("plan: {why}"), PLAN);
            return Ok(plan);
        }
        self.report_progress(RunPhase::Explore, "explore: reading the workspace", EXPLORE);
        let first = self.explore_prompt();
        let planner = self.roles().planner.clone();
        let read_only: Vec<ToolSpec> = tools::specs()
            .into_iter()
            .filter(|s| tools::is_read_only(&s.name))
            .collect();
        let mut messages = first;
        let mut rounds = 0;
        let mut reparsed = false;
        loop {
            let may_explore = rounds < self.ctx.options.explore_rounds;
            let (tools, choice) = if may_explore {
                (read_only.clone(), ToolChoice::Auto)
            } else {
                (Vec::new(), ToolChoice::None)
            };
            self.report_progress(
                if may_explore {
                    RunPhase::Explore
                } else {
                    RunPhase::Plan
                },
                if may_explore {
                    format!("explore: asking {}", planner.name())
                } else {
                    format!("plan: asking {}", planner.name())
                },
                if may_explore {
                    EXPLORE + 2 * rounds as u32
                } else {
                    PLAN
                },
            );
            let response = self
                .ask(
                    planner.as_ref(),
                    &messages,
                    tools,
                    choice,
                    Some(super::PLAN_MAX_TOKENS),
                )
                .await?;
            let calls = if may_explore {
                self.calls_in(&response, &read_only)
            } else {
                Vec::new()
            };
            if !calls.is_empty() {
                rounds += 1;
                messages.push(response.to_message());
                let outcomes = self.execute_read_only(calls).await?;
                push_results(&mut messages, &outcomes, !response.tool_calls.is_empty());
                if rounds >= self.ctx.options.explore_rounds {
                    messages.push(Message::user(
                        "That is all the exploring there is room for. Now write the plan as a \
                         numbered list, as asked at the start.",
                    ));
                }
                continue;
            }
            let answer = response.text.clone();
            match self.parse_plan(&answer) {
                Ok(plan) => return Ok(plan),
                Err(error) if !reparsed => {
                    reparsed = true;
                    // Exploring is over: the retry must be the plan itself.
                    rounds = self.ctx.options.explore_rounds;
                    messages.push(Message::assistant(answer));
                    // A path not in the tree: the tree again, next to the error.
                    let tree = match &error {
                        PlanError::Missing { .. } => format!(
                            "The files of the workspace:\n{}\n\n",
                            crate::edit::text::clip(self.workspace_files().join("\n").trim(), 3000)
                        ),
                        _ => String::new(),
                    };
                    messages.push(Message::user(format!(
                        "Your plan could not be read: {error}.\n\n{tree}{}",
                        plan::shape()
                    )));
                }
                Err(error) => {
                    return Err(DevelopFailure::Plan {
                        error,
                        answer: crate::edit::text::clip(answer.trim(), 200),
                    });
                }
            }
        }
    }

    /// Workspace-relative paths of the files in the tree (.gitignore-aware, at most 5,000).
    pub(super) fn workspace_files(&mut self) -> Vec<String> {
        let root = self.root();
        let s = self.session();
        s.fs.walk(&root, 5000)
            .0
            .into_iter()
            .filter_map(|e| {
                e.path
                    .strip_prefix(&root)
                    .ok()
                    .map(|p| p.to_string_lossy().replace('\\', "/"))
            })
            .collect()
    }

    fn parse_plan(&mut self, answer: &str) -> Result<Plan, PlanError> {
        let files = self.workspace_files();
        // The new files the request names count as known: a step that names one by its file
        // name alone means that file (js-todo-module: "Create `src/priority.js` … a new file
        // named `priority.js` in the `src` directory" made the step create both, and the model
        // was asked for `priority.js` beside `src/priority.js` until the run timed out).
        let grounding = with_new_files(&files, &self.request.request);
        let known = |w: &str| known_path(&grounding, w);
        let mut plan = plan::parse(answer, &known)?;
        // A step says the path it works on as the tree has it (`src/core.py` was mapped to
        // `inventory/core.py`): the coder reads the step's text.
        for step in &mut plan.steps {
            step.text = ground_text(&step.text, &grounding);
        }
        let request_creates = says_create(&self.request.request);
        let request = self.request.request.clone();
        let s = self.session();
        for step in &plan.steps {
            for f in &step.files {
                // Paths must stay in the workspace.
                let resolved = match s.sandbox.resolve(f, s.fs.as_ref()) {
                    Ok(r) => r,
                    Err(e) => {
                        return Err(PlanError::NoFiles {
                            number: step.number,
                            text: format!("{f}: {e}"),
                        });
                    }
                };
                // A path the tree does not have is a new file only when asked for
                // (docs/develop.md, "Plans grounded in the workspace").
                let exists = files.contains(f) || s.copy.exists(&resolved.abs, s.fs.as_ref());
                // A new test file for a step that adds a test ("Add an integration test in
                // `tests/counts.rs`") is a file to create as well.
                let new_test = is_test_file(f) && super::asked::asks_for_test(&step.text);
                let asked = request_creates
                    || says_create(&step.text)
                    || new_test
                    || names_file(&request, f);
                if !exists && !f.ends_with('/') && !asked {
                    return Err(PlanError::Missing {
                        number: step.number,
                        path: f.clone(),
                    });
                }
            }
        }
        Ok(plan)
    }

    /// The plan of a request whose target is plain, without asking the planner
    /// (`docs/develop.md`, "Plans grounded in the workspace"): one step on the files the
    /// request names, or on the workspace's one source file beside its tests; then verify.
    /// Returns the plan and why no planner was asked.
    fn direct_plan(&mut self) -> Option<(Plan, String)> {
        let files = self.workspace_files();
        let creates = says_create(&self.request.request);
        let mut named: Vec<String> = Vec::new();
        let mut missing = false;
        for w in crate::workflow::edit::named_paths(&self.request.request) {
            let w = w.trim_start_matches("./");
            if !crate::edit::whole::looks_like_path(w) {
                continue;
            }
            let path = match known_path(&files, w) {
                Some(p) => p,
                None if creates && !w.ends_with('/') => w.to_owned(),
                None => {
                    missing = true;
                    continue;
                }
            };
            if !named.contains(&path) {
                named.push(path);
            }
        }
        let why = if !named.is_empty() && !missing {
            format!(
                "the request names its file{} ({}): one step, no planner call",
                if named.len() == 1 { "" } else { "s" },
                named.join(", ")
            )
        } else {
            let sources: Vec<&String> = files
                .iter()
                .filter(|f| is_source(f) && !is_test_file(f))
                .collect();
            let tests = files
                .iter()
                .filter(|f| is_source(f) && is_test_file(f))
                .count();
            if sources.len() != 1 || tests == 0 {
                return None;
            }
            named.push(sources[0].clone());
            format!(
                "the workspace has one source file ({}) beside its tests: one step, no planner \
                 call",
                sources[0]
            )
        };
        let plan = Plan {
            steps: vec![
                plan::Step {
                    number: 1,
                    text: self.request.request.trim().to_owned(),
                    files: named,
                    verify: false,
                },
                plan::Step {
                    number: 2,
                    text: "Verify: run the checks and the tests".to_owned(),
                    files: Vec::new(),
                    verify: true,
                },
            ],
        };
        Some((plan, why))
    }

    fn explore_prompt(&mut self) -> Vec<Message> {
        let tree = self.tool_text("list_files", json!({"path": "."}));
        let likely = self.likely_files();
        let mut context = String::new();
        let budget = self.ctx.options.context_budget / likely.len().max(1);
        for rel in &likely {
            context.push_str(&self.file_view(rel, budget));
            context.push('\n');
        }
        let system = self.system_prompt(
            "You plan changes to a software project. You can read files with the tools \
             (read_file, list_files, search); you cannot change anything. When you know enough, \
             answer with the plan.\n",
            "Workspace rules (follow them)",
        );
        let user = format!(
            "Request: {}\n\nProject: {}\n\nFiles:\n{}\n\n{}\n{}",
            self.request.request.trim(),
            self.report.project.name(),
            crate::edit::text::clip(tree.trim(), 4000),
            if context.is_empty() {
                String::new()
            } else {
                format!("Likely relevant files:\n\n{context}")
            },
            plan::shape()
        );
        vec![Message::system(system), Message::user(user)]
    }

    /// The focus file and the files whose text matches words of the request, best first.
    fn likely_files(&mut self) -> Vec<String> {
        let mut scores: Vec<(String, usize)> = Vec::new();
        let mut bump = |rel: String, by: usize| match scores.iter_mut().find(|(r, _)| *r == rel) {
            Some((_, n)) => *n += by,
            None => scores.push((rel, by)),
        };
        if let Some(focus) = self.request.focus.clone() {
            let root = self.root();
            if let Ok(rel) = focus.strip_prefix(&root) {
                bump(rel.to_string_lossy().into_owned(), 1000);
            }
        }
        for word in keywords(&self.request.request) {
            let found = self.tool_text("search", json!({"pattern": word}));
            for line in found.lines().take(50) {
                if let Some((path, _)) = line.split_once(':')
                    && !path.contains(' ')
                    && path.contains('.')
                {
                    bump(path.to_owned(), 1);
                }
            }
        }
        scores.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        scores.into_iter().take(3).map(|(r, _)| r).collect()
    }

    async fn execute_read_only(
        &mut self,
        calls: Vec<ToolCall>,
    ) -> Result<Vec<ToolOutcome>, DevelopFailure> {
        // Planning reads only: anything else is answered with an error, never executed.
        let (reads, others): (Vec<_>, Vec<_>) = calls
            .into_iter()
            .partition(|c| tools::canonical_name(&c.name).is_some_and(tools::is_read_only));
        let mut outcomes = self.execute(reads).await?;
        for c in others {
            outcomes.push(ToolOutcome {
                call_id: c.id.clone(),
                name: c.name.clone(),
                content: "planning is read-only: only read_file, list_files and search are \
                          available now; describe changes in the plan"
                    .to_owned(),
                status: tools::Status::Failed(tools::ToolError::NotAvailable {
                    tool: c.name.clone(),
                    reason: "planning is read-only".to_owned(),
                }),
            });
        }
        Ok(outcomes)
    }
}

/// The workspace file `w` names: itself, the one file it is the end of (`lib.rs`,
/// `core/x.py`), or the one file with its name (`pangram.py` at the root for `src/pangram.py`),
/// both test files or both not.
pub(super) fn known_path(files: &[String], w: &str) -> Option<String> {
    let w = w.trim_start_matches("./");
    if files.iter().any(|f| f == w) {
        return Some(w.to_owned());
    }
    let only = |mut it: std::vec::IntoIter<&String>| match (it.next(), it.next()) {
        (Some(one), None) => Some(one.clone()),
        _ => None,
    };
    let suffix = format!("/{w}");
    let by_suffix: Vec<&String> = files.iter().filter(|f| f.ends_with(&suffix)).collect();
    if !by_suffix.is_empty() {
        return only(by_suffix.into_iter());
    }
    // By name only between files of the same kind: a new `tests/lib.rs` is not `src/lib.rs`.
    let name = w.rsplit('/').next().unwrap_or(w);
    let by_name: Vec<&String> = files
        .iter()
        .filter(|f| f.rsplit('/').next() == Some(name) && is_test_file(f) == is_test_file(w))
        .collect();
    only(by_name.into_iter())
}

/// The workspace's `files` and the new files `request` names by a path with a directory
/// (`src/priority.js`, not in the tree): what a plan's paths are grounded in.
fn with_new_files(files: &[String], request: &str) -> Vec<String> {
    let mut out = files.to_vec();
    for w in crate::workflow::edit::named_paths(request) {
        let w = w.trim_start_matches("./");
        if crate::edit::whole::looks_like_path(w)
            && w.contains('/')
            && !w.ends_with('/')
            && known_path(files, w).is_none()
            && !out.iter().any(|f| f == w)
        {
            out.push(w.to_owned());
        }
    }
    out
}

/// `text` with each path it names that maps to another workspace file (`known_path`) written
/// as the workspace has it.
fn ground_text(text: &str, files: &[String]) -> String {
    let delimiter = |c: char| c.is_whitespace() || "`'\"(),;*".contains(c);
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let core = word.trim_end_matches(['.', ':']);
        let tail = &word[core.len()..];
        let w = core.trim_start_matches("./");
        match known_path(files, w) {
            Some(real) if crate::edit::whole::looks_like_path(w) && real != w => {
                out.push_str(&real);
                out.push_str(tail);
            }
            _ => out.push_str(word),
        }
        word.clear();
    };
    for c in text.chars() {
        if delimiter(c) {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Whether the user's request names `path`: the path, its file name, or its stem as a word
/// ("mention it in the README" names `README.md`). A path the user named is not invented.
fn names_file(request: &str, path: &str) -> bool {
    let request = request.to_lowercase();
    let path = path.to_lowercase();
    let name = path.rsplit('/').next().unwrap_or(&path);
    let stem = name.split('.').next().unwrap_or(name);
    request.contains(&path)
        || request.contains(name)
        || (stem.len() >= 3
            && request
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == stem))
}

/// A file of a programming language (not a manifest, document or data).
pub(super) fn is_source(path: &str) -> bool {
    const CODE: &[&str] = &[
        "rs", "py", "ts", "tsx", "js", "jsx", "mjs", "cjs", "go", "java", "kt", "c", "h", "cc",
        "cpp", "cs", "rb", "php", "swift", "lua", "ex", "exs", "zig",
    ];
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && CODE.contains(&ext))
        && !name.starts_with("__init__.")
        && !path.starts_with("node_modules/")
        && !path.contains("/node_modules/")
        && !name.ends_with(".d.ts")
        && !name.starts_with("conftest.")
        && !name.starts_with("setup.")
}

/// A test file by its name or place (`test_x.py`, `x_test.py`, `x.test.ts`, `tests/…`).
pub(super) fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem == "test"
        || stem == "tests"
        || name.contains(".test.")
        || name.contains(".spec.")
        || path.starts_with("tests/")
        || path.starts_with("test/")
        || path.contains("/tests/")
        || path.contains("/__tests__/")
}

/// Words of a request worth searching for: identifiers and longer words, not common English.
fn keywords(request: &str) -> Vec<String> {
    const COMMON: &[&str] = &[
        "that", "this", "with", "from", "into", "then", "them", "when", "which", "what", "have",
        "make", "should", "would", "could", "there", "their", "about", "after", "before", "add",
        "adds", "test", "tests", "function", "file", "files", "code", "change", "update", "using",
        "also", "each", "every", "flag", "command", "return", "returns", "value", "rename", "fix",
        "failing", "new", "the", "and", "for", "its", "it's",
    ];
    let mut out: Vec<String> = Vec::new();
    for w in request.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')) {
        let w = w.trim_matches('-');
        if w.len() < 4 || COMMON.contains(&w.to_lowercase().as_str()) {
            continue;
        }
        let code_like = w.contains('_') || w.chars().skip(1).any(char::is_uppercase);
        if !out.iter().any(|o| o == w) && (code_like || out.len() < 6) {
            out.push(w.to_owned());
        }
    }
    out.sort_by_key(|w| !(w.contains('_') || w.chars().skip(1).any(char::is_uppercase)));
    out.truncate(4);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_the_request_names_is_the_one_a_step_names_by_its_name() {
        let files: Vec<String> = ["src/todo.js", "src/cli.js", "test/todo.test.js"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let request = "add a module src/priority.js that exports sortByPriority(items): a new \
                       array of the items sorted by priority; with tests in test/priority.test.js";
        let grounding = with_new_files(&files, request);
        assert_eq!(
            grounding[3..],
            [
                "src/priority.js".to_owned(),
                "test/priority.test.js".to_owned()
            ]
        );
        // The 1.5B model's plan for js-todo-module (its first two steps, code left out).
        let answer = "1. **Create `src/priority.js`**:\n   - Create a new file named `priority.js` \
                      in the `src` directory.\n\n2. **Create `test/priority.test.js`**:\n   - \
                      Create a new file named `priority.test.js` in the `test` directory.\n\n3. \
                      Verify: run the checks and the tests\n";
        let known = |w: &str| known_path(&grounding, w);
        let plan = plan::parse(answer, &known).unwrap();
        assert_eq!(plan.steps[0].files, ["src/priority.js"]);
        assert_eq!(plan.steps[1].files, ["test/priority.test.js"]);
        // Without them, each step named two files to create.
        let bare = |w: &str| known_path(&files, w);
        assert_eq!(plan::parse(answer, &bare).unwrap().steps[0].files.len(), 2);
    }

    #[test]
    fn plan_paths_map_to_the_one_file_with_that_name() {
        let files: Vec<String> = [
            "pangram.py",
            "pangram_test.py",
            "src/lib.rs",
            "a/x.py",
            "b/x.py",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            known_path(&files, "src/pangram.py").as_deref(),
            Some("pangram.py")
        );
        assert_eq!(
            known_path(&files, "tests/pangram_test.py").as_deref(),
            Some("pangram_test.py")
        );
        assert_eq!(known_path(&files, "lib.rs").as_deref(), Some("src/lib.rs"));
        assert_eq!(known_path(&files, "x.py"), None);
        assert_eq!(known_path(&files, "tests/lib.rs"), None);
        assert_eq!(known_path(&files, "src/other.py"), None);
        assert_eq!(
            ground_text("Add `is_pangram` to `src/pangram.py`.", &files),
            "Add `is_pangram` to `pangram.py`."
        );
        assert!(names_file(
            "add it and mention it in the README",
            "README.md"
        ));
        assert!(names_file(
            "a helper for the tests in tests/cli.rs",
            "tests/cli.rs"
        ));
        assert!(!names_file("add an item_count function", "src/helpers.py"));
        assert!(is_test_file("pangram_test.py") && is_test_file("tests/test_core.py"));
        assert!(is_test_file("src/slug.test.ts") && !is_test_file("src/slug.ts"));
        assert!(is_source("pangram.py") && !is_source("pyproject.toml"));
    }

    #[test]
    fn keywords_prefer_identifiers() {
        assert_eq!(
            keywords("add a --json flag to the export command and test it"),
            ["json", "export"]
        );
        assert_eq!(
            keywords("rename parse_args to parse_cli in main"),
            ["parse_args", "parse_cli", "main"]
        );
    }
}
