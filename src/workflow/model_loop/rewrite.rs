//! Code blocks that rewrite targets (`docs/editing.md`, "Edit protocols"): a block applied as
//! the new text of a target's lines through the engine (`edit::rewrite_lines`: the block must
//! line up with the target, unchanged lines keep the file's bytes), then the parse check. An
//! edit rewrites one target; a develop step whose file is too large to show whole rewrites the
//! items it names, several in one answer (`rewrite_targets`).

use crate::edit::Applied;
use crate::edit::whole::FileBlock;
use crate::syntax::{Language, introduced_problems};

use super::target::EditTarget;

/// Parse errors `after` adds to `before`, as a refusal for the model; `None` when it adds none
/// or the language is not parsed.
pub(crate) fn syntax_problems(
    language: Language,
    rel: &str,
    before: &str,
    after: &str,
) -> Option<String> {
    if !language.is_parsed() {
        return None;
    }
    let problems = introduced_problems(language, before, after);
    if problems.is_empty() {
        return None;
    }
    let listed: Vec<String> = problems.iter().take(5).map(|p| format!("  {p}")).collect();
    Some(format!(
        "{rel}: it would introduce syntax errors, so nothing was changed:\n{}",
        listed.join("\n")
    ))
}

/// `block` as the new text of lines `first..=last` of `current` (1-based, inclusive), checked
/// for added syntax errors when `parse_check`; the refusal for the model otherwise.
pub(crate) fn rewrite_target(
    current: &str,
    rel: &str,
    (first, last): (usize, usize),
    block: &str,
    parse_check: bool,
) -> Result<Applied, String> {
    let applied = crate::edit::rewrite_lines(current, first..=last, block)
        .map_err(|r| format!("edit refused for {rel}: {}", r.message))?;
    let language = Language::from_path(rel).unwrap_or(Language::Text);
    if parse_check && let Some(problem) = syntax_problems(language, rel, current, &applied.text) {
        return Err(format!(
            "edit refused for {problem}\nFix the code and answer again"
        ));
    }
    Ok(applied)
}

/// Which target each code block of an answer rewrites, as `(target, block)` indexes: the
/// target whose name the block's first lines define, else (as many blocks as targets) the
/// target in the same place. Blocks that name another file, or that fit no target, are left out.
pub(crate) fn assign_blocks(
    rel: &str,
    targets: &[EditTarget],
    blocks: &[FileBlock],
) -> Vec<(usize, usize)> {
    let mine: Vec<usize> = (0..blocks.len())
        .filter(|&i| blocks[i].path.as_deref().is_none_or(|p| same_file(p, rel)))
        .collect();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (k, &b) in mine.iter().enumerate() {
        let head: Vec<&str> = blocks[b]
            .body
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(4)
            .collect();
        // The first line that names a target is the definition (a later one may call another).
        let by_name = head.iter().find_map(|l| {
            targets
                .iter()
                .position(|t| t.name.as_deref().is_some_and(|n| defines(l, n)))
        });
        let by_place = (mine.len() == targets.len()).then_some(k);
        if let Some(t) = by_name.or(by_place)
            && !out.iter().any(|(j, _)| *j == t)
        {
            out.push((t, b));
        }
    }
    out
}

/// Several targets of one file rewritten in one answer: each `(target, block)` applied through
/// the engine, the lowest target first from the bottom of the file (so the lines of the others
/// stay where they were), then the parse check on the whole file. The new text, or why each
/// block was refused.
pub(crate) fn rewrite_targets(
    current: &str,
    rel: &str,
    rewrites: &[(&EditTarget, &str)],
    parse_check: bool,
) -> Result<String, Vec<String>> {
    let mut order: Vec<&(&EditTarget, &str)> = rewrites.iter().collect();
    order.sort_by_key(|(t, _)| std::cmp::Reverse(t.first));
    let mut text = current.to_owned();
    let mut problems = Vec::new();
    for (target, block) in order {
        match rewrite_target(&text, rel, (target.first, target.last), block, false) {
            Ok(applied) => text = applied.text,
            Err(why) => problems.push(format!("{} ({}): {why}", target.label, rel)),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let language = Language::from_path(rel).unwrap_or(Language::Text);
    if parse_check && let Some(problem) = syntax_problems(language, rel, current, &text) {
        return Err(vec![problem]);
    }
    Ok(text)
}

/// Whether `line` defines `name` (`def name(`, `fn name<`, `class name:`, `name(…) {`).
fn defines(line: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(name).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + name.len()..].chars().next();
        !before.is_some_and(word)
            && !after.is_some_and(word)
            && after.is_none_or(|c| matches!(c, '(' | '<' | ':' | ' ' | '{' | '='))
    })
}

fn same_file(named: &str, rel: &str) -> bool {
    let named = named.trim_start_matches("./");
    named == rel || rel.ends_with(&format!("/{named}")) || named.ends_with(&format!("/{rel}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(name: &str, first: usize, last: usize) -> EditTarget {
        EditTarget {
            first,
            last,
            label: format!("function `{name}`"),
            name: Some(name.to_owned()),
            context: Vec::new(),
            selection: None,
        }
    }

    fn block(path: Option<&str>, body: &str) -> FileBlock {
        FileBlock {
            path: path.map(str::to_owned),
            info: "python".to_owned(),
            body: body.to_owned(),
            closed: true,
        }
    }

    const PY: &str = "def a(x):\n    return x\n\n\ndef b(y):\n    return y\n";

    #[test]
    fn blocks_go_to_the_targets_they_define_and_apply_bottom_up() {
        let targets = [target("a", 1, 2), target("b", 5, 6)];
        let blocks = [
            block(None, "def b(y):\n    return a(y) * 2\n"),
            block(Some("m.py"), "def a(x):\n    return x + 1\n"),
            block(Some("other.py"), "def a(x):\n    pass\n"),
        ];
        let assigned = assign_blocks("m.py", &targets, &blocks);
        assert_eq!(assigned, [(1, 0), (0, 1)]);
        let rewrites: Vec<(&EditTarget, &str)> = assigned
            .iter()
            .map(|(t, b)| (&targets[*t], blocks[*b].body.as_str()))
            .collect();
        let text = rewrite_targets(PY, "m.py", &rewrites, true).unwrap();
        assert_eq!(
            text,
            "def a(x):\n    return x + 1\n\n\ndef b(y):\n    return a(y) * 2\n"
        );
    }

    #[test]
    fn a_block_that_breaks_the_syntax_is_refused() {
        let targets = [target("a", 1, 2)];
        let rewrites = [(&targets[0], "def a(x:\n    return x\n")];
        let err = rewrite_targets(PY, "m.py", &rewrites, true).unwrap_err();
        assert!(err[0].contains("syntax errors"), "{err:?}");
        assert!(defines("pub fn line_count(text: &str)", "line_count"));
        assert!(!defines("let y = line_counts(x)", "line_count"));
    }
}
