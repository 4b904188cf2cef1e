use std::path::{Path, PathBuf};

use super::*;

const ORIGINAL: &str = "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n\nfn c() {\n    3\n}\n";

fn proposal(original: &str, new: &str) -> Proposal {
    Proposal::new(
        "change b",
        vec![ProposalFile::new(
            PathBuf::from("/w/src/lib.rs"),
            "src/lib.rs".into(),
            Some(3),
            false,
            original.into(),
            new.into(),
        )],
        "test/model",
        1,
        "exact",
    )
}

fn path() -> &'static Path {
    Path::new("/w/src/lib.rs")
}

/// Applies `changes` (each against the text before it) to `text`, as an editor would.
fn edit_doc(text: &str, changes: &[Replacement]) -> String {
    let mut t = text.to_owned();
    for c in changes {
        t = TextEdit::single(c.clone()).apply(&t).unwrap();
    }
    t
}

fn apply(text: &str, a: &FileApply) -> String {
    TextEdit::new(a.replacements.clone())
        .unwrap()
        .apply(text)
        .unwrap()
}

fn at(text: &str, needle: &str) -> usize {
    text.find(needle).unwrap()
}

#[test]
fn edit_between_is_line_level_and_round_trips() {
    let new = ORIGINAL.replace("    2\n", "    20\n    21\n");
    let e = edit_between(ORIGINAL, &new);
    assert_eq!(e.replacements().len(), 1);
    let r = &e.replacements()[0];
    assert_eq!(&ORIGINAL[r.range.clone()], "    2\n");
    assert_eq!(e.apply(ORIGINAL).unwrap(), new);
    // No trailing newline, insertions at the end, deletions.
    for (a, b) in [
        ("x", "y"),
        ("a\nb", "a\nb\nc"),
        ("a\nb\nc\n", "a\nc\n"),
        ("", "new\n"),
        ("old\n", ""),
        ("a\r\nb\r\n", "a\r\nB\r\n"),
    ] {
        assert_eq!(edit_between(a, b).apply(a).unwrap(), b, "{a:?} -> {b:?}");
    }
    assert!(edit_between("same", "same").is_empty());
}

#[test]
fn proposal_carries_diff_and_metadata() {
    let p = proposal(ORIGINAL, &ORIGINAL.replace("    2\n", "    22\n"));
    assert!(
        p.diff.starts_with("--- a/src/lib.rs\n+++ b/src/lib.rs\n"),
        "{}",
        p.diff
    );
    assert!(p.diff.contains("-    2\n+    22\n"), "{}", p.diff);
    let text = p.to_string();
    assert!(
        text.contains("by test/model (1 attempt, matched by exact)"),
        "{text}"
    );
}

#[test]
fn hunks_report_current_ranges_and_diff_text() {
    let new = ORIGINAL
        .replace("    1\n", "    10\n")
        .replace("    3\n", "    30\n");
    let mut store = Proposals::new();
    let id = store.add(proposal(ORIGINAL, &new));
    let hunks = store.hunks(id, path());
    assert_eq!(hunks.len(), 2);
    assert_eq!(&ORIGINAL[hunks[0].range.clone()], "    1\n");
    assert_eq!(&ORIGINAL[hunks[1].range.clone()], "    3\n");
    assert!(
        hunks[0]
            .diff
            .starts_with("@@ -1,5 +1,5 @@\n fn a() {\n-    1\n+    10\n }\n"),
        "{}",
        hunks[0].diff
    );
    assert!(
        hunks[1].diff.contains("-    3\n+    30\n"),
        "{}",
        hunks[1].diff
    );
    assert_eq!(store.hunks_for_path(path()).len(), 2);
    assert!(store.hunks_for_path(Path::new("/elsewhere")).is_empty());
    assert_eq!(store.for_path(path()).len(), 1);
    assert_eq!(store.at(path(), 0..3).len(), 0);
    assert_eq!(store.at(path(), hunks[1].range.clone()).len(), 1);
}

