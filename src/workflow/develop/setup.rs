//! What a develop run in a workspace would use, for `patchwise doctor`: the project kind, the
//! commands a run would execute (and whether their programs are installed) and the `[develop]`
//! options. Runs nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::Config;
use crate::tools::process::ProcessRunner;

use super::project::{self, CheckKind, ProjectKind};
use super::{ApproveMode, DevelopOptions};

/// What a develop run in `root` would use, for `patchwise doctor`.
#[derive(Debug, Clone, Serialize)]
pub struct Setup {
    pub root: PathBuf,
    pub project: ProjectKind,
    /// `(kind, command line, configured, installed)` for each command.
    pub commands: Vec<SetupCommand>,
    pub notes: Vec<String>,
    pub approve: ApproveMode,
    pub fix_rounds: usize,
    pub judge_min_lines: usize,
    pub risky: Vec<String>,
    pub timeout_secs: u64,
    /// Bytes one process of a command may hold; `None`: no bound.
    pub memory_bytes: Option<u64>,
}

/// One command of [`Setup`].
#[derive(Debug, Clone, Serialize)]
pub struct SetupCommand {
    pub kind: CheckKind,
    pub line: String,
    pub configured: bool,
    /// Its program is on `PATH` (or in the project's tool directories).
    pub installed: bool,
}

/// The develop setup of the workspace at `root`: project kind, the commands a run would
/// execute (and whether their tools are installed), and the `[develop]` options.
pub fn setup(root: &Path, config: &Config, runner: &dyn ProcessRunner) -> Setup {
    let checks = project::checks(root, config, runner);
    let options = DevelopOptions::from_config(config);
    let dirs: Vec<PathBuf> = checks.tool_dirs.iter().map(|d| root.join(d)).collect();
    let commands = checks
        .commands
        .iter()
        .map(|c| {
            let program = crate::tools::process::program_of(&c.line);
            let installed = if program.contains('/') && !program.starts_with('/') {
                root.join(&program).exists()
            } else {
                runner.has_program(&program, &dirs)
            };
            SetupCommand {
                kind: c.kind,
                line: c.line.clone(),
                configured: c.configured,
                installed,
            }
        })
        .collect();
    Setup {
        root: root.to_path_buf(),
        project: checks.kind,
        commands,
        notes: checks.notes,
        approve: options.approve,
        fix_rounds: options.fix_rounds,
        judge_min_lines: options.judge_min_lines,
        risky: options.risky,
        timeout_secs: checks.timeout.as_secs(),
        memory_bytes: checks.max_memory,
    }
}

impl Setup {
    /// The setup as `patchwise doctor` prints it.
    pub fn render(&self) -> String {
        let mut out = format!(
            "
develop    {} ({} project); approve {}, fix rounds {}, judge from {} changed lines \
             or a risky path ({})
",
            self.root.display(),
            self.project.name(),
            match self.approve {
                ApproveMode::Ask => "ask",
                ApproveMode::Auto => "auto",
            },
            self.fix_rounds,
            self.judge_min_lines,
            self.risky.join(", ")
        );
        for c in &self.commands {
            out.push_str(&format!(
                "  {:<8} {} [{}]{}\n",
                c.kind.name(),
                c.line,
                if c.configured {
                    "configured"
                } else {
                    "default"
                },
                if c.installed {
                    ""
                } else {
                    " (NOT INSTALLED: skipped with a warning)"
                }
            ));
        }
        if self.commands.is_empty() {
            out.push_str("  no check or test commands\n");
        }
        for n in &self.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
        out.push_str(&format!(
            "  timeout  {}s per command; commands run in an overlay copy, never on your files\n",
            self.timeout_secs
        ));
        out.push_str(&match self.memory_bytes {
            Some(max) => format!(
                "  memory   {} MiB per process of a command; more, and the command is killed\n",
                max >> 20
            ),
            None => "  memory   no bound ([develop.checks] memory_mb = 0)\n".to_owned(),
        });
        out
    }
}
