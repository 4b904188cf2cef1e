//! `patchwise edit` through the real binary: exit codes, output, what is (not) written.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use std::io::Write as _;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_patchwise"))
}

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(file: &str, old: &str, new: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("target.rs"), file).unwrap();
        fs::write(dir.path().join("old.txt"), old).unwrap();
        fs::write(dir.path().join("new.txt"), new).unwrap();
        Setup { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn target(&self) -> String {
        fs::read_to_string(self.path("target.rs")).unwrap()
    }

    fn run(&self, extra: &[&str]) -> Output {
        bin()
            .current_dir(self.dir.path())
            .args([
                "edit",
                "target.rs",
                "--old-file",
                "old.txt",
                "--new-file",
                "new.txt",
            ])
            .args(extra)
            .output()
            .unwrap()
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const FILE: &str = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";

#[test]
fn applies_and_prints_the_diff() {
    let s = Setup::new(FILE, "    let x = 1;", "    let x = 2;");
    let o = s.run(&[]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let out = stdout(&o);
    assert!(
        out.starts_with("--- a/target.rs\n+++ b/target.rs\n@@"),
        "{out}"
    );
    assert!(out.contains("-    let x = 1;\n+    let x = 2;\n"), "{out}");
    assert_eq!(s.target(), FILE.replace("x = 1", "x = 2"));
    // No temporary file is left behind.
    let names: Vec<_> = fs::read_dir(s.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[test]
fn dry_run_leaves_the_file_alone() {
    let s = Setup::new(FILE, "    let x = 1;", "    let x = 2;");
    let o = s.run(&["--dry-run"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("+    let x = 2;"));
    assert_eq!(s.target(), FILE);
}

#[test]
fn json_reports_the_pass_and_count() {
    let s = Setup::new(
        FILE,
        "\tlet x = 1;\n\tprintln!(\"{x}\");",
        "\tlet x = 1;\n\tprintln!(\"x = {x}\");",
    );
    let o = s.run(&["--json"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["status"], "applied");
    assert_eq!(v["matched_by"], "tabs-to-spaces");
    assert_eq!(v["replacements"], 1);
    assert!(
        v["diff"]
            .as_str()
            .unwrap()
            .contains("+    println!(\"x = {x}\");"),
        "{v}"
    );
    assert!(s.target().contains("    println!(\"x = {x}\");\n"));
}

#[test]
fn refusal_exits_1_and_does_not_write() {
    let s = Setup::new(FILE, "    let y = 1;\n    let z = 2;", "    let y = 3;");
    let o = s.run(&[]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("OLD was not found"), "{out}");
    assert!(out.contains("First difference at line 2"), "{out}");
    assert_eq!(s.target(), FILE);
    let o = s.run(&["--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["status"], "refused");
    assert_eq!(v["kind"], "not-found");
}

#[test]
fn ambiguity_is_refused_unless_replace_all() {
    let file = "a = 1\nb = 2\na = 1\n";
    let s = Setup::new(file, "a = 1", "a = 9");
    let o = s.run(&[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("at lines 1, 3"), "{}", stdout(&o));
    assert_eq!(s.target(), file);
    let o = s.run(&["--replace-all", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["replacements"], 2);
    assert_eq!(s.target(), "a = 9\nb = 2\na = 9\n");
}

#[test]
fn io_and_usage_errors_exit_2() {
    let s = Setup::new(FILE, "x", "y");
    let o = bin()
        .current_dir(s.dir.path())
        .args([
            "edit",
            "missing.rs",
            "--old-file",
            "old.txt",
            "--new-file",
            "new.txt",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.rs"));
    let o = bin()
        .current_dir(s.dir.path())
        .args([
            "edit",
            "target.rs",
            "--old-file",
            "nope.txt",
            "--new-file",
            "new.txt",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["status"], "error");
    let o = bin()
        .current_dir(s.dir.path())
        .args(["edit", "target.rs", "--old-file", "old.txt"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "clap usage error");
    fs::write(s.path("bin.rs"), b"fn a() {}\n\xff\xfe\n").unwrap();
    let o = bin()
        .current_dir(s.dir.path())
        .args([
            "edit",
            "bin.rs",
            "--old-file",
            "old.txt",
            "--new-file",
            "new.txt",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not UTF-8"));
}

#[test]
fn crlf_files_stay_crlf() {
    let file = "a\r\nb\r\nc\r\n";
    let s = Setup::new(file, "b\nc", "B\nc\nd");
    let o = s.run(&[]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(s.target(), "a\r\nB\r\nc\r\nd\r\n");
}

#[test]
fn old_text_from_standard_input() {
    let s = Setup::new(FILE, "", "    let x = 5;");
    let mut child = bin()
        .current_dir(s.dir.path())
        .args([
            "edit",
            "target.rs",
            "--old-file",
            "-",
            "--new-file",
            "new.txt",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"    let x = 1;")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(s.target().contains("let x = 5;"));
}

#[cfg(unix)]
#[test]
fn keeps_permissions_and_follows_symlinks() {
    use std::os::unix::fs::PermissionsExt;
    let s = Setup::new(FILE, "    let x = 1;", "    let x = 2;");
    let target = s.path("target.rs");
    fs::set_permissions(&target, fs::Permissions::from_mode(0o751)).unwrap();
    std::os::unix::fs::symlink(&target, s.path("link.rs")).unwrap();
    let o = bin()
        .current_dir(s.dir.path())
        .args([
            "edit",
            "link.rs",
            "--old-file",
            "old.txt",
            "--new-file",
            "new.txt",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(
        fs::symlink_metadata(s.path("link.rs"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o751);
    assert!(s.target().contains("let x = 2;"));
}

// ---------------------------------------------------------------------------------------------
// `--op`: every engine operation from the command line

impl Setup {
    /// `patchwise edit target.rs ARGS…` (no OLD/NEW files).
    fn op(&self, args: &[&str]) -> Output {
        bin()
            .current_dir(self.dir.path())
            .arg("edit")
            .arg("target.rs")
            .args(args)
            .output()
            .unwrap()
    }
}

const TWO: &str = "let x = 1;\nlet y = 1;\n";

#[test]
fn replace_pattern_refuses_several_matches_unless_all() {
    let s = Setup::new(TWO, "", "");
    let args = [
        "--op",
        "replace-pattern",
        "--pattern",
        r"let (\w) = 1",
        "--replacement",
        "let $1 = 2",
    ];
    let o = s.op(&args);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stdout(&o).contains("lines 1, 2"), "{}", stdout(&o));
    assert_eq!(s.target(), TWO);
    let o = s.op(&[&args[..], &["--all", "--json"]].concat());
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["matched_by"], "pattern");
    assert_eq!(s.target(), "let x = 2;\nlet y = 2;\n");
    let o = s.op(&[
        "--op",
        "replace-pattern",
        "--pattern",
        "(",
        "--replacement",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("not a valid regular expression"));
}

#[test]
fn insert_text_needs_a_unique_anchor() {
    let s = Setup::new(FILE, "", "");
    let o = s.op(&[
        "--op",
        "insert-text",
        "--anchor",
        "    let x = 1;",
        "--text",
        "    let y = x;",
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(s.target(), FILE.replace("= 1;\n", "= 1;\n    let y = x;\n"));
    let o = s.op(&[
        "--op",
        "insert-text",
        "--anchor",
        "    let",
        "--text",
        "    // note",
        "--before",
    ]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stdout(&o).contains("lines 2, 3"), "{}", stdout(&o));
}

#[test]
fn prepend_append_and_line_operations() {
    let s = Setup::new(FILE, "", "");
    let ok = |o: Output| assert_eq!(o.status.code(), Some(0), "{o:?}");
    ok(s.op(&["--op", "prepend", "--text", "// top"]));
    ok(s.op(&["--op", "append", "--text", "// end"]));
    ok(s.op(&[
        "--op",
        "replace-lines",
        "--start",
        "3",
        "--text",
        "    let x = 3;",
    ]));
    ok(s.op(&[
        "--op",
        "insert-lines",
        "--line",
        "3",
        "--before",
        "--text",
        "    // x",
    ]));
    assert_eq!(
        s.target(),
        "// top\nfn main() {\n    // x\n    let x = 3;\n    println!(\"{x}\");\n}\n// end\n"
    );
    fs::write(s.path("more.txt"), "// from a file\n").unwrap();
    ok(s.op(&["--op", "append", "--text-file", "more.txt", "--dry-run"]));
    assert!(!s.target().contains("from a file"));
}

#[test]
fn flags_of_another_operation_are_usage_errors() {
    let s = Setup::new(FILE, "", "");
    for args in [
        &["--op", "append", "--pattern", "x", "--text", "y"][..],
        &["--op", "prepend"][..],
        &["--op", "replace-pattern", "--pattern", "x"][..],
        &["--op", "insert-lines", "--text", "x"][..],
        &["--old-file", "old.txt"][..],
    ] {
        let o = s.op(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--"), "{err}");
    }
    let o = s.op(&["--op", "append", "--pattern", "x", "--text", "y"]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "--pattern does not apply to --op append; it belongs to --op replace-pattern"
        )
    );
    assert_eq!(s.target(), FILE);
}