#[test]
fn edits_before_and_after_the_target_move_ranges() {
    let new = ORIGINAL.replace("    2\n", "    22\n");
    let mut store = Proposals::new();
    let id = store.add(proposal(ORIGINAL, &new));
    // Insert a line at the top, change fn c, append at the end (each against the text before).
    let three = at(ORIGINAL, "    3") + 4 + "// header\n".len();
    let changes = vec![
        Replacement::insert(0, "// header\n"),
        Replacement::new(three..three + 1, "4"),
        Replacement::insert(ORIGINAL.len() + "// header\n".len(), "// end\n"),
    ];
    let doc = edit_doc(ORIGINAL, &changes);
    assert!(doc.ends_with("    4\n}\n// end\n"), "{doc}");
    assert!(store.on_change(path(), &changes).is_empty());
    let hunk = &store.hunks(id, path())[0];
    assert_eq!(&doc[hunk.range.clone()], "    2\n");
    assert!(hunk.diff.starts_with("@@ -4,7 +4,7 @@\n"), "{}", hunk.diff);
    let a = store.to_apply(id, &doc, Some(9)).unwrap();
    assert_eq!(a.version, Some(9));
    assert_eq!(apply(&doc, &a), doc.replace("    2\n", "    22\n"));
}

#[test]
fn insertion_right_at_a_hunk_boundary_does_not_touch_it() {
    let new = ORIGINAL.replace("    2\n", "    22\n");
    let mut store = Proposals::new();
    let id = store.add(proposal(ORIGINAL, &new));
    let start = at(ORIGINAL, "    2\n");
    let changes = vec![
        Replacement::insert(start, "    // before\n"),
        Replacement::insert(start + "    // before\n".len() + 6, "    // after\n"),
    ];
    let doc = edit_doc(ORIGINAL, &changes);
    assert!(store.on_change(path(), &changes).is_empty());
    let a = store.to_apply(id, &doc, Some(4)).unwrap();
    assert_eq!(
        apply(&doc, &a),
        doc.replace("    2\n", "    22\n"),
        "the user's lines stay, the proposal's line changes"
    );
}

#[test]
fn change_inside_the_target_marks_stale() {
    let new = ORIGINAL.replace("    2\n", "    22\n");
    let mut store = Proposals::new();
    let id = store.add(proposal(ORIGINAL, &new));
    let two = at(ORIGINAL, "    2\n") + 4;
    let changes = vec![Replacement::new(two..two + 1, "5")];
    assert_eq!(store.on_change(path(), &changes), vec![id]);
    let reason = store.stale(id).unwrap().to_owned();
    assert!(reason.contains("was edited"), "{reason}");
    assert!(store.hunks(id, path()).is_empty());
    let doc = edit_doc(ORIGINAL, &changes);
    let err = store.to_apply(id, &doc, Some(4)).unwrap_err();
    assert!(matches!(err, ApplyError::Stale { .. }));
    assert!(err.to_string().contains("nothing was applied"), "{err}");
}

#[test]
fn rewrite_with_the_same_text_re_anchors() {
    // A formatter (or a full-document sync) replaces everything with the same target text moved.
    let new = ORIGINAL.replace("    2\n", "    22\n");
    let mut store = Proposals::new();
    let id = store.add(proposal(ORIGINAL, &new));
    let doc = format!("use std::fmt;\n\n{ORIGINAL}");
    let changes = vec![Replacement::new(0..ORIGINAL.len(), doc.clone())];
    assert!(store.on_change(path(), &changes).is_empty());
    assert!(store.stale(id).is_none());
    let a = store.to_apply(id, &doc, Some(5)).unwrap();
    assert_eq!(apply(&doc, &a), format!("use std::fmt;\n\n{new}"));
}

#[test]
fn ambiguous_relocation_is_stale() {
    let original = "x\n    same\ny\n";
    let new = "x\n    other\ny\n";
    let mut store = Proposals::new();
    let id = store.add(proposal(original, new));
    let doc = format!("{original}{original}");
    let changes = vec![Replacement::new(0..original.len(), doc.clone())];
    assert_eq!(store.on_change(path(), &changes), vec![id]);
    assert!(store.to_apply(id, &doc, None).is_err());
}

