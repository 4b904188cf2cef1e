//! Proposals in the editor: hover diffs, code lenses, diagnostics, code actions, and the
//! `WorkspaceEdit` an accepted proposal becomes.
//!
//! Everything here renders what `workflow::Proposals` knows into protocol shapes; the decisions
//! (where a hunk is now, whether a proposal went stale, which replacements apply) are the
//! store's. Ranges are byte offsets in the core and become positions only here, in the
//! negotiated encoding, against the document the client has.

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};
use tower_lsp_server::ls_types::*;

use crate::document::{Document, PositionEncoding};
use crate::workflow::{FileApply, Hunk, Proposal, ProposalId, Proposals};

/// Commands the server executes (advertised in `executeCommandProvider`).
pub const COMMANDS: &[&str] = &[
    "patchwise.edit",
    "patchwise.editSelection",
    "patchwise.proposal.accept",
    "patchwise.proposal.reject",
    "patchwise.proposal.diff",
    "patchwise.research",
    "patchwise.research.list",
    "patchwise.research.open",
    "patchwise.cancel",
];

pub fn position(doc: &Document, offset: usize, encoding: PositionEncoding) -> Position {
    let p = doc.position(offset, encoding);
    Position::new(p.line, p.character)
}

pub fn range(doc: &Document, bytes: &std::ops::Range<usize>, encoding: PositionEncoding) -> Range {
    Range::new(
        position(doc, bytes.start, encoding),
        position(doc, bytes.end, encoding),
    )
}

/// The range a hunk marks in the editor: its own range, or the line of a pure insertion.
fn hunk_range(doc: &Document, hunk: &Hunk, encoding: PositionEncoding) -> Range {
    let mut r = range(doc, &hunk.range, encoding);
    if r.start == r.end {
        r.end = Position::new(r.start.line, r.start.character.saturating_add(1));
    } else if r.end.character == 0 && r.end.line > r.start.line {
        // A whole-line hunk ends at the start of the next line; mark only its own lines.
        let last = r.end.line - 1;
        let end_offset = doc
            .offset(crate::document::Position::new(last, u32::MAX), encoding)
            .0;
        r.end = position(doc, end_offset, encoding);
    }
    r
}

fn summary(proposal: &Proposal) -> String {
    format!(
        "model {} · {} attempt{} · matched by {}",
        proposal.model,
        proposal.attempts,
        if proposal.attempts == 1 { "" } else { "s" },
        if proposal.matched_by.is_empty() {
            "-"
        } else {
            &proposal.matched_by
        }
    )
}

/// The hover over a pending proposal: its diff and how it was made.
pub fn hover(
    store: &Proposals,
    path: &Path,
    doc: &Document,
    offset: usize,
    encoding: PositionEncoding,
) -> Option<Hover> {
    let hunks: Vec<Hunk> = store
        .hunks_for_path(path)
        .into_iter()
        .filter(|h| h.range.start <= offset && offset <= h.range.end.max(h.range.start + 1))
        .collect();
    let first = hunks.first()?;
    let mut markdown = String::new();
    let mut shown = Vec::new();
    for hunk in &hunks {
        if shown.contains(&hunk.id) {
            continue;
        }
        shown.push(hunk.id);
        let Some(proposal) = store.get(hunk.id) else {
            continue;
        };
        markdown.push_str(&format!(
            "**patchwise proposal {}** — {}\n\n```diff\n{}```\n\n{}\n\nAccept or reject with the code lens or a code action.\n\n",
            proposal.id,
            one_line(&proposal.instruction),
            proposal.diff,
            summary(proposal)
        ));
    }
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: markdown.trim_end().to_owned(),
        }),
        range: Some(hunk_range(doc, first, encoding)),
    })
}

fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > 80 {
        format!("{}…", line.chars().take(79).collect::<String>())
    } else {
        line.to_owned()
    }
}

fn id_argument(id: ProposalId) -> Vec<Value> {
    vec![json!({ "id": id })]
}

