//! Unit tests of the cascade on small inputs; the realistic cases live in `fixtures/edit/`.

use super::*;

fn ok(text: &str, old: &str, new: &str) -> Applied {
    replace(text, old, new, ReplaceOptions::default()).unwrap_or_else(|r| panic!("refused: {r}"))
}

fn refused(text: &str, old: &str, new: &str) -> Refusal {
    match replace(text, old, new, ReplaceOptions::default()) {
        Ok(a) => panic!("applied with {}: {:?}", a.matched_by(), a.text),
        Err(r) => r,
    }
}

#[test]
fn exact_replace() {
    let a = ok("fn a() {\n    1\n}\n", "    1", "    2");
    assert_eq!(a.text, "fn a() {\n    2\n}\n");
    assert_eq!(a.matched_by().to_string(), "exact");
}

#[test]
fn ambiguous_names_every_line() {
    let r = refused("x = 1\ny = 2\nx = 1\n", "x = 1", "x = 3");
    assert_eq!(r.kind, RefusalKind::Ambiguous { lines: vec![1, 3] });
    assert!(r.message.contains("at lines 1, 3"), "{r}");
    let a = replace(
        "x = 1\ny = 2\nx = 1\n",
        "x = 1",
        "x = 3",
        ReplaceOptions { replace_all: true },
    )
    .unwrap();
    assert_eq!(a.text, "x = 3\ny = 2\nx = 3\n");
    assert_eq!(a.replacements(), 2);
}

#[test]
fn trailing_whitespace_keeps_the_files_own() {
    let file = "def f():\n    a = 1  \n    b = 2\n";
    let a = ok(file, "    a = 1\n    b = 2", "    a = 1\n    b = 3");
    assert_eq!(a.text, "def f():\n    a = 1  \n    b = 3\n");
    assert_eq!(a.matched_by().to_string(), "trailing-whitespace");
}

#[test]
fn indentation_shift_reindents_new() {
    let file = "class A:\n    def f(self):\n        a = 1\n        return a\n";
    let a = ok(
        file,
        "def f(self):\n    a = 1\n    return a",
        "def f(self):\n    a = 2\n    return a",
    );
    assert_eq!(
        a.text,
        "class A:\n    def f(self):\n        a = 2\n        return a\n"
    );
    assert_eq!(a.matched_by().to_string(), "indentation(+4)");
}

#[test]
fn crlf_file_keeps_crlf() {
    let file = "a\r\nb\r\nc\r\n";
    let a = ok(file, "a\nb", "a\nB\nb2");
    assert_eq!(a.text, "a\r\nB\r\nb2\r\nc\r\n");
    assert_eq!(a.matched_by().to_string(), "line-endings");
}

#[test]
fn tabs_to_spaces() {
    let file = "fn f() {\n    if x {\n        y();\n    }\n}\n";
    let a = ok(
        file,
        "\tif x {\n\t\ty();\n\t}",
        "\tif x {\n\t\ty();\n\t\tz();\n\t}",
    );
    assert_eq!(
        a.text,
        "fn f() {\n    if x {\n        y();\n        z();\n    }\n}\n"
    );
    assert_eq!(a.matched_by().to_string(), "tabs-to-spaces");
}

#[test]
fn elision_keeps_the_middle() {
    let file = "fn f() {\n    a();\n    b();\n    c();\n}\n";
    let a = ok(
        file,
        "fn f() {\n    // ... existing code ...\n}",
        "fn f() {\n    // ... existing code ...\n    d();\n}",
    );
    assert_eq!(
        a.text,
        "fn f() {\n    a();\n    b();\n    c();\n    d();\n}\n"
    );
    assert_eq!(a.matched_by().to_string(), "elision");
}

#[test]
fn new_eliding_what_old_did_not_is_refused() {
    let file = "fn f() {\n    a();\n    b();\n}\n";
    let r = refused(
        file,
        "fn f() {\n    a();\n    b();\n}",
        "fn f() {\n    // ... existing code ...\n    c();\n}",
    );
    assert_eq!(r.kind, RefusalKind::Elision);
}