#[test]
fn unknown_changes_are_resynced_at_apply_time() {
    let new = ORIGINAL.replace("    2\n", "    22\n");
    let mut store = Proposals::new();
    let id = store.add(proposal(ORIGINAL, &new));
    // The store was never told about this change: to_apply re-locates in the given text.
    let doc = ORIGINAL.replace("fn a() {\n    1\n}\n\n", "");
    let a = store.to_apply(id, &doc, Some(7)).unwrap();
    assert_eq!(apply(&doc, &a), doc.replace("    2\n", "    22\n"));
    // And a text where the target is gone refuses.
    let gone = ORIGINAL.replace("    2\n", "    9\n");
    let mut store2 = Proposals::new();
    let id2 = store2.add(proposal(ORIGINAL, &new));
    assert!(matches!(
        store2.to_apply(id2, &gone, Some(7)),
        Err(ApplyError::Stale { .. })
    ));
}

#[test]
fn out_of_range_change_loses_track() {
    let mut store = Proposals::new();
    let id = store.add(proposal(ORIGINAL, &ORIGINAL.replace("    2\n", "    22\n")));
    let changes = vec![Replacement::new(5000..5001, "x")];
    assert_eq!(store.on_change(path(), &changes), vec![id]);
    assert!(store.stale(id).unwrap().contains("lost track"));
}

#[test]
fn created_files_and_multi_file_proposals() {
    let created = ProposalFile::new(
        PathBuf::from("/w/src/new.rs"),
        "src/new.rs".into(),
        None,
        true,
        String::new(),
        "pub fn n() {}\n".into(),
    );
    let edited = proposal(ORIGINAL, &ORIGINAL.replace("    2\n", "    22\n"))
        .files
        .remove(0);
    let p = Proposal::new("two files", vec![edited, created], "m", 2, "exact");
    assert!(p.diff.contains("src/new.rs (new file)"), "{}", p.diff);
    let mut store = Proposals::new();
    let id = store.add(p);
    assert!(matches!(
        store.to_apply(id, ORIGINAL, None),
        Err(ApplyError::MultiFile { count: 2, .. })
    ));
    let all = store
        .to_apply_files(id, |p| {
            (p == path()).then(|| (ORIGINAL.to_owned(), Some(3)))
        })
        .unwrap();
    assert_eq!(all.len(), 2);
    assert!(all[1].create);
    assert_eq!(all[1].replacements[0].text, "pub fn n() {}\n");
    assert!(store.remove(id).is_some());
    assert!(matches!(
        store.to_apply(id, ORIGINAL, None),
        Err(ApplyError::Unknown { .. })
    ));
}

#[test]
fn pure_insertion_hunk_follows_and_relocates() {
    let new = ORIGINAL.replace("fn b() {\n", "/// Docs.\nfn b() {\n");
    let mut store = Proposals::new();
    let id = store.add(proposal(ORIGINAL, &new));
    let h = &store.hunks(id, path())[0];
    assert!(h.range.is_empty());
    // Typing elsewhere keeps it; the result still lands above fn b.
    let changes = vec![Replacement::insert(0, "\n")];
    store.on_change(path(), &changes);
    let doc = edit_doc(ORIGINAL, &changes);
    let a = store.to_apply(id, &doc, None).unwrap();
    assert_eq!(apply(&doc, &a), format!("\n{new}"));
}

#[test]
fn sync_rebases_onto_a_text_typed_during_the_run() {
    let new = ORIGINAL.replace("    2\n", "    22\n");
    let mut store = Proposals::new();
    let id = store.add(proposal(ORIGINAL, &new));
    let typed = format!("// typed while the model worked\n{ORIGINAL}");
    assert!(store.sync(path(), &typed).is_empty());
    let h = &store.hunks(id, path())[0];
    assert_eq!(&typed[h.range.clone()], "    2\n");
    // Typing over the target makes it stale.
    let over = typed.replace("    2\n", "    3\n");
    assert_eq!(store.sync(path(), &over), vec![id]);
    assert!(store.hunks(id, path()).is_empty());
}

/// a and c both change: two hunks (seven unchanged lines apart, more than 2 × 3).
fn two_hunks() -> (String, Proposal) {
    let new = ORIGINAL
        .replace("    1\n", "    11\n")
        .replace("    3\n", "    33\n");
    let p = proposal(ORIGINAL, &new);
    (new, p)
}

