//! Which code actions a range offers, as plain data: the edges render [`Choice`]s in their
//! protocol. None of them calls a model — each names a [`Command`] and its argument; the work
//! happens when the user picks one.
//!
//! Instruction comments live here too: a comment whose text starts with `patchwise:` is an
//! instruction the user wrote in the file, and one starting `patchwise develop:` a develop
//! request — the path every client has (a client that cannot ask for an instruction in a
//! prompt still shows code actions; docs/editors.md).

use std::ops::Range;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::Command;
use crate::document::Document;
use crate::workflow::{Hunk, ProposalId, Proposals};

/// How a client groups an action (LSP's code action kinds, by meaning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChoiceKind {
    QuickFix,
    RefactorRewrite,
    /// No kind (an informational action such as "Show diff").
    Other,
}

/// The argument of a choice's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChoiceArgument {
    /// `{id}` (and `hunk` when the choice is about one hunk).
    Proposal { id: ProposalId, hunk: Option<usize> },
    /// `{uri, range, instruction?, removeInstructionComment?}` on the request's document.
    Target {
        range: Range<usize>,
        instruction: Option<String>,
        remove_instruction_comment: bool,
    },
    /// `{request?, uri, removeInstructionComment?}` with the request's document: a develop run
    /// over the workspace. Without a request the client asks the user for it ("Develop…", as
    /// for "Edit selection…"); `remove_comment` (a request from a `patchwise develop:` comment):
    /// the proposal also drops that comment, as "Apply instruction" does its own.
    Develop {
        request: Option<String>,
        remove_comment: bool,
    },
}

/// One code action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub title: String,
    pub kind: ChoiceKind,
    pub command: Command,
    pub argument: ChoiceArgument,
    /// The index (in the request's diagnostics) of the diagnostic this choice fixes.
    pub fixes: Option<usize>,
}

/// A diagnostic another tool reported, as the request carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignDiagnostic {
    pub range: Range<usize>,
    pub source: Option<String>,
    pub message: String,
}

/// What the client can do, as far as the choices care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAbilities {
    /// The client asks the user for an instruction when it runs "Edit selection…", and for the
    /// request when it runs "Develop…".
    pub supplies_instruction: bool,
}

impl Default for ClientAbilities {
    fn default() -> Self {
        ClientAbilities {
            supplies_instruction: true,
        }
    }
}