#[test]
fn not_found_shows_closest_region_and_difference() {
    let file = "fn a() {\n    let x = foo(1, 2);\n    x\n}\n";
    let r = refused(
        file,
        "    let x = foo(1, 3);\n    y",
        "    let x = foo(1, 4);\n    y",
    );
    assert_eq!(r.kind, RefusalKind::NotFound);
    assert!(r.message.contains("First difference at line 2"), "{r}");
    assert!(r.message.contains("····let·x·=·foo(1,·3);"), "{r}");
}

#[test]
fn already_applied_is_detected() {
    let file = "fn a() {\n    let total = compute(1, 2);\n}\n";
    let r = refused(
        file,
        "    let total = compute(1);",
        "    let total = compute(1, 2);",
    );
    assert_eq!(r.kind, RefusalKind::AlreadyApplied);
}

#[test]
fn no_op_is_refused() {
    assert_eq!(refused("abc", "b", "b").kind, RefusalKind::NoOp);
    assert_eq!(refused("abc", "", "x").kind, RefusalKind::EmptyOld);
}

#[test]
fn fuzzy_fixes_one_wrong_context_token() {
    let file = "fn a() {\n    let x = load(path);\n    let y = parse(x);\n    check(y);\n}\n";
    let a = ok(
        file,
        "    let x = load(file);\n    let y = parse(x);\n    check(y);",
        "    let x = load(file);\n    let y = parse(x);\n    verify(y);",
    );
    assert_eq!(
        a.text,
        "fn a() {\n    let x = load(path);\n    let y = parse(x);\n    verify(y);\n}\n"
    );
    assert_eq!(a.matched_by().to_string(), "fuzzy");
}

#[test]
fn line_numbers_are_stripped() {
    let file = "a = 1\nb = 2\nc = 3\n";
    let a = ok(
        file,
        "     2\tb = 2\n     3\tc = 3",
        "     2\tb = 20\n     3\tc = 3",
    );
    assert_eq!(a.text, "a = 1\nb = 20\nc = 3\n");
    assert_eq!(a.matched_by().to_string(), "line-numbers");
}

#[test]
fn batches_are_all_or_nothing() {
    let file = "a\nb\nc\n";
    let ops = vec![
        Operation::Replace {
            old: "a".into(),
            new: "A".into(),
            replace_all: false,
        },
        Operation::InsertAfterLine {
            line: 3,
            text: "d".into(),
        },
    ];
    assert_eq!(apply_batch(file, &ops).unwrap().text, "A\nb\nc\nd\n");
    let bad = vec![
        Operation::Replace {
            old: "a\nb".into(),
            new: "x".into(),
            replace_all: false,
        },
        Operation::Replace {
            old: "b\nc".into(),
            new: "y".into(),
            replace_all: false,
        },
    ];
    assert_eq!(
        apply_batch(file, &bad).unwrap_err().kind,
        RefusalKind::Overlap
    );
}

#[test]
fn line_and_anchor_operations() {
    let file = "one\ntwo\nthree";
    let a = apply(
        file,
        &Operation::InsertBeforeLine {
            line: 2,
            text: "1.5".into(),
        },
    )
    .unwrap();
    assert_eq!(a.text, "one\n1.5\ntwo\nthree");
    let a = apply(
        file,
        &Operation::Append {
            text: "four".into(),
        },
    )
    .unwrap();
    assert_eq!(a.text, "one\ntwo\nthree\nfour");
    let a = apply(
        file,
        &Operation::ReplaceLines {
            start: 2,
            end: 3,
            text: "2\n3".into(),
        },
    )
    .unwrap();
    assert_eq!(a.text, "one\n2\n3");
    let a = apply(
        file,
        &Operation::InsertAfter {
            anchor: "two".into(),
            text: "2b".into(),
        },
    )
    .unwrap();
    assert_eq!(a.text, "one\ntwo\n2b\nthree");
    let err = apply(
        file,
        &Operation::ReplacePattern {
            pattern: "(".into(),
            replacement: "x".into(),
            all: false,
        },
    )
    .unwrap_err();
    assert_eq!(err.kind, RefusalKind::InvalidPattern);
    let a = apply(
        file,
        &Operation::ReplacePattern {
            pattern: r"t(\w+)".into(),
            replacement: "T$1".into(),
            all: true,
        },
    )
    .unwrap();
    assert_eq!(a.text, "one\nTwo\nThree");
}

