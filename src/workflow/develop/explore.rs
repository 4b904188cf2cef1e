//! The explore and plan phases of a develop run: the `planner` sees a .gitignore-aware tree and
//! the files the request's words point at, may call the read-only tools for a bounded number of
//! rounds, and answers with a numbered plan; an answer that is not a plan is retried once with the
//! parse error. Planning never changes a file: any other tool call is answered with an error.

use serde_json::json;

use crate::model::{Message, ToolCall, ToolChoice, ToolSpec};
use crate::tools::{self, ToolOutcome};

use super::plan::{self, Plan, PlanError};
use super::{DevelopFailure, EXPLORE, PLAN, Run, push_results};

impl Run<'_> {
    pub(super) async fn plan(&mut self) -> Result<Plan, DevelopFailure> {
        self.report_progress("explore: reading the workspace", EXPLORE);
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
                    messages.push(Message::user(format!(
                        "Your plan could not be read: {error}.\n\n{}",
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

    fn parse_plan(&mut self, answer: &str) -> Result<Plan, PlanError> {
        let root = self.root();
        let s = self.session();
        let files: Vec<String> =
            s.fs.walk(&root, 5000)
                .0
                .into_iter()
                .filter_map(|e| {
                    e.path
                        .strip_prefix(&root)
                        .ok()
                        .map(|p| p.to_string_lossy().replace('\\', "/"))
                })
                .collect();
        let known = |w: &str| -> Option<String> {
            if files.iter().any(|f| f == w) {
                return Some(w.to_owned());
            }
            // A bare name (`lib.rs`) or a path missing its first directories.
            let suffix = format!("/{w}");
            let mut matches = files.iter().filter(|f| f.ends_with(&suffix));
            match (matches.next(), matches.next()) {
                (Some(only), None) => Some(only.clone()),
                _ => None,
            }
        };
        let plan = plan::parse(answer, &known)?;
        // Paths must stay in the workspace.
        for step in &plan.steps {
            for f in &step.files {
                if let Err(e) = s.sandbox.resolve(f, s.fs.as_ref()) {
                    return Err(PlanError::NoFiles {
                        number: step.number,
                        text: format!("{f}: {e}"),
                    });
                }
            }
        }
        Ok(plan)
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