/// The code actions for `range` (bytes) of `doc`, the file at `path`: accept, reject and show
/// the diff of each live proposal there; "Apply instruction" for an instruction comment on the
/// range's first line ("Develop: …" for a develop comment); "Fix with model" for each
/// diagnostic not from patchwise; "Edit selection…" and "Develop…" when the client asks the
/// user for what they want.
pub fn code_actions(
    proposals: &Proposals,
    path: &Path,
    doc: &Document,
    range: Range<usize>,
    diagnostics: &[ForeignDiagnostic],
    abilities: ClientAbilities,
) -> Vec<Choice> {
    let mut out = Vec::new();
    let touched = |h: &Hunk| {
        let span = hunk_span(doc, &h.range);
        span.start <= range.end && range.start <= span.end
    };
    let mut ids: Vec<ProposalId> = proposals
        .hunks_for_path(path)
        .iter()
        .filter(|h| touched(h))
        .map(|h| h.id)
        .collect();
    ids.dedup();
    for proposal in ids.into_iter().filter_map(|id| proposals.get(id)) {
        let id = proposal.id;
        let what = one_line(&proposal.instruction);
        let live = proposals.live_hunks(id);
        if live > 1 {
            for hunk in proposals.hunks(id, path).iter().filter(|h| touched(h)) {
                for (verb, command) in [
                    ("Accept", Command::ProposalAccept),
                    ("Reject", Command::ProposalReject),
                ] {
                    out.push(Choice {
                        title: format!("{verb} hunk {} of proposal {id}: {what}", hunk.n),
                        kind: ChoiceKind::QuickFix,
                        command,
                        argument: ChoiceArgument::Proposal {
                            id,
                            hunk: Some(hunk.n),
                        },
                        fixes: None,
                    });
                }
            }
        }
        let all = if live > 1 {
            format!(" ({live} hunks)")
        } else {
            String::new()
        };
        for (verb, command, kind) in [
            ("Accept", Command::ProposalAccept, ChoiceKind::QuickFix),
            ("Reject", Command::ProposalReject, ChoiceKind::QuickFix),
            ("Show diff of", Command::ProposalDiff, ChoiceKind::Other),
        ] {
            let all = if command == Command::ProposalDiff {
                ""
            } else {
                &all
            };
            out.push(Choice {
                title: format!("{verb} proposal {id}{all}: {what}"),
                kind,
                command,
                argument: ChoiceArgument::Proposal { id, hunk: None },
                fixes: None,
            });
        }
    }
    let start = range.start.min(doc.len_bytes());
    let line = doc.rope.byte_to_line(start);
    let text = doc.rope.line(line).to_string();
    let line_start = doc.rope.line_to_byte(line);
    let line_end = line_start + text.trim_end_matches(['\n', '\r']).len();
    // A comment whose proposal is pending is not offered again: that would be a second run
    // for the same comment.
    let pending = |request: &str| {
        proposals.for_path(path).iter().any(|p| {
            proposals.stale(p.id).is_none()
                && (p.instruction.trim() == request
                    || proposals.hunks(p.id, path).iter().any(|h| {
                        h.range.start < line_end.max(line_start + 1) && line_start < h.range.end
                    }))
        })
    };
    if let Some(instruction) = instruction_comment(&text) {
        if pending(&instruction) {
            // Accept, reject or show its proposal instead (offered above).
        } else {
            out.push(Choice {
                title: format!("Apply instruction: {}", one_line(&instruction)),
                kind: ChoiceKind::RefactorRewrite,
                command: Command::Edit,
                argument: ChoiceArgument::Target {
                    range: line_start..line_end,
                    instruction: Some(instruction),
                    remove_instruction_comment: true,
                },
                fixes: None,
            });
        }
    } else if let Some(request) = develop_comment(&text)
        && !pending(&request)
    {
        out.push(Choice {
            title: format!("Develop: {}", one_line(&request)),
            kind: ChoiceKind::RefactorRewrite,
            command: Command::Develop,
            argument: ChoiceArgument::Develop {
                request: Some(request),
                remove_comment: true,
            },
            fixes: None,
        });
    }
    for (i, diagnostic) in diagnostics.iter().enumerate() {
        if diagnostic.source.as_deref() == Some("patchwise") {
            continue;
        }
        let from = diagnostic
            .source
            .as_deref()
            .map(|s| format!(" reported by {s}"))
            .unwrap_or_default();
        out.push(Choice {
            title: format!("Fix with model: {}", one_line(&diagnostic.message)),
            kind: ChoiceKind::QuickFix,
            command: Command::Edit,
            argument: ChoiceArgument::Target {
                range: diagnostic.range.clone(),
                instruction: Some(format!(
                    "Fix this problem{from}: {}",
                    diagnostic.message.trim()
                )),
                remove_instruction_comment: false,
            },
            fixes: Some(i),
        });
    }
    if abilities.supplies_instruction {
        out.push(Choice {
            title: Command::EditSelection.title().to_owned(),
            kind: ChoiceKind::RefactorRewrite,
            command: Command::EditSelection,
            argument: ChoiceArgument::Target {
                range,
                instruction: None,
                remove_instruction_comment: false,
            },
            fixes: None,
        });
        out.push(Choice {
            title: Command::Develop.title().to_owned(),
            kind: ChoiceKind::RefactorRewrite,
            command: Command::Develop,
            argument: ChoiceArgument::Develop {
                request: None,
                remove_comment: false,
            },
            fixes: None,
        });
    }
    out
}

/// The lines a hunk shows on, as a byte range of the current text from the start of its first
/// line to the end of its last (without the line break): the lines it replaces or deletes, and
/// for a pure insertion the line before and the line after the insertion point — so hovering
/// the line the user asked to change finds the proposal.
pub fn hunk_span(doc: &Document, range: &Range<usize>) -> Range<usize> {
    let rope = &doc.rope;
    let len = rope.len_bytes();
    let lines = rope.len_lines();
    // The empty "line" after a final line break is no line a user can point at.
    let last_line = if lines > 1 && rope.line(lines - 1).len_bytes() == 0 {
        lines - 2
    } else {
        lines - 1
    };
    let (first, last) = if range.start >= range.end {
        let line = rope.byte_to_line(range.start.min(len));
        let first = line.saturating_sub(1).min(last_line);
        (first, line.min(last_line).max(first))
    } else {
        let first = rope.byte_to_line(range.start.min(len));
        let last = rope.byte_to_line(range.end.min(len) - 1).max(first);
        (first.min(last_line), last.min(last_line))
    };
    let start = rope.line_to_byte(first);
    let line = rope.line(last).to_string();
    let content = line.trim_end_matches(['\n', '\r']).len();
    start..rope.line_to_byte(last) + content
}