/// `Accept · Reject · Diff` above every hunk of every live proposal in the document.
pub fn code_lenses(
    store: &Proposals,
    path: &Path,
    doc: &Document,
    encoding: PositionEncoding,
) -> Vec<CodeLens> {
    let mut lenses = Vec::new();
    for hunk in store.hunks_for_path(path) {
        let r = hunk_range(doc, &hunk, encoding);
        let at = Range::new(r.start, r.start);
        for (title, command) in [
            ("Accept", "patchwise.proposal.accept"),
            ("Reject", "patchwise.proposal.reject"),
            ("Diff", "patchwise.proposal.diff"),
        ] {
            lenses.push(CodeLens {
                range: at,
                command: Some(Command {
                    title: title.to_owned(),
                    command: command.to_owned(),
                    arguments: Some(id_argument(hunk.id)),
                }),
                data: None,
            });
        }
    }
    lenses
}

/// One Information diagnostic per hunk, so every client shows pending proposals.
pub fn diagnostics(
    store: &Proposals,
    path: &Path,
    doc: &Document,
    encoding: PositionEncoding,
) -> Vec<Diagnostic> {
    store
        .hunks_for_path(path)
        .iter()
        .filter_map(|hunk| {
            let proposal = store.get(hunk.id)?;
            Some(Diagnostic {
                range: hunk_range(doc, hunk, encoding),
                severity: Some(DiagnosticSeverity::INFORMATION),
                code: Some(NumberOrString::String(format!("proposal-{}", hunk.id))),
                source: Some("patchwise".to_owned()),
                message: format!(
                    "pending proposal {}: {} (hover for the diff; Accept or Reject in the code lens)",
                    hunk.id,
                    one_line(&proposal.instruction)
                ),
                data: Some(json!({ "proposal": hunk.id })),
                ..Diagnostic::default()
            })
        })
        .collect()
}

/// An open document and how its positions are counted.
#[derive(Clone, Copy)]
pub struct OpenFile<'a> {
    pub path: &'a Path,
    pub uri: &'a Uri,
    pub doc: &'a Document,
    pub encoding: PositionEncoding,
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

/// Code actions for `range`: edit the selection, fix each diagnostic, apply an instruction
/// comment, accept or reject a proposal there. None of them calls a model: each is a command.
pub fn code_actions(
    store: &Proposals,
    at: &OpenFile<'_>,
    request_range: Range,
    diagnostics: &[Diagnostic],
) -> Vec<CodeActionOrCommand> {
    let OpenFile {
        path,
        uri,
        doc,
        encoding,
    } = *at;
    let (byte_range, _) = doc.byte_range(super::from_proto::span(request_range), encoding);
    let mut actions = Vec::new();
    let target = |range: Range, instruction: Option<String>| {
        let mut arg = json!({ "uri": uri.as_str(), "range": range });
        if let Some(instruction) = instruction {
            arg["instruction"] = Value::String(instruction);
        }
        vec![arg]
    };
    for proposal in store.at(path, byte_range.clone()) {
        for (title, command, kind) in [
            (
                "Accept",
                "patchwise.proposal.accept",
                CodeActionKind::QUICKFIX,
            ),
            (
                "Reject",
                "patchwise.proposal.reject",
                CodeActionKind::QUICKFIX,
            ),
            (
                "Show diff of",
                "patchwise.proposal.diff",
                CodeActionKind::EMPTY,
            ),
        ] {
            actions.push(action(
                format!(
                    "{title} proposal {}: {}",
                    proposal.id,
                    one_line(&proposal.instruction)
                ),
                kind,
                command,
                id_argument(proposal.id),
            ));
        }
    }
    // Instruction comment on the line of the request's start.
    let line = request_range.start.line as usize;
    if line < doc.rope.len_lines() {
        let text = doc.rope.line(line).to_string();
        if let Some(instruction) = instruction_comment(&text) {
            let start = doc.rope.line_to_byte(line);
            let end = start + text.trim_end_matches(['\n', '\r']).len();
            let range = self::range(doc, &(start..end), encoding);
            let mut args = target(range, Some(instruction.clone()));
            args[0]["removeInstructionComment"] = Value::Bool(true);
            actions.push(action(
                format!("Apply instruction: {}", one_line(&instruction)),
                CodeActionKind::REFACTOR_REWRITE,
                "patchwise.edit",
                args,
            ));
        }
    }
    for diagnostic in diagnostics {
        if diagnostic.source.as_deref() == Some("patchwise") {
            continue;
        }
        let from = diagnostic
            .source
            .as_deref()
            .map(|s| format!(" reported by {s}"))
            .unwrap_or_default();
        let instruction = format!("Fix this problem{from}: {}", diagnostic.message.trim());
        let mut a = action(
            format!("Fix with model: {}", one_line(&diagnostic.message)),
            CodeActionKind::QUICKFIX,
            "patchwise.edit",
            target(diagnostic.range, Some(instruction)),
        );
        if let CodeActionOrCommand::CodeAction(a) = &mut a {
            a.diagnostics = Some(vec![diagnostic.clone()]);
        }
        actions.push(a);
    }
    actions.push(action(
        "Edit selection…".to_owned(),
        CodeActionKind::REFACTOR_REWRITE,
        "patchwise.editSelection",
        target(request_range, None),
    ));
    actions
}

