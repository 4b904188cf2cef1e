// Proposals in VS Code: the read-only `patchwise-proposal:` documents that hold a proposal's
// text for the native diff view (filled from `patchwise/proposalContent`), the proposal picker
// (`patchwise.proposal.list`), and accepting or rejecting a whole proposal or one hunk.
import * as vscode from 'vscode';
import { CodeActionRequest, LanguageClient } from 'vscode-languageclient/node';

import { applyUnifiedDiff } from './diff';

const METHOD_NOT_FOUND = -32601;

export const PROPOSAL_SCHEME = 'patchwise-proposal';

export interface Target {
  uri: string;
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
}

/** One entry of `patchwise.proposal.list`. */
export interface ListedProposal {
  id: number;
  instruction: string;
  model?: string;
  attempts?: number;
  matchedBy?: string;
  createdAt?: string;
  stale?: string | null;
  files: { uri: string; hunks: { hunk: number; range: Target['range'] }[] }[];
}

type Execute = <T = unknown>(command: string, args?: object) => Promise<T>;

/** The proposal (and hunk) under the cursor, as the server's code actions there name it. */
export async function hunkAt(client: LanguageClient | undefined): Promise<{ id: number; hunk?: number } | undefined> {
  const editor = vscode.window.activeTextEditor;
  if (!client || !editor) {
    return undefined;
  }
  const actions =
    (await client.sendRequest(CodeActionRequest.type, {
      textDocument: { uri: editor.document.uri.toString() },
      range: client.code2ProtocolConverter.asRange(editor.selection),
      context: { diagnostics: [] },
    })) ?? [];
  let found: { id: number; hunk?: number } | undefined;
  for (const action of actions) {
    const command = (typeof action.command === 'object' ? action.command : action) as {
      command?: unknown;
      arguments?: unknown[];
    };
    if (command.command !== 'patchwise.proposal.accept' && command.command !== 'patchwise.proposal.reject') {
      continue;
    }
    const arg = (command.arguments?.[0] ?? {}) as { id?: number; hunk?: number };
    if (typeof arg.id !== 'number') {
      continue;
    }
    // A hunk-level action names the hunk under the cursor; prefer it.
    if (!found || (found.hunk === undefined && arg.hunk !== undefined)) {
      found = { id: arg.id, hunk: arg.hunk };
    }
  }
  return found;
}

export class Proposals implements vscode.TextDocumentContentProvider {
  private readonly changes = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changes.event;
  private readonly shown = new Set<string>();

  constructor(
    private readonly client: () => LanguageClient | undefined,
    private readonly execute: Execute,
    private readonly warn: (error: unknown) => void,
  ) {}

