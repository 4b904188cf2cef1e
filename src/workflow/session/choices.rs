//! Which code actions a range offers, as plain data: the edges render [`Choice`]s in their
//! protocol. None of them calls a model — each names a [`Command`] and its argument; the work
//! happens when the user picks one.
//!
//! Instruction comments live here too: a comment whose text starts with `patchwise:` is an
//! instruction the user wrote in the file, the path every client has (a client that cannot ask
//! for an instruction in a prompt still shows code actions).

use std::ops::Range;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::Command;
use crate::document::Document;
use crate::workflow::{ProposalId, Proposals};

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
    /// The client asks the user for an instruction when it runs "Edit selection…".
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
/// range's first line; "Fix with model" for each diagnostic not from patchwise; "Edit
/// selection…".
pub fn code_actions(
    proposals: &Proposals,
    path: &Path,
    doc: &Document,
    range: Range<usize>,
    diagnostics: &[ForeignDiagnostic],
    abilities: ClientAbilities,
) -> Vec<Choice> {
    let mut out = Vec::new();
    for proposal in proposals.at(path, range.clone()) {
        for (verb, command, kind) in [
            ("Accept", Command::ProposalAccept, ChoiceKind::QuickFix),
            ("Reject", Command::ProposalReject, ChoiceKind::QuickFix),
            ("Show diff of", Command::ProposalDiff, ChoiceKind::Other),
        ] {
            out.push(Choice {
                title: format!(
                    "{verb} proposal {}: {}",
                    proposal.id,
                    one_line(&proposal.instruction)
                ),
                kind,
                command,
                argument: ChoiceArgument::Proposal {
                    id: proposal.id,
                    hunk: None,
                },
                fixes: None,
            });
        }
    }
    let start = range.start.min(doc.len_bytes());
    let line = doc.rope.byte_to_line(start);
    let text = doc.rope.line(line).to_string();
    if let Some(instruction) = instruction_comment(&text) {
        let line_start = doc.rope.line_to_byte(line);
        let line_end = line_start + text.trim_end_matches(['\n', '\r']).len();
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
static INSTRUCTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?://+|#+|--+|;+|/\*+|<!--|%+|\*)\s*patchwise:\s*(?P<text>.*?)\s*(?:\*/|-->)?\s*$")
        .expect("valid regex")
});

/// The instruction written on `line`, if it carries one.
pub fn instruction_comment(line: &str) -> Option<String> {
    let caps = INSTRUCTION.captures(line.trim_end_matches(['\n', '\r']))?;
    let text = caps.name("text")?.as_str().trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// `line` without its instruction comment: empty when the comment was the whole line, else the
/// code before it (keeping the line ending).
pub fn strip_instruction_comment(line: &str) -> String {
    let ending = &line[line.trim_end_matches(['\n', '\r']).len()..];
    let Some(found) = INSTRUCTION.find(line.trim_end_matches(['\n', '\r'])) else {
        return line.to_owned();
    };
    let code = line[..found.start()].trim_end();
    if code.is_empty() {
        String::new()
    } else {
        format!("{code}{ending}")
    }
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
        ];
        for (line, expected) in cases {
            assert_eq!(instruction_comment(line).as_deref(), expected, "{line}");
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
                "Edit selection…"
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
}
