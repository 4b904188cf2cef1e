//! `patchwise context` through the real binary: what a model would be shown, the summary line,
//! exit codes, and agreement with the library's own output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use patchwise::syntax::regions::{RegionOptions, Target, extract_region};
use patchwise::syntax::{Language, SyntaxTree};

fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/syntax")
        .join(relative)
}

fn context(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_patchwise"))
        .arg("context")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn summary(text: &str) -> &str {
    text.lines().last().unwrap_or("")
}

#[test]
fn symbol_target_prints_the_item_whole_with_a_summary() {
    let file = fixture("rust/large.rs");
    let output = context(&[
        file.to_str().unwrap(),
        "--symbol",
        "Escrow::parse_escrow",
        "--budget",
        "1500",
    ]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert!(text.contains("[MASSIVE]"), "{text}");
    // The target, whole, with its container's first line and cat -n numbering.
    assert!(text.contains("  4012\timpl Escrow {\n"), "{text}");
    assert!(
        text.contains(
            "  4026\t    pub fn parse_escrow(line: &str) -> Result<Self, LedgerError> {\n"
        )
    );
    assert!(text.contains("  4045\t    }\n"));
    assert!(
        text.contains("omitted: read_file with offset="),
        "omitted spans say how to get them"
    );
    let last = summary(&text);
    assert!(last.starts_with("-- context: "), "{last}");
    assert!(last.contains(" / 1500 tokens"), "{last}");
    assert!(
        last.contains("Escrow::parse_escrow (lines 4025-4045)"),
        "{last}"
    );
    assert!(last.contains("spans omitted"), "{last}");
}

#[test]
fn output_is_exactly_what_the_library_shows_a_model() {
    let file = fixture("python/decorators.py");
    let path = file.to_str().unwrap();
    let output = context(&[
        path,
        "--symbol",
        "Inventory.add",
        "--budget",
        "500",
        "--whole-file-bytes",
        "0",
    ]);
    assert!(output.status.success(), "{output:?}");
    let text = std::fs::read_to_string(&file).unwrap();
    let tree = SyntaxTree::parse(&text, Language::Python);
    let options = RegionOptions {
        budget: 500,
        whole_file_bytes: 0,
        ..RegionOptions::default()
    };
    let region = extract_region(
        &text,
        &tree,
        path,
        &Target::Symbol("Inventory.add".into()),
        &options,
    );
    assert_eq!(
        stdout(&output),
        format!("{}-- context: {}\n", region.text, region.summary())
    );
}

#[test]
fn cursor_positions_pick_the_enclosing_item() {
    let file = fixture("rust/large.rs");
    let target = format!("{}:3021:9", file.display());
    let output = context(&[&target, "--budget", "1200"]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert!(text.contains("  3021\t        self.tags.insert"), "{text}");
    assert!(
        summary(&text).contains("Order::tag (lines 3013-3023)"),
        "{text}"
    );
}

#[test]
fn small_files_are_shown_whole() {
    let file = fixture("go/server.go");
    let output = context(&[file.to_str().unwrap(), "--encoding", "o200k_base"]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert!(text.contains("whole file"), "{text}");
    assert!(text.contains("     1\t// Package server answers health checks.\n"));
    assert!(text.contains("    40\tfunc (s *Stack[T]) Push(v T)"));
    assert!(summary(&text).contains("0 spans omitted"), "{text}");
}

#[test]
fn queries_find_matching_items() {
    let file = fixture("rust/nested.rs");
    let output = context(&[
        file.to_str().unwrap(),
        "--query",
        "the shoelace formula for polygons",
        "--budget",
        "900",
        "--whole-file-bytes",
        "0",
    ]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert!(
        text.contains("    67\tfn shoelace(points: &[Point]) -> f64 {"),
        "{text}"
    );
    assert!(text.contains("    85\t}"), "{text}");
}

#[test]
fn unknown_symbols_exit_1_and_say_what_exists() {
    let file = fixture("rust/nested.rs");
    let output = context(&[
        file.to_str().unwrap(),
        "--symbol",
        "distanse",
        "--whole-file-bytes",
        "0",
    ]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let text = stdout(&output);
    assert!(
        text.contains("Note: no symbol named `distanse` in this file; similar symbols: Point::distance (method, line 19)"),
        "{text}"
    );
}

#[test]
fn usage_and_io_errors_exit_2() {
    let missing = context(&["/no/such/file.rs"]);
    assert_eq!(missing.status.code(), Some(2));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("cannot read /no/such/file.rs"), "{err}");

    let file = fixture("rust/nested.rs");
    let both = context(&[file.to_str().unwrap(), "--symbol", "a", "--query", "b"]);
    assert_eq!(both.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&both.stderr).contains("at most one of --symbol and --query"));

    let encoding = context(&[file.to_str().unwrap(), "--encoding", "gpt2"]);
    assert_eq!(encoding.status.code(), Some(2));

    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("blob.rs");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x01]).unwrap();
    let output = context(&[binary.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("expected a UTF-8 text file"));
}

#[test]
fn unknown_languages_fall_back_to_lines() {
    let file = fixture("text/notes.txt");
    let target = format!("{}:250", file.display());
    let output = context(&[&target, "--budget", "300"]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    assert!(text.contains("plaintext"), "{text}");
    assert!(text.contains("   250\tnote line 250\n"), "{text}");
}