#[test]
fn no_final_newline_is_added_at_the_end_of_file() {
    let a = ok("a\nb", "b\n", "c\n");
    assert_eq!(a.text, "a\nc");
}

#[test]
fn added_lines_take_the_files_indent_unit() {
    let file = "fn f() {\n    a();\n}\n";
    let a = ok(file, "    a();", "    a();\n\tb();");
    assert_eq!(a.text, "fn f() {\n    a();\n    b();\n}\n");
    let go = "func f() {\n\ta()\n}\n";
    let a = ok(go, "\ta()", "\ta()\n    b()");
    assert_eq!(a.text, "func f() {\n\ta()\n\tb()\n}\n");
}

#[test]
fn inserting_before_a_first_line_copied_without_indentation() {
    let file = "def f():\n    x = 1\n    y = 2\n";
    let a = ok(file, "x = 1\n    y = 2", "w = 0\nx = 1\n    y = 2");
    assert_eq!(a.text, "def f():\n    w = 0\n    x = 1\n    y = 2\n");
}

#[test]
fn already_applied_insertion_is_not_applied_twice() {
    let file = "fn f() {\n    check();\n    run();\n}\n";
    let r = refused(file, "    run();", "    check();\n    run();");
    assert_eq!(r.kind, RefusalKind::AlreadyApplied, "{r}");
}

#[test]
fn typographic_reverse_keeps_the_files_characters_in_changed_lines() {
    let file = "// Say “hello” – politely\nsay(“hello”, 1);\nsay(“bye”, 2);\n";
    let a = ok(
        file,
        "// Say \"hello\" - politely\nsay(\"hello\", 1);",
        "// Say \"hello\" - politely\nsay(\"hello\", 10);",
    );
    assert_eq!(a.matched_by().to_string(), "typographic");
    assert_eq!(
        a.text,
        "// Say “hello” – politely\nsay(“hello”, 10);\nsay(“bye”, 2);\n"
    );
    // Forward: the model's curly quotes where the file has ASCII are not written.
    let file = "say(\"hello\", 1);\n";
    let a = ok(
        file,
        "say(“hello”, 1);",
        "say(“hello”, 2);\nsay(“again”, 3);",
    );
    assert_eq!(a.text, "say(\"hello\", 2);\nsay(\"again\", 3);\n");
}

#[test]
fn a_patch_context_line_picks_the_hunk_inside_its_block() {
    let file = "def a():\n    x = 1\n    return x\n\n\ndef b():\n    x = 1\n    return x\n";
    let r = refused(file, "    x = 1\n    return x", "    x = 2\n    return x");
    assert!(matches!(r.kind, RefusalKind::Ambiguous { .. }));
    let a = replace_in_context(
        file,
        "def b():",
        "    x = 1\n    return x",
        "    x = 2\n    return x",
        ReplaceOptions::default(),
    )
    .unwrap();
    assert_eq!(
        a.text,
        file.replace("def b():\n    x = 1", "def b():\n    x = 2")
    );
    // A context line that is not in the file does not help.
    let r = replace_in_context(
        file,
        "def c():",
        "    x = 1",
        "    x = 2",
        ReplaceOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(r.kind, RefusalKind::Ambiguous { .. }));
}

#[test]
fn repetitive_old_against_repetitive_file_is_refused_quickly() {
    let file = "}\n".repeat(200_000);
    let old = format!("{}x\n", "}  \n".repeat(3_000));
    let r = refused(&file, &old, "y\n");
    assert!(matches!(r.kind, RefusalKind::Ambiguous { .. }), "{r}");
}