/// A code lens: a command shown above a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lens {
    /// Byte offset of the start of the hunk's first line ([`hunk_span`]).
    pub at: usize,
    pub title: &'static str,
    pub command: Command,
    pub argument: ChoiceArgument,
}

/// The code lenses of `path`: `Accept · Reject · Diff` above a proposal's only hunk; with
/// several hunks, `Accept hunk · Reject hunk` above each and `Accept all · Reject all · Diff`
/// above the first as well.
pub fn lenses(proposals: &Proposals, path: &Path, doc: &Document) -> Vec<Lens> {
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for hunk in proposals.hunks_for_path(path) {
        let id = hunk.id;
        let whole = ChoiceArgument::Proposal { id, hunk: None };
        let single = proposals.live_hunks(id) == 1;
        let first = !seen.contains(&id);
        seen.push(id);
        let at = hunk_span(doc, &hunk.range).start;
        let lens = |title, command, argument: &ChoiceArgument| Lens {
            at,
            title,
            command,
            argument: argument.clone(),
        };
        if single {
            out.push(lens("Accept", Command::ProposalAccept, &whole));
            out.push(lens("Reject", Command::ProposalReject, &whole));
            out.push(lens("Diff", Command::ProposalDiff, &whole));
            continue;
        }
        if first {
            out.push(lens("Accept all", Command::ProposalAccept, &whole));
            out.push(lens("Reject all", Command::ProposalReject, &whole));
            out.push(lens("Diff", Command::ProposalDiff, &whole));
        }
        let one = ChoiceArgument::Proposal {
            id,
            hunk: Some(hunk.n),
        };
        out.push(lens("Accept hunk", Command::ProposalAccept, &one));
        out.push(lens("Reject hunk", Command::ProposalReject, &one));
    }
    out
}

/// The first line of `text`, cut to 80 characters.
pub fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > 80 {
        format!("{}…", line.chars().take(79).collect::<String>())
    } else {
        line.to_owned()
    }
}

/// An instruction comment: a comment whose text starts with `patchwise:`, in any of the
/// comment syntaxes of the languages patchwise knows (`//`, `#`, `--`, `;`, `/* */`,
/// `<!-- -->`, `%`).
static INSTRUCTION: LazyLock<Regex> = LazyLock::new(|| comment_pattern(r"patchwise:"));

/// A develop comment: like an instruction comment, with `patchwise develop:` — the request of
/// a develop run over the whole workspace rather than an edit of the lines around it.
static DEVELOP: LazyLock<Regex> = LazyLock::new(|| comment_pattern(r"patchwise\s+develop:"));

/// The develop request written on `line`, if it carries one.
pub fn develop_comment(line: &str) -> Option<String> {
    comment_text(&DEVELOP, line)
}

/// The instruction written on `line`, if it carries one.
pub fn instruction_comment(line: &str) -> Option<String> {
    comment_text(&INSTRUCTION, line)
}

/// `line` without its instruction comment: empty when the comment was the whole line, else the
/// code before it (keeping the line ending).
pub fn strip_instruction_comment(line: &str) -> String {
    strip_comment(&INSTRUCTION, line)
}

/// `line` without its develop comment, as [`strip_instruction_comment`].
pub fn strip_develop_comment(line: &str) -> String {
    strip_comment(&DEVELOP, line)
}

fn strip_comment(pattern: &Regex, line: &str) -> String {
    let ending = &line[line.trim_end_matches(['\n', '\r']).len()..];
    let Some(found) = pattern.find(line.trim_end_matches(['\n', '\r'])) else {
        return line.to_owned();
    };
    let code = line[..found.start()].trim_end();
    if code.is_empty() {
        String::new()
    } else {
        format!("{code}{ending}")
    }
}

/// A comment opener of any syntax patchwise knows, `marker`, then the text up to the end of
/// the line (without a block comment's closer).
fn comment_pattern(marker: &str) -> Regex {
    Regex::new(&format!(
        r"(?://+|#+|--+|;+|/\*+|<!--|%+|\*)\s*{marker}\s*(?P<text>.*?)\s*(?:\*/|-->)?\s*$"
    ))
    .expect("valid regex")
}

