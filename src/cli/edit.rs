//! `patchwise edit FILE --old-file PATH --new-file PATH [--replace-all] [--dry-run] [--json]`:
//! the edit engine from a terminal, for users, scripts and benchmarks, with the same cascade and
//! checks as the language server (the read-before-edit ledger counts as satisfied).
//!
//! Exit codes: 0 applied (the unified diff, or JSON `{status, matched_by, replacements, diff}`,
//! on stdout; the file is written unless `--dry-run`), 1 refused (the refusal a model would get
//! on stdout; the file untouched), 2 usage or I/O error (on stderr). The file is replaced
//! atomically — a temporary file in the same directory, then a rename — and keeps its
//! permissions; a symlink is followed, so the link stays a link.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::edit::{self, Applied, ReplaceOptions};

/// Arguments of `patchwise edit`.
#[derive(Debug, Clone, clap::Args)]
pub struct EditArgs {
    /// The file to edit.
    pub file: PathBuf,

    /// A file holding the text to replace (OLD); `-` reads it from standard input.
    #[arg(long, value_name = "PATH")]
    pub old_file: PathBuf,

    /// A file holding the replacement text (NEW); `-` reads it from standard input.
    #[arg(long, value_name = "PATH")]
    pub new_file: PathBuf,

    /// Replace every place OLD matches instead of refusing when there are several.
    #[arg(long)]
    pub replace_all: bool,

    /// Show what would change without writing the file.
    #[arg(long)]
    pub dry_run: bool,

    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command and returns its exit code.
pub fn run(args: &EditArgs) -> ExitCode {
    match execute(args) {
        Ok(code) => code,
        Err(err) => {
            if args.json {
                let out = json!({ "status": "error", "message": format!("{err:#}") });
                println!("{out}");
            }
            eprintln!("patchwise edit: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn execute(args: &EditArgs) -> Result<ExitCode> {
    if args.old_file.as_os_str() == "-" && args.new_file.as_os_str() == "-" {
        bail!("only one of --old-file and --new-file can be `-` (standard input)");
    }
    let target = fs::canonicalize(&args.file)
        .with_context(|| format!("cannot open {}", args.file.display()))?;
    let text = read_text(&target, "FILE")?;
    let old = read_input(&args.old_file, "--old-file")?;
    let new = read_input(&args.new_file, "--new-file")?;
    let options = ReplaceOptions {
        replace_all: args.replace_all,
    };
    let shown = args.file.display().to_string();
    match edit::replace(&text, &old, &new, options) {
        Ok(applied) => {
            if !args.dry_run {
                write_atomically(&target, &applied.text)
                    .with_context(|| format!("cannot write {}", args.file.display()))?;
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

/// Writes `text` to a temporary file next to `path`, gives it `path`'s permissions, syncs it
/// and renames it over `path`, so readers see the old file or the new one, never half of one.
fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let permissions = fs::metadata(path)?.permissions();
    let mut attempt = 0u32;
    let (tmp, mut file) = loop {
        let candidate = dir.join(format!(
            ".{name}.patchwise-{}-{attempt}.tmp",
            std::process::id()
        ));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(f) => break (candidate, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot create a temporary file in {}", dir.display())
                });
            }
        }
    };
    let result = (|| -> Result<()> {
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        drop(file);
        fs::set_permissions(&tmp, permissions)?;
        fs::rename(&tmp, path)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
