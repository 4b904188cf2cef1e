//! Proposals in the editor: hover diffs, code lenses, diagnostics, code actions, and the
//! `WorkspaceEdit` an accepted proposal becomes.
//!
//! Everything here renders what `workflow::session::review::Proposals` knows into protocol shapes; the decisions
//! (where a hunk is now, whether a proposal went stale, which replacements apply) are the
//! store's. Ranges are byte offsets in the core and become positions only here, in the
//! negotiated encoding, against the document the client has.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};
use tower_lsp_server::ls_types::*;

use crate::document::{Document, PositionEncoding};
use crate::workflow::session::Proposal;
use crate::workflow::session::choices::{self, hunk_span, one_line};
use crate::workflow::session::review::{FileApply, Hunk, Proposals};
use crate::workflow::session::{
    ChoiceArgument, ChoiceKind, ClientAbilities, Command as SessionCommand, ForeignDiagnostic,
};

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

/// The range a hunk marks in the editor: the whole lines it shows on (see `hunk_span`), never
/// empty while the document has a line after it, so every client draws it.
fn hunk_range(doc: &Document, hunk: &Hunk, encoding: PositionEncoding) -> Range {
    let span = hunk_span(doc, &hunk.range);
    let mut r = range(doc, &span, encoding);
    if r.start == r.end && (r.end.line as usize) + 1 < doc.rope.len_lines() {
        r.end = Position::new(r.end.line + 1, 0);
    }
    r
}

/// How the client shows things: the switches rendering depends on.
#[derive(Debug, Clone, Copy)]
pub struct View {
    pub encoding: PositionEncoding,
    /// The client shows code lenses.
    pub code_lens: bool,
    /// The client wants plain-text hovers.
    pub plaintext: bool,
}

impl View {
    /// How to accept or reject, in the words of what this client shows.
    fn how_to_review(&self) -> &'static str {
        if self.code_lens {
            "Accept or reject with the code lens or a code action."
        } else {
            "Accept or reject with the code actions (quick fixes) on these lines."
        }
    }
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

/// The hover on the lines of a pending proposal's hunk: the diff (the hunk's own when the
/// proposal has several) and how it was made, as Markdown or plain text as the client wants.
pub fn hover(
    store: &Proposals,
    path: &Path,
    doc: &Document,
    offset: usize,
    view: View,
) -> Option<Hover> {
    let hunks: Vec<Hunk> = store
        .hunks_for_path(path)
        .into_iter()
        .filter(|h| {
            let span = hunk_span(doc, &h.range);
            span.start <= offset && offset <= span.end
        })
        .collect();
    let first = hunks.first()?;
    let mut text = String::new();
    for hunk in &hunks {
        let Some(proposal) = store.get(hunk.id) else {
            continue;
        };
        let live = store.live_hunks(hunk.id);
        let (which, diff) = if live > 1 {
            (format!(" (hunk {} of {live})", hunk.n), hunk.diff.clone())
        } else {
            let diff = store
                .current_diff(hunk.id)
                .unwrap_or_else(|| proposal.diff.clone());
            (String::new(), diff)
        };
        let name = format!("patchwise proposal {}{which}", proposal.id);
        let what = one_line(&proposal.instruction);
        if view.plaintext {
            text.push_str(&format!(
                "{name} — {what}\n\n{diff}\n{}\n{}\n\n",
                summary(proposal),
                view.how_to_review()
            ));
        } else {
            text.push_str(&format!(
                "**{name}** — {what}\n\n```diff\n{diff}```\n\n{}\n\n{}\n\n",
                summary(proposal),
                view.how_to_review()
            ));
        }
    }
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: if view.plaintext {
                MarkupKind::PlainText
            } else {
                MarkupKind::Markdown
            },
            value: text.trim_end().to_owned(),
        }),
        range: Some(hunk_range(doc, first, view.encoding)),
    })
}

/// A choice's argument as the command receives it.
fn proposal_argument(argument: &ChoiceArgument) -> Value {
    match argument {
        ChoiceArgument::Proposal { id, hunk } => {
            let mut arg = json!({ "id": id });
            if let Some(hunk) = hunk {
                arg["hunk"] = json!(hunk);
            }
            arg
        }
        ChoiceArgument::Target { .. } | ChoiceArgument::Develop { .. } => Value::Null,
    }
}