fn comment_text(pattern: &Regex, line: &str) -> Option<String> {
    let caps = pattern.captures(line.trim_end_matches(['\n', '\r']))?;
    let text = caps.name("text")?.as_str().trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_comments_in_many_syntaxes() {
        let cases = [
            ("// patchwise: add a doc comment", Some("add a doc comment")),
            ("    # patchwise: use a set here  ", Some("use a set here")),
            (
                "let x = 1; // patchwise: rename x to count",
                Some("rename x to count"),
            ),
            ("-- patchwise: index this column", Some("index this column")),
            ("/* patchwise: inline this */", Some("inline this")),
            ("<!-- patchwise: add alt text -->", Some("add alt text")),
            ("; patchwise: simplify", Some("simplify")),
            ("// patchwise:", None),
            ("let patchwise = 3; // not an instruction", None),
            ("println!(\"patchwise: hello\")", None),
            ("// patchwise develop: add a --json flag", None),
        ];
        for (line, expected) in cases {
            assert_eq!(instruction_comment(line).as_deref(), expected, "{line}");
        }
        let develop = [
            (
                "// patchwise develop: add a --json flag",
                Some("add a --json flag"),
            ),
            ("  # patchwise  develop:  test it  ", Some("test it")),
            ("<!-- patchwise develop: add a page -->", Some("add a page")),
            ("// patchwise develop:", None),
            ("// patchwise: develop this", None),
            ("let s = \"patchwise develop: no\";", None),
        ];
        for (line, expected) in develop {
            assert_eq!(develop_comment(line).as_deref(), expected, "{line}");
        }
        assert_eq!(strip_instruction_comment("    // patchwise: go\r\n"), "");
        assert_eq!(
            strip_instruction_comment("let x = 1; // patchwise: rename\n"),
            "let x = 1;\n"
        );
    }

    #[test]
    fn choices_for_an_instruction_comment_and_a_foreign_diagnostic() {
        let doc = Document::new(
            "fn a() {}\n    // patchwise: go fast\nfn b() {}\n",
            1,
            "rust",
        );
        let diagnostics = [
            ForeignDiagnostic {
                range: 0..2,
                source: Some("rustc".into()),
                message: "unused\n more".into(),
            },
            ForeignDiagnostic {
                range: 0..2,
                source: Some("patchwise".into()),
                message: "pending".into(),
            },
        ];
        let at = 14..14;
        let choices = code_actions(
            &Proposals::default(),
            Path::new("/w/a.rs"),
            &doc,
            at.clone(),
            &diagnostics,
            ClientAbilities::default(),
        );
        let titles: Vec<&str> = choices.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "Apply instruction: go fast",
                "Fix with model: unused",
                "Edit selection…",
                "Develop…"
            ]
        );
        assert_eq!(
            choices[0].argument,
            ChoiceArgument::Target {
                range: 10..35,
                instruction: Some("go fast".into()),
                remove_instruction_comment: true
            }
        );
        assert_eq!(choices[1].fixes, Some(0));
        assert_eq!(choices[3].command, Command::Develop);
        assert_eq!(
            choices[3].argument,
            ChoiceArgument::Develop {
                request: None,
                remove_comment: false
            }
        );
        let without = code_actions(
            &Proposals::default(),
            Path::new("/w/a.rs"),
            &doc,
            at,
            &[],
            ClientAbilities {
                supplies_instruction: false,
            },
        );
        assert_eq!(without.len(), 1);
    }

    #[test]
    fn a_develop_comment_offers_develop_with_its_request() {
        let doc = Document::new(
            "fn main() {}\n// patchwise develop: add a --json flag\n",
            1,
            "rust",
        );
        let choices = code_actions(
            &Proposals::default(),
            Path::new("/w/main.rs"),
            &doc,
            20..20,
            &[],
            ClientAbilities {
                supplies_instruction: false,
            },
        );
        assert_eq!(
            choices,
            [Choice {
                title: "Develop: add a --json flag".into(),
                kind: ChoiceKind::RefactorRewrite,
                command: Command::Develop,
                argument: ChoiceArgument::Develop {
                    request: Some("add a --json flag".into()),
                    remove_comment: true,
                },
                fixes: None,
            }]
        );
    }
}
