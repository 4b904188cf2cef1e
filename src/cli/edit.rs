//! `patchwise edit FILE --old-file PATH --new-file PATH [--replace-all] [--dry-run] [--json]`:
//! the edit engine from a terminal, for users, scripts and benchmarks, with the same cascade and
//! checks as the language server (the read-before-edit ledger counts as satisfied). `--op`
//! reaches every other engine operation, with the same names as the model's tools:
//! `replace-pattern --pattern RE --replacement TEXT [--all]`, `insert-text --anchor TEXT
//! (--text TEXT | --text-file PATH) [--before]`, `prepend`/`append --text …`, `insert-lines
//! --line N --text … [--before]` and `replace-lines --start N --end M --text …`.
//!
//! Exit codes: 0 applied (the unified diff, or JSON `{status, matched_by, replacements, diff}`,
//! on stdout; the file is written unless `--dry-run`), 1 refused (the refusal a model would get
//! on stdout; the file untouched), 2 usage or I/O error (on stderr). The file is written through
//! a [`Transaction`]: a temporary file in the same directory, then a rename; it keeps its
//! permissions, a symlink stays a link, and a file changed on disk meanwhile is not overwritten.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::edit::ops::Operation;
use crate::edit::{self, Applied, ReplaceOptions};
use crate::tools::transaction::Transaction;

/// The engine operation `patchwise edit` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum EditOp {
    /// Replace OLD (`--old-file`) with NEW (`--new-file`), located by the cascade.
    #[default]
    Replace,
    /// Replace what a regular expression (`--pattern`) matches with `--replacement`.
    ReplacePattern,
    /// Insert `--text` after (or `--before`) the unique `--anchor` text.
    InsertText,
    /// Insert `--text` as the first lines.
    Prepend,
    /// Insert `--text` as the last lines.
    Append,
    /// Insert `--text` after (or `--before`) line `--line`.
    InsertLines,
    /// Replace lines `--start`..=`--end` with `--text`.
    ReplaceLines,
}

/// Arguments of `patchwise edit`.
#[derive(Debug, Clone, clap::Args)]
pub struct EditArgs {
    /// The file to edit.
    pub file: PathBuf,

    /// The operation (default: replace OLD with NEW).
    #[arg(long, value_enum, default_value_t)]
    pub op: EditOp,

    /// A file holding the text to replace (OLD); `-` reads it from standard input.
    #[arg(long, value_name = "PATH")]
    pub old_file: Option<PathBuf>,

    /// A file holding the replacement text (NEW); `-` reads it from standard input.
    #[arg(long, value_name = "PATH")]
    pub new_file: Option<PathBuf>,

    /// Replace every place OLD (or the pattern) matches instead of refusing when there are
    /// several.
    #[arg(long, visible_alias = "all")]
    pub replace_all: bool,

    /// The regular expression of `--op replace-pattern` (Rust `regex` syntax, `^`/`$` per line).
    #[arg(long, value_name = "REGEX")]
    pub pattern: Option<String>,

    /// The replacement of `--op replace-pattern`; `$1` and `${name}` expand to groups.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub replacement: Option<String>,

    /// The text `--op insert-text` inserts beside (it must occur once).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub anchor: Option<String>,

    /// The text to insert or the new lines (`insert-text`, `prepend`, `append`, `insert-lines`,
    /// `replace-lines`).
    #[arg(
        long,
        value_name = "TEXT",
        allow_hyphen_values = true,
        conflicts_with = "text_file"
    )]
    pub text: Option<String>,

    /// A file holding that text; `-` reads it from standard input.
    #[arg(long, value_name = "PATH")]
    pub text_file: Option<PathBuf>,

    /// Insert before the anchor or line instead of after it.
    #[arg(long)]
    pub before: bool,

    /// The line of `--op insert-lines` (1-based; 0 with insert after means the top).
    #[arg(long, value_name = "N")]
    pub line: Option<usize>,

    /// The first line of `--op replace-lines` (1-based).
    #[arg(long, value_name = "N")]
    pub start: Option<usize>,

    /// The last line of `--op replace-lines` (inclusive; default: `--start`).
    #[arg(long, value_name = "N")]
    pub end: Option<usize>,

    /// Show what would change without writing the file.
    #[arg(long)]
    pub dry_run: bool,

    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command and returns its exit code.
pub fn run(args: &EditArgs) -> ExitCode {
    super::exit_code("edit", args.json, execute(args))
}

