//! `patchwise context FILE[:LINE[:COL]] [--symbol NAME] [--query TEXT] [--budget TOKENS]`:
//! prints exactly what a model would be shown of a file for a target, followed by a one-line
//! summary (tokens used / budget, items included, spans omitted).
//!
//! The shell around `syntax::regions`: it reads the file and parses arguments; everything the
//! output says comes from the pure syntax layer, so the CLI and the language server agree.
//! Exit codes: 0 shown, 1 a `--symbol` that matches nothing (the output is still printed),
//! 2 usage or I/O errors.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::syntax::regions::{RegionOptions, Target, extract_region};
use crate::syntax::{Language, SyntaxTree};
use crate::tokens::Encoding;

/// Arguments of `patchwise context`.
#[derive(Debug, Clone, clap::Args)]
pub struct ContextArgs {
    /// The file, optionally with a 1-based cursor: `src/lib.rs:120` or `src/lib.rs:120:9`.
    #[arg(value_name = "FILE[:LINE[:COL]]")]
    pub target: String,

    /// Show this symbol (plain or qualified: `parse`, `Parser::parse`, `Class.method`).
    #[arg(long, value_name = "NAME")]
    pub symbol: Option<String>,

    /// Show the items that best match this task description.
    #[arg(long, value_name = "TEXT")]
    pub query: Option<String>,

    /// Tokens the output may use.
    #[arg(long, value_name = "TOKENS", default_value_t = 4000)]
    pub budget: usize,

    /// Tokenizer the budget is counted in: `cl100k_base` or `o200k_base`.
    #[arg(long, value_name = "NAME", default_value = "cl100k_base")]
    pub encoding: String,

    /// Files up to this many bytes are shown whole.
    #[arg(long, value_name = "BYTES", default_value_t = 8 * 1024)]
    pub whole_file_bytes: usize,

    /// The LSP language id to parse with (default: from the file extension).
    #[arg(long, value_name = "ID")]
    pub language: Option<String>,
}

/// Runs the command, printing to stdout (errors to stderr).
pub fn run(args: &ContextArgs) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match render(args) {
        Ok((output, found)) => {
            if stdout.write_all(output.as_bytes()).is_err() {
                return ExitCode::from(2);
            }
            if found {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(err) => {
            eprintln!("patchwise context: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// The text `run` prints, and whether the requested target was found.
pub fn render(args: &ContextArgs) -> Result<(String, bool)> {
    let (path, position) = split_target(&args.target);
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow::anyhow!(
            "expected a UTF-8 text file, found binary or other encoded data in {}",
            path.display()
        )
    })?;
    render_text(&text, &path.to_string_lossy(), position, args)
}

/// What `render` prints for `text` shown as `path_text` (`args.target` is not read): the
/// terminal and the MCP `context` tool share it.
pub fn render_text(
    text: &str,
    path_text: &str,
    position: Option<(usize, Option<usize>)>,
    args: &ContextArgs,
) -> Result<(String, bool)> {
    let encoding = parse_encoding(&args.encoding)?;
    let language = Language::detect(args.language.as_deref(), Some(path_text));
    let target = match (&args.symbol, &args.query, position) {
        (Some(_), Some(_), _) => bail!("expected at most one of --symbol and --query, found both"),
        (Some(name), None, _) => Target::Symbol(name.clone()),
        (None, Some(query), _) => Target::Query(query.clone()),
        (None, None, Some((line, column))) => Target::Position { line, column },
        (None, None, None) => Target::None,
    };
    let tree = SyntaxTree::parse(text, language);
    let options = RegionOptions {
        budget: args.budget,
        whole_file_bytes: args.whole_file_bytes,
        encoding,
        ..RegionOptions::default()
    };
    let region = extract_region(text, &tree, path_text, &target, &options);
    let found = !matches!(target, Target::Symbol(_)) || !region.targets.is_empty();
    let mut out = region.text.clone();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("-- context: {}\n", region.summary()));
    Ok((out, found))
}

/// `cl100k_base` / `cl100k`, `o200k_base` / `o200k`.
pub fn parse_encoding(name: &str) -> Result<Encoding> {
    match name.trim().to_ascii_lowercase().as_str() {
        "cl100k_base" | "cl100k" => Ok(Encoding::Cl100k),
        "o200k_base" | "o200k" => Ok(Encoding::O200k),
        other => bail!("expected encoding cl100k_base or o200k_base, found {other:?}"),
    }
}

/// `path:LINE[:COL]` → path and 1-based position. A path that exists as written wins, so file
/// names with colons keep working.
fn split_target(target: &str) -> (PathBuf, Option<(usize, Option<usize>)>) {
    if Path::new(target).exists() {
        return (PathBuf::from(target), None);
    }
    let parts: Vec<&str> = target.rsplitn(3, ':').collect();
    let number = |s: &str| s.parse::<usize>().ok().filter(|&n| n > 0);
    match parts.as_slice() {
        [col, line, path] if number(line).is_some() && number(col).is_some() => (
            PathBuf::from(path),
            Some((number(line).unwrap_or(1), number(col))),
        ),
        [last, ..] if number(last).is_some() => {
            let path = &target[..target.len() - last.len() - 1];
            (PathBuf::from(path), Some((number(last).unwrap_or(1), None)))
        }
        _ => (PathBuf::from(target), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_positions_off_paths() {
        assert_eq!(
            split_target("no/such.rs"),
            (PathBuf::from("no/such.rs"), None)
        );
        assert_eq!(
            split_target("no/such.rs:12"),
            (PathBuf::from("no/such.rs"), Some((12, None)))
        );
        assert_eq!(
            split_target("no/such.rs:12:5"),
            (PathBuf::from("no/such.rs"), Some((12, Some(5))))
        );
        assert_eq!(
            split_target("C:/x/such.rs:7"),
            (PathBuf::from("C:/x/such.rs"), Some((7, None)))
        );
    }

    #[test]
    fn parses_encodings() {
        assert_eq!(parse_encoding("o200k_base").unwrap(), Encoding::O200k);
        assert!(
            parse_encoding("gpt2")
                .unwrap_err()
                .to_string()
                .contains("cl100k_base")
        );
    }
}