fn action(
    title: String,
    kind: CodeActionKind,
    command: &str,
    arguments: Vec<Value>,
) -> CodeActionOrCommand {
    CodeActionOrCommand::CodeAction(CodeAction {
        title: title.clone(),
        kind: Some(kind),
        command: Some(Command {
            title,
            command: command.to_owned(),
            arguments: Some(arguments),
        }),
        ..CodeAction::default()
    })
}

/// How the client wants edits: capabilities that shape the `WorkspaceEdit`.
#[derive(Debug, Clone, Copy)]
pub struct EditShape {
    pub document_changes: bool,
    pub change_annotations: bool,
    pub encoding: PositionEncoding,
}

/// The `WorkspaceEdit` for an accepted proposal. `docs` holds, per file, the document the
/// replacements are against (the open buffer, or the file read from disk).
pub fn workspace_edit(
    proposal: &Proposal,
    files: &[FileApply],
    docs: &HashMap<std::path::PathBuf, (Uri, Document)>,
    shape: EditShape,
) -> Result<WorkspaceEdit, String> {
    let annotation_id = format!("patchwise-proposal-{}", proposal.id);
    let mut document_edits = Vec::new();
    let mut plain: HashMap<Uri, Vec<TextEdit>> = HashMap::new();
    for file in files {
        let (uri, doc) = match docs.get(&file.path) {
            Some((uri, doc)) => (uri.clone(), doc.clone()),
            None if file.create => {
                let uri = Uri::from_file_path(&file.path)
                    .ok_or_else(|| format!("{} is not a valid file path", file.path.display()))?;
                (uri, Document::new("", 0, ""))
            }
            None => return Err(format!("{} could not be read", file.path.display())),
        };
        let edits: Vec<TextEdit> = file
            .replacements
            .iter()
            .map(|r| TextEdit {
                range: range(&doc, &r.range, shape.encoding),
                new_text: r.text.clone(),
            })
            .collect();
        if shape.document_changes {
            if file.create {
                document_edits.push(DocumentChangeOperation::Op(ResourceOp::Create(
                    CreateFile {
                        uri: uri.clone(),
                        options: Some(CreateFileOptions {
                            overwrite: Some(false),
                            ignore_if_exists: Some(false),
                        }),
                        annotation_id: shape.change_annotations.then(|| annotation_id.clone()),
                    },
                )));
            }
            let edits = edits
                .into_iter()
                .map(|e| {
                    if shape.change_annotations {
                        OneOf::Right(AnnotatedTextEdit {
                            text_edit: e,
                            annotation_id: annotation_id.clone(),
                        })
                    } else {
                        OneOf::Left(e)
                    }
                })
                .collect();
            document_edits.push(DocumentChangeOperation::Edit(TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier {
                    uri,
                    version: if file.create { None } else { file.version },
                },
                edits,
            }));
        } else {
            if file.create {
                return Err(format!(
                    "this proposal creates {}, and the client does not support file creation in workspace edits",
                    file.path.display()
                ));
            }
            plain.entry(uri).or_default().extend(edits);
        }
    }
    if shape.document_changes {
        let annotations = shape.change_annotations.then(|| {
            HashMap::from([(
                annotation_id.clone(),
                ChangeAnnotation {
                    label: format!("patchwise: {}", one_line(&proposal.instruction)),
                    needs_confirmation: Some(true),
                    description: Some(summary(proposal)),
                },
            )])
        });
        Ok(WorkspaceEdit {
            changes: None,
            document_changes: Some(DocumentChanges::Operations(document_edits)),
            change_annotations: annotations,
        })
    } else {
        Ok(WorkspaceEdit {
            changes: Some(plain),
            document_changes: None,
            change_annotations: None,
        })
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
}