#[test]
fn accepting_one_hunk_applies_it_and_rebases_the_other() {
    let (new, p) = two_hunks();
    let mut store = Proposals::new();
    let id = store.add(p);
    let hunks = store.hunks(id, path());
    assert_eq!(hunks.iter().map(|h| h.n).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(store.live_hunks(id), 2);
    let files = store
        .begin_accept(id, Some(1), |_| Some((ORIGINAL.to_owned(), Some(3))))
        .unwrap();
    assert_eq!(files[0].replacements.len(), 1);
    let after = apply(ORIGINAL, &files[0]);
    assert_eq!(after, ORIGINAL.replace("    1\n", "    11\n"));
    // Hidden while the editor applies it.
    assert_eq!(store.live_hunks(id), 1);
    assert!(!store.accepted(id), "hunk 2 is still pending");
    // The editor's change arrives (as a whole-document replacement, the hardest case).
    let changes = vec![Replacement::new(0..ORIGINAL.len(), after.clone())];
    assert!(store.on_change(path(), &changes).is_empty());
    assert!(store.take_finished().is_empty());
    let left = store.hunks(id, path());
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].n, 2);
    assert_eq!(&after[left[0].range.clone()], "    3\n");
    assert_eq!(store.proposed_text(id, path()).unwrap(), new);
    assert!(store.current_diff(id).unwrap().contains("+    33"));
    assert!(!store.current_diff(id).unwrap().contains("+    11"));
    // Accepting the rest finishes the proposal when its change arrives.
    let files = store
        .begin_accept(id, Some(2), |_| Some((after.clone(), Some(4))))
        .unwrap();
    let last = apply(&after, &files[0]);
    assert_eq!(last, new);
    let change = files[0].replacements[0].clone();
    assert!(store.on_change(path(), &[change]).is_empty());
    assert_eq!(store.take_finished(), [id]);
    assert!(store.get(id).is_none());
    assert!(store.accepted(id));
}

#[test]
fn a_refused_accept_leaves_the_hunk_pending_and_unknown_hunks_are_errors() {
    let (_, p) = two_hunks();
    let mut store = Proposals::new();
    let id = store.add(p);
    store
        .begin_accept(id, Some(2), |_| Some((ORIGINAL.to_owned(), Some(3))))
        .unwrap();
    assert_eq!(store.live_hunks(id), 1);
    store.abort_accept(id);
    assert_eq!(store.live_hunks(id), 2);
    assert_eq!(
        store.begin_accept(id, Some(9), |_| Some((ORIGINAL.to_owned(), None))),
        Err(ApplyError::UnknownHunk { id, hunk: 9 })
    );
    assert_eq!(
        store.reject(id, Some(9)),
        Err(ApplyError::UnknownHunk { id, hunk: 9 })
    );
}

#[test]
fn accept_all_is_done_at_once_and_a_later_change_is_ignored() {
    let (new, p) = two_hunks();
    let mut store = Proposals::new();
    let id = store.add(p);
    let files = store
        .begin_accept(id, None, |_| Some((ORIGINAL.to_owned(), Some(3))))
        .unwrap();
    assert_eq!(apply(ORIGINAL, &files[0]), new);
    assert!(store.accepted(id));
    assert!(store.get(id).is_none());
    assert!(store.on_change(path(), &files[0].replacements).is_empty());
}

#[test]
fn rejecting_hunks_one_by_one_ends_the_proposal() {
    let (_, p) = two_hunks();
    let mut store = Proposals::new();
    let id = store.add(p);
    let (paths, done) = store.reject(id, Some(2)).unwrap();
    assert_eq!(paths, [path().to_path_buf()]);
    assert!(!done);
    assert_eq!(
        store.proposed_text(id, path()).unwrap(),
        ORIGINAL.replace("    1\n", "    11\n")
    );
    // The record keeps what is left.
    let record = store.record(id).unwrap();
    assert_eq!(record.files[0].hunks.len(), 1);
    assert_eq!(record.files[0].hunks[0].n, 1);
    let (_, done) = store.reject(id, Some(1)).unwrap();
    assert!(done);
    assert!(store.get(id).is_none());
    assert!(matches!(
        store.reject(id, None),
        Err(ApplyError::Unknown { .. })
    ));
}