fn execute(args: &EditArgs) -> Result<ExitCode> {
    check_flags(args)?;
    let target = fs::canonicalize(&args.file)
        .with_context(|| format!("cannot open {}", args.file.display()))?;
    let text = read_text(&target, "FILE")?;
    let shown = args.file.display().to_string();
    let result = match args.op {
        EditOp::Replace => {
            let (Some(old_file), Some(new_file)) = (&args.old_file, &args.new_file) else {
                bail!("--op replace needs --old-file PATH and --new-file PATH");
            };
            if old_file.as_os_str() == "-" && new_file.as_os_str() == "-" {
                bail!("only one of --old-file and --new-file can be `-` (standard input)");
            }
            let old = read_input(old_file, "--old-file")?;
            let new = read_input(new_file, "--new-file")?;
            let options = ReplaceOptions {
                replace_all: args.replace_all,
            };
            edit::replace(&text, &old, &new, options)
        }
        _ => edit::apply(&text, &operation(args)?),
    };
    match result {
        Ok(applied) => {
            if !args.dry_run {
                let mut tx = Transaction::new();
                tx.replace(&args.file, &text, applied.text.clone());
                tx.commit()?;
            }
            report_applied(args, &shown, &text, &applied)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(refusal) => {
            let mut out = io::stdout().lock();
            if args.json {
                let v = json!({
                    "status": "refused",
                    "kind": refusal.kind.as_str(),
                    "message": refusal.message,
                });
                writeln!(out, "{v}")?;
            } else {
                writeln!(out, "{}", refusal.message)?;
            }
            Ok(ExitCode::from(1))
        }
    }
}

/// Refuses flags that belong to another operation (a typo would otherwise be ignored).
fn check_flags(args: &EditArgs) -> Result<()> {
    use EditOp::*;
    let flags: [(&str, bool, &[EditOp]); 11] = [
        ("--old-file", args.old_file.is_some(), &[Replace]),
        ("--new-file", args.new_file.is_some(), &[Replace]),
        (
            "--replace-all",
            args.replace_all,
            &[Replace, ReplacePattern],
        ),
        ("--pattern", args.pattern.is_some(), &[ReplacePattern]),
        (
            "--replacement",
            args.replacement.is_some(),
            &[ReplacePattern],
        ),
        ("--anchor", args.anchor.is_some(), &[InsertText]),
        ("--before", args.before, &[InsertText, InsertLines]),
        ("--line", args.line.is_some(), &[InsertLines]),
        ("--start", args.start.is_some(), &[ReplaceLines]),
        ("--end", args.end.is_some(), &[ReplaceLines]),
        (
            "--text/--text-file",
            args.text.is_some() || args.text_file.is_some(),
            &[InsertText, Prepend, Append, InsertLines, ReplaceLines],
        ),
    ];
    for (flag, given, ops) in flags {
        if given && !ops.contains(&args.op) {
            let names: Vec<String> = ops.iter().map(|o| op_name(*o)).collect();
            bail!(
                "{flag} does not apply to --op {}; it belongs to --op {}",
                op_name(args.op),
                names.join(" or --op ")
            );
        }
    }
    Ok(())
}

fn op_name(op: EditOp) -> String {
    use clap::ValueEnum;
    op.to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

/// The engine operation of a non-replace `--op`, from its flags.
fn operation(args: &EditArgs) -> Result<Operation> {
    let name = op_name(args.op);
    let text = || -> Result<String> {
        match (&args.text, &args.text_file) {
            (Some(t), _) => Ok(t.clone()),
            (None, Some(p)) => read_input(p, "--text-file"),
            (None, None) => bail!("--op {name} needs --text TEXT or --text-file PATH"),
        }
    };
    let need = |value: Option<usize>, flag: &str| -> Result<usize> {
        value.with_context(|| format!("--op {name} needs {flag} N"))
    };
    Ok(match args.op {
        EditOp::ReplacePattern => Operation::ReplacePattern {
            pattern: args
                .pattern
                .clone()
                .with_context(|| format!("--op {name} needs --pattern REGEX"))?,
            replacement: args
                .replacement
                .clone()
                .with_context(|| format!("--op {name} needs --replacement TEXT"))?,
            all: args.replace_all,
        },
        EditOp::InsertText => {
            let anchor = args
                .anchor
                .clone()
                .with_context(|| format!("--op {name} needs --anchor TEXT"))?;
            Operation::at_anchor(anchor, text()?, args.before)
        }
        EditOp::Prepend => Operation::Prepend { text: text()? },
        EditOp::Append => Operation::Append { text: text()? },
        EditOp::InsertLines => {
            let line = need(args.line, "--line")?;
            if args.before {
                Operation::InsertBeforeLine {
                    line,
                    text: text()?,
                }
            } else {
                Operation::InsertAfterLine {
                    line,
                    text: text()?,
                }
            }
        }
        EditOp::ReplaceLines => {
            let start = need(args.start, "--start")?;
            Operation::ReplaceLines {
                start,
                end: args.end.unwrap_or(start),
                text: text()?,
            }
        }
        EditOp::Replace => bail!("--op replace takes --old-file and --new-file"),
    })
}

fn report_applied(args: &EditArgs, shown: &str, before: &str, applied: &Applied) -> Result<()> {
    let diff = edit::unified_diff(before, &applied.text, shown);
    let mut out = io::stdout().lock();
    if args.json {
        let v = json!({
            "status": "applied",
            "matched_by": applied.matched_by().to_string(),
            "replacements": applied.replacements(),
            "lines": applied.located.first().map(|l| l.lines.clone()).unwrap_or_default(),
            "dry_run": args.dry_run,
            "diff": diff,
        });
        writeln!(out, "{v}")?;
    } else {
        out.write_all(diff.as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

fn read_text(path: &Path, what: &str) -> Result<String> {
    let bytes = fs::read(path).with_context(|| format!("cannot read {what} {}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{what} {} is not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

fn read_input(path: &Path, flag: &str) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        io::stdin()
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {flag} from standard input"))?;
        return String::from_utf8(bytes)
            .map_err(|_| anyhow::anyhow!("{flag}: standard input is not UTF-8 text"));
    }
    read_text(path, flag)
}