/// The code lenses of the document (`choices::lenses`), at the start of each hunk's lines.
pub fn code_lenses(
    store: &Proposals,
    path: &Path,
    doc: &Document,
    encoding: PositionEncoding,
) -> Vec<CodeLens> {
    choices::lenses(store, path, doc)
        .into_iter()
        .map(|lens| {
            let at = position(doc, lens.at, encoding);
            CodeLens {
                range: Range::new(at, at),
                command: Some(Command {
                    title: lens.title.to_owned(),
                    command: lens.command.name().to_owned(),
                    arguments: Some(vec![proposal_argument(&lens.argument)]),
                }),
                data: None,
            }
        })
        .collect()
}

/// One Information diagnostic per hunk, over its whole lines, so every client shows pending
/// proposals; the message names the way to accept that this client has.
pub fn diagnostics(store: &Proposals, path: &Path, doc: &Document, view: View) -> Vec<Diagnostic> {
    store
        .hunks_for_path(path)
        .iter()
        .filter_map(|hunk| {
            let proposal = store.get(hunk.id)?;
            let live = store.live_hunks(hunk.id);
            let which = if live > 1 {
                format!(", hunk {} of {live}", hunk.n)
            } else {
                String::new()
            };
            let how = if view.code_lens {
                "Accept or Reject in the code lens".to_owned()
            } else {
                format!(
                    "code actions \"Accept proposal {id}\" / \"Reject proposal {id}\"",
                    id = hunk.id
                )
            };
            Some(Diagnostic {
                range: hunk_range(doc, hunk, view.encoding),
                severity: Some(DiagnosticSeverity::INFORMATION),
                code: Some(NumberOrString::String(format!("proposal-{}", hunk.id))),
                source: Some("patchwise".to_owned()),
                message: format!(
                    "pending proposal {}{which}: {} (hover for the diff; {how})",
                    hunk.id,
                    one_line(&proposal.instruction)
                ),
                data: Some(json!({ "proposal": hunk.id, "hunk": hunk.n })),
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

/// How an "Accept" code action applies its proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcceptAction {
    /// It runs `patchwise.proposal.accept`, which sends `workspace/applyEdit` (clients without
    /// code action literals; eglot asks before applying such an edit).
    Command,
    /// It carries its `edit`, which the client applies by itself: filled in by
    /// `codeAction/resolve` for clients that resolve `edit`, by the server right away for the
    /// others. Until then the action holds `data: {"accept": {id, hunk?}}`.
    Edit,
}

/// The `data` key of an "Accept" code action whose edit is still to be filled in.
pub const ACCEPT_DATA: &str = "accept";

/// The proposal and hunk an "Accept" code action's `data` names, if it names one.
pub fn accept_data(action: &CodeAction) -> Option<(u64, Option<usize>)> {
    let accept = action.data.as_ref()?.get(ACCEPT_DATA)?;
    let id = accept.get("id")?.as_u64()?;
    let hunk = accept
        .get("hunk")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok());
    Some((id, hunk))
}

/// An "Accept" action whose edit could not be filled in falls back to its command (which says
/// why when it runs).
pub fn accept_by_command(action: &mut CodeAction) {
    let Some((id, hunk)) = accept_data(action) else {
        return;
    };
    let argument = proposal_argument(&ChoiceArgument::Proposal { id, hunk });
    action.command = Some(Command {
        title: action.title.clone(),
        command: SessionCommand::ProposalAccept.name().to_owned(),
        arguments: Some(vec![argument]),
    });
    if let Some(data) = action.data.as_mut().and_then(Value::as_object_mut) {
        data.remove(ACCEPT_DATA);
    }
    if action
        .data
        .as_ref()
        .is_some_and(|d| d.as_object().is_some_and(|o| o.is_empty()))
    {
        action.data = None;
    }
}

/// The code actions for `request_range`: the session's choices, rendered.
pub fn code_actions(
    store: &Proposals,
    at: &OpenFile<'_>,
    request_range: Range,
    diagnostics: &[Diagnostic],
    abilities: ClientAbilities,
    accept_by: AcceptAction,
) -> Vec<CodeActionOrCommand> {
    let OpenFile {
        path,
        uri,
        doc,
        encoding,
    } = *at;
    let bytes = |r: Range| doc.byte_range(super::from_proto::span(r), encoding).0;
    let foreign: Vec<ForeignDiagnostic> = diagnostics
        .iter()
        .map(|d| ForeignDiagnostic {
            range: bytes(d.range),
            source: d.source.clone(),
            message: d.message.clone(),
        })
        .collect();
    let choices =
        choices::code_actions(store, path, doc, bytes(request_range), &foreign, abilities);
    choices
        .into_iter()
        .map(|choice| {
            let argument = match &choice.argument {
                ChoiceArgument::Proposal { .. } => proposal_argument(&choice.argument),
                ChoiceArgument::Target {
                    range: target,
                    instruction,
                    remove_instruction_comment,
                } => {
                    // "Edit selection…" keeps the client's own range, as it was sent.
                    let shown = if choice.command == SessionCommand::EditSelection {
                        request_range
                    } else if let Some(i) = choice.fixes {
                        diagnostics[i].range
                    } else {
                        range(doc, target, encoding)
                    };
                    let mut arg = json!({ "uri": uri.as_str(), "range": shown });
                    if let Some(instruction) = instruction {
                        arg["instruction"] = Value::String(instruction.clone());
                    }
                    if *remove_instruction_comment {
                        arg["removeInstructionComment"] = Value::Bool(true);
                    }
                    arg
                }
                // Without a request the client asks for it ("Develop…"); the document is the
                // planner's first look and, with no folder open, the workspace.
                ChoiceArgument::Develop {
                    request,
                    remove_comment,
                } => {
                    let mut arg = json!({ "uri": uri.as_str() });
                    if let Some(request) = request {
                        arg["request"] = Value::String(request.clone());
                    }
                    if *remove_comment {
                        arg["removeInstructionComment"] = Value::Bool(true);
                    }
                    arg
                }
            };
            let kind = match choice.kind {
                ChoiceKind::QuickFix => CodeActionKind::QUICKFIX,
                ChoiceKind::RefactorRewrite => CodeActionKind::REFACTOR_REWRITE,
                ChoiceKind::Other => CodeActionKind::EMPTY,
            };
            // Model-made: what the action applies or starts is a model's code (the transport
            // turns the mark into the LLMGenerated tag).
            let model_made = matches!(
                choice.command,
                SessionCommand::Edit
                    | SessionCommand::EditSelection
                    | SessionCommand::Develop
                    | SessionCommand::ProposalAccept
            );
            let mut data = serde_json::Map::new();
            if model_made {
                data.insert(super::transport::LLM_MARK.to_owned(), Value::Bool(true));
            }
            let by_edit =
                accept_by == AcceptAction::Edit && choice.command == SessionCommand::ProposalAccept;
            if by_edit {
                data.insert(ACCEPT_DATA.to_owned(), argument.clone());
            }
            CodeActionOrCommand::CodeAction(CodeAction {
                title: choice.title.clone(),
                kind: Some(kind),
                data: (!data.is_empty()).then_some(Value::Object(data)),
                diagnostics: choice.fixes.map(|i| vec![diagnostics[i].clone()]),
                command: (!by_edit).then(|| Command {
                    title: choice.title,
                    command: choice.command.name().to_owned(),
                    arguments: Some(vec![argument]),
                }),
                ..CodeAction::default()
            })
        })
        .collect()
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
        let mut edits: Vec<TextEdit> = file
            .replacements
            .iter()
            .map(|r| TextEdit {
                range: range(&doc, &r.range, shape.encoding),
                new_text: r.text.clone(),
            })
            .collect();
        // A created file starts empty, and Neovim holds an empty buffer as one empty line that
        // an insertion keeps — the file would be saved with an extra line break. An insertion
        // that spans the whole (empty) file, to the start of line 1 (clients clamp a range end
        // past the last line to the end of the file), leaves no such line.
        if file.create && doc.len_bytes() == 0 {
            for edit in &mut edits {
                if edit.range.end == Position::new(0, 0) {
                    edit.range.end = Position::new(1, 0);
                }
            }
        }
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