#[test]
fn a_stored_proposal_comes_back_as_it_was_moved_or_stale() {
    let (new, p) = two_hunks();
    let mut stored = new_record(&p);
    stored.id = 41;
    // The file as it was: restored as is.
    let mut store = Proposals::new();
    let id = store.restore(&stored, |_| Some((ORIGINAL.to_owned(), None)));
    assert_eq!(id, 41);
    assert!(store.stale(id).is_none());
    assert_eq!(store.proposed_text(id, path()).unwrap(), new);
    assert_eq!(store.live_hunks(id), 2);
    // Lines added above since: re-located.
    let moved = format!("// header\n{ORIGINAL}");
    let mut store = Proposals::new();
    let id = store.restore(&stored, |_| Some((moved.clone(), None)));
    assert!(store.stale(id).is_none());
    assert_eq!(
        store.proposed_text(id, path()).unwrap(),
        format!("// header\n{new}")
    );
    // The target edited since: stale, and nothing to apply.
    let edited = ORIGINAL.replace("    3\n", "    7\n");
    let mut store = Proposals::new();
    let id = store.restore(&stored, |_| Some((edited.clone(), None)));
    assert!(
        store.stale(id).unwrap().contains("changed since"),
        "{:?}",
        store.stale(id)
    );
    assert!(store.hunks(id, path()).is_empty());
    assert!(store.record(id).is_none());
    // The file is gone: stale.
    let mut store = Proposals::new();
    let id = store.restore(&stored, |_| None);
    assert!(store.stale(id).unwrap().contains("no longer exists"));
    // New ids never collide with restored ones.
    assert!(next_id() > 41);
}

/// Changes at most 2 × 3 unchanged lines apart are one hunk (as a unified diff has them), and
/// the hunk's diff reads as the text it makes: the lines it keeps are context in place.
#[test]
fn changes_close_together_are_one_hunk_that_reads_as_its_result() {
    let original = "import os\n\n\n# patchwise: add a docstring to greet\ndef greet(name):\n    return f\"hi {name}\"\n\n\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n";
    let new = original
        .replace("# patchwise: add a docstring to greet\n", "")
        .replace(
            "def greet(name):\n",
            "def greet(name):\n    \"\"\"Greets NAME.\"\"\"\n",
        )
        .replace("    return 3\n", "    return 33\n");
    let mut store = Proposals::new();
    let id = store.add(proposal(original, &new));
    let hunks = store.hunks(id, path());
    assert_eq!(hunks.len(), 2, "{hunks:#?}");
    assert_eq!(
        hunks[0].diff,
        "@@ -1,8 +1,8 @@\n import os\n \n \n-# patchwise: add a docstring to greet\n def greet(name):\n+    \"\"\"Greets NAME.\"\"\"\n     return f\"hi {name}\"\n \n \n"
    );
    assert!(
        hunks[1].diff.contains("-    return 3\n+    return 33\n"),
        "{}",
        hunks[1].diff
    );
    // Each accepts on its own.
    let files = store
        .begin_accept(id, Some(1), |_| Some((original.to_owned(), Some(3))))
        .unwrap();
    let after = apply(original, &files[0]);
    assert_eq!(after, new.replace("    return 33\n", "    return 3\n"));
}

/// A client that applies an Accept code action's edit itself reports only the change: the
/// hunks it applied are done, the others stay, and a proposal with none left is finished.
#[test]
fn hunks_the_client_applied_itself_are_done() {
    let new = ORIGINAL
        .replace("    1\n", "    10\n")
        .replace("    3\n", "    30\n");
    let mut store = Proposals::new();
    let id = store.add(proposal(ORIGINAL, &new));
    let files = store
        .accept_replacements(id, Some(2), |_| Some((ORIGINAL.to_owned(), Some(3))))
        .unwrap();
    // Nothing is hidden until the change arrives.
    assert_eq!(store.live_hunks(id), 2);
    let after = apply(ORIGINAL, &files[0]);
    assert!(
        store
            .on_change(
                path(),
                &[Replacement::new(0..ORIGINAL.len(), after.clone())]
            )
            .is_empty()
    );
    let left = store.hunks(id, path());
    assert_eq!(left.iter().map(|h| h.n).collect::<Vec<_>>(), [1]);
    assert!(store.take_finished().is_empty());
    // The last one typed by the user (the same text) finishes the proposal.
    let at_one = at(&after, "    1\n");
    let change = Replacement::new(at_one..at_one + 6, "    10\n");
    assert!(store.on_change(path(), &[change]).is_empty());
    assert_eq!(store.take_finished(), [id]);
}