  /** The virtual document holding proposal `id`'s text of `file`. */
  static uri(id: number, file: vscode.Uri): vscode.Uri {
    return vscode.Uri.from({
      scheme: PROPOSAL_SCHEME,
      path: file.path,
      query: new URLSearchParams({ id: String(id), uri: file.toString() }).toString(),
    });
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const query = new URLSearchParams(uri.query);
    const id = Number(query.get('id'));
    const file = query.get('uri') ?? '';
    this.shown.add(uri.toString());
    const client = this.client();
    if (!client) {
      return '';
    }
    try {
      try {
        const answer = await client.sendRequest<string | { text: string }>('patchwise/proposalContent', { id, uri: file });
        return typeof answer === 'string' ? answer : answer?.text ?? '';
      } catch (error) {
        if ((error as { code?: number })?.code !== METHOD_NOT_FOUND) {
          throw error;
        }
        // An older server: the proposal's diff applied to the file as it is now.
        const diff = await this.execute<string>('patchwise.proposal.diff', { id, show: false });
        const fileUri = vscode.Uri.parse(file);
        const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === fileUri.toString());
        const text = open ? open.getText() : new TextDecoder().decode(await vscode.workspace.fs.readFile(fileUri));
        return applyUnifiedDiff(text, diff, fileUri.path);
      }
    } catch (error) {
      // Accepted or rejected since the view opened: say so instead of an empty document.
      return `patchwise: proposal ${id} is no longer pending (${error instanceof Error ? error.message : error})\n`;
    }
  }

  /** Proposals changed on the server: refresh every proposal document that is open. */
  changed(): void {
    for (const uri of this.shown) {
      this.changes.fire(vscode.Uri.parse(uri));
    }
  }

  async list(): Promise<ListedProposal[]> {
    return (await this.execute<ListedProposal[]>('patchwise.proposal.list', {})) ?? [];
  }

  /** Opens the native diff of proposal `id`: the file on the left, the proposal on the right. */
  async openDiff(id: number): Promise<void> {
    try {
      let files: vscode.Uri[] = [];
      try {
        const found = (await this.list()).find((p) => p.id === id);
        files = (found?.files ?? []).map((f) => vscode.Uri.parse(f.uri));
      } catch {
        // A server without `patchwise.proposal.list`: the proposal is in the active file.
      }
      if (files.length === 0 && vscode.window.activeTextEditor) {
        files = [vscode.window.activeTextEditor.document.uri];
      }
      let file = files[0];
      if (files.length > 1) {
        const picked = await vscode.window.showQuickPick(
          files.map((uri) => ({ label: vscode.workspace.asRelativePath(uri), uri })),
          { title: `patchwise: proposal ${id} changes ${files.length} files`, placeHolder: 'Diff of which file?' },
        );
        file = picked?.uri ?? file;
      }
      if (!file) {
        throw new Error(`proposal ${id} names no file`);
      }
      const title = `${vscode.workspace.asRelativePath(file)} ↔ patchwise proposal ${id}`;
      await vscode.commands.executeCommand('vscode.diff', file, Proposals.uri(id, file), title, { preview: true });
    } catch (error) {
      this.warn(error);
    }
  }

  async decide(decision: 'accept' | 'reject', id: number, hunk?: number): Promise<void> {
    try {
      const args = hunk === undefined ? { id } : { id, hunk };
      await this.execute(`patchwise.proposal.${decision}`, args);
      this.changed();
    } catch (error) {
      this.warn(error);
    }
  }

  /** A quick pick over pending proposals; answers the chosen id. */
  async pick(title: string): Promise<number | undefined> {
    let listed: ListedProposal[];
    try {
      listed = await this.list();
    } catch (error) {
      this.warn(error);
      return undefined;
    }
    if (listed.length === 0) {
      void vscode.window.showInformationMessage('patchwise: no pending proposals');
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(
      listed.map((p) => ({
        label: `${p.id}: ${p.instruction.split('\n')[0]}`,
        description: [
          p.files.map((f) => vscode.workspace.asRelativePath(vscode.Uri.parse(f.uri))).join(', '),
          `${p.files.reduce((n, f) => n + f.hunks.length, 0)} hunk(s)`,
          p.stale ? `stale: ${p.stale}` : undefined,
        ]
          .filter(Boolean)
          .join(' · '),
        detail: [p.model, p.createdAt].filter(Boolean).join(' · '),
        id: p.id,
      })),
      { title, matchOnDescription: true },
    );
    return picked?.id;
  }

  /** "Show Proposals": pick one, then go to it, diff, accept or reject. */
  async show(): Promise<void> {
    const id = await this.pick('patchwise: pending proposals');
    if (id === undefined) {
      return;
    }
    const action = await vscode.window.showQuickPick(['Go to', 'Diff', 'Accept', 'Reject'], {
      title: `patchwise: proposal ${id}`,
    });
    if (action === 'Diff') {
      await this.openDiff(id);
    } else if (action === 'Accept' || action === 'Reject') {
      await this.decide(action === 'Accept' ? 'accept' : 'reject', id);
    } else if (action === 'Go to') {
      const found = (await this.list()).find((p) => p.id === id);
      const file = found?.files[0];
      if (file) {
        const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(file.uri));
        const editor = await vscode.window.showTextDocument(document);
        const range = file.hunks[0]?.range;
        if (range) {
          const start = new vscode.Position(range.start.line, range.start.character);
          editor.selection = new vscode.Selection(start, start);
          editor.revealRange(new vscode.Range(start, start), vscode.TextEditorRevealType.InCenter);
        }
      }
    }
  }

  /** Sets `patchwise.proposalAtCursor` from the server's diagnostics (one per pending hunk). */
  updateCursorContext(editor: vscode.TextEditor | undefined): void {
    let at = false;
    if (editor) {
      const position = editor.selection.active;
      at = vscode.languages
        .getDiagnostics(editor.document.uri)
        .some((d) => d.source === 'patchwise' && d.range.start.line <= position.line && position.line <= d.range.end.line);
    }
    void vscode.commands.executeCommand('setContext', 'patchwise.proposalAtCursor', at);
  }
}
