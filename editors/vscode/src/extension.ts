// patchwise for VS Code: starts `patchwise serve` for file documents and supplies what only the
// editor can — the instruction for "Edit Selection…", the question for research, pickers over
// proposals and the research library, a native diff view of a proposal, a status bar item.
// Everything else (hover diffs, code lenses, Accept/Reject, applying edits) is the server's;
// the commands and their arguments are the ones docs/editors.md lists.
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  StaticFeature,
} from 'vscode-languageclient/node';

import { Proposals, PROPOSAL_SCHEME, Target, hunkAt } from './proposals';
import { Runs, RunFinished } from './runs';
import { explicitSettings } from './settings';
import { Status } from './status';

let client: LanguageClient | undefined;
let status: Status | undefined;
const runs = new Runs();

/** Tells the server that this client asks the user for instructions (`patchwise.editSelection`). */
const instructionInput: StaticFeature = {
  fillClientCapabilities(capabilities) {
    capabilities.experimental = {
      ...(capabilities.experimental as object | undefined),
      patchwise: { instructionInput: true },
    };
    // Clicking Accept is the user's confirmation. With change annotations the server marks its
    // edit "needs confirmation", and VS Code then opens the Refactor Preview with the change
    // unchecked: a second confirmation that applies nothing when the user just clicks Apply.
    if (capabilities.workspace?.workspaceEdit) {
      delete capabilities.workspace.workspaceEdit.changeAnnotationSupport;
    }
  },
  initialize() {},
  getState() {
    return { kind: 'static' };
  },
  clear() {},
};

function execute<T = unknown>(command: string, args: object = {}): Promise<T> {
  if (!client) {
    return Promise.reject(new Error('the patchwise server is not running'));
  }
  return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] }) as Promise<T>;
}

function warn(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  void vscode.window.showWarningMessage(`patchwise: ${message}`);
}

/** Asks for an instruction, runs the edit and reports the proposal. */
async function editTarget(target: Target, instruction?: string): Promise<void> {
  instruction ??= await vscode.window.showInputBox({
    title: 'patchwise: Edit Selection',
    prompt: 'What should change?',
    placeHolder: 'e.g. return early when the list is empty',
    ignoreFocusOut: true,
  });
  if (!instruction || !instruction.trim()) {
    return;
  }
  await runEdit({ ...target, instruction });
}

/**
 * Runs a command that starts a run (`patchwise.edit`, `.develop`, `.research`) and waits for its
 * end. The server answers at once with a run id and sends `patchwise/runFinished` later; an older
 * server answers with the result itself.
 */
async function follow(command: string, kind: string, args: object): Promise<RunFinished> {
  const answer = await execute<{ runId?: string; id?: number | string } & Record<string, unknown>>(command, args);
  if (answer && answer.id !== undefined) {
    const runId = String(answer.runId ?? '');
    return kind === 'research'
      ? { runId, kind, ok: true, research: answer as RunFinished['research'] }
      : { runId, kind, ok: true, proposal: answer as RunFinished['proposal'] };
  }
  return runs.wait(String(answer?.runId ?? ''));
}

/** Runs `patchwise.edit` and reports how it ended. */
async function runEdit(args: object): Promise<void> {
  const done = status?.begin('editing…');
  try {
    const finished = await follow('patchwise.edit', 'edit', args);
    // Not awaited: the message waits for the user, the run is over.
    void reportRun(finished);
  } catch (error) {
    warn(error);
  } finally {
    done?.();
  }
}

async function reportRun(finished: RunFinished): Promise<void> {
  if (!finished.ok) {
    if (!finished.cancelled) {
      void vscode.window.showWarningMessage(`patchwise: ${finished.error ?? 'the edit failed'}`);
    }
    return;
  }
  const proposal = finished.proposal;
  if (!proposal) {
    return;
  }
  if (proposal.model) {
    status?.setModel(String(proposal.model));
  }
  proposals.changed();
  if (proposal.applied) {
    void vscode.window.showInformationMessage(`patchwise: proposal ${proposal.id} applied`);
    return;
  }
  const choice = await vscode.window.showInformationMessage(
    `patchwise: proposal ${proposal.id} ready — hover the change for the diff; accept or reject in the code lens`,
    'Diff',
    'Accept',
    'Reject',
  );
  if (choice === 'Diff') {
    await proposals.openDiff(proposal.id);
  } else if (choice === 'Accept') {
    await proposals.decide('accept', proposal.id);
  } else if (choice === 'Reject') {
    await proposals.decide('reject', proposal.id);
  }
}

const proposals = new Proposals(() => client, execute, warn);

function currentTarget(): Target | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor || !client) {
    void vscode.window.showInformationMessage('patchwise: open a file and select what should change');
    return undefined;
  }
  if (editor.document.uri.scheme !== 'file') {
    void vscode.window.showInformationMessage('patchwise: edits work on files on disk; save this one first');
    return undefined;
  }
  const range = client.code2ProtocolConverter.asRange(editor.selection);
  return { uri: editor.document.uri.toString(), range };
}

async function research(): Promise<void> {
  const query = await vscode.window.showInputBox({
    title: 'patchwise: Research',
    prompt: 'Research question',
    placeHolder: 'e.g. how do editors keep large buffers responsive',
    ignoreFocusOut: true,
  });
  if (!query || !query.trim()) {
    return;
  }
  const done = status?.begin('researching…');
  try {
    // The server opens the report with window/showDocument.
    const finished = await follow('patchwise.research', 'research', { query });
    if (!finished.ok) {
      if (!finished.cancelled) {
        warn(finished.error ?? 'the research failed');
      }
      return;
    }
    const result = finished.research;
    void vscode.window.showInformationMessage(
      `patchwise: research saved (${result?.sources ?? 0} sources)${result?.report ? ` — ${result.report}` : ''}`,
    );
  } catch (error) {
    warn(error);
  } finally {
    done?.();
  }
}

interface LibraryEntry {
  id: string;
  query: string;
  status?: string;
  created_at?: string;
  createdAt?: string;
  synthesis?: string;
}

async function library(): Promise<void> {
  try {
    const entries = (await execute<LibraryEntry[]>('patchwise.research.list', { limit: 200 })) ?? [];
    if (entries.length === 0) {
      void vscode.window.showInformationMessage('patchwise: the research library is empty — run "patchwise: Research…" first');
      return;
    }
    const picked = await vscode.window.showQuickPick(
      entries.map((entry) => ({
        label: entry.query,
        description: [entry.status, entry.created_at ?? entry.createdAt].filter(Boolean).join(' · '),
        detail: entry.synthesis?.split('\n')[0],
        entry,
      })),
      { title: 'patchwise: Research Library', matchOnDetail: true, placeHolder: 'Open a report' },
    );
    if (picked) {
      await execute('patchwise.research.open', { id: picked.entry.id });
    }
  } catch (error) {
    warn(error);
  }
}

/**
 * Develop: `given.request` when a code action carries one ("Develop: …" of a `patchwise develop:`
 * comment), else asked for ("Develop…", the palette). `given.uri` is the file the planner looks
 * at first (default: the active editor's).
 */
async function develop(given: { request?: string; uri?: string } = {}): Promise<void> {
  const task = given.request?.trim()
    ? given.request
    : await vscode.window.showInputBox({
        title: 'patchwise: Develop',
        prompt: 'What should be developed? (explore → plan → steps → checks; you approve the plan)',
        ignoreFocusOut: true,
      });
  if (!task || !task.trim()) {
    return;
  }
  const done = status?.begin('developing…');
  try {
    const editor = vscode.window.activeTextEditor;
    // The server asks to approve its plan with window/showMessageRequest (VS Code shows it).
    const finished = await follow('patchwise.develop', 'develop', {
      request: task,
      uri: given.uri ?? (editor?.document.uri.scheme === 'file' ? editor.document.uri.toString() : undefined),
    });
    if (!finished.ok) {
      if (!finished.cancelled) {
        warn(finished.error ?? 'the develop run failed');
      }
      return;
    }
    proposals.changed();
  } catch (error) {
    warn(error);
  } finally {
    done?.();
  }
}

function startClient(context: vscode.ExtensionContext): LanguageClient {
  const config = vscode.workspace.getConfiguration('patchwise');
  const command = config.get<string>('serverPath', 'patchwise') || 'patchwise';
  const serverOptions: ServerOptions = { command, args: ['serve'] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }],
    initializationOptions: () => explicitSettings(context),
    middleware: {
      // Commands from the server's code actions and code lenses pass through here.
      executeCommand: async (name, args, next) => {
        const first = (args?.[0] ?? {}) as Record<string, unknown>;
        if (name === 'patchwise.editSelection') {
          return editTarget(first as unknown as Target, first.instruction as string | undefined);
        }
        if (name === 'patchwise.edit') {
          return runEdit(first);
        }
        if (name === 'patchwise.develop') {
          return develop(first as { request?: string; uri?: string });
        }
        if (name === 'patchwise.proposal.diff' && typeof first.id === 'number') {
          return proposals.openDiff(first.id);
        }
        if (name === 'patchwise.proposal.accept' || name === 'patchwise.proposal.reject') {
          const result = await next(name, args);
          proposals.changed();
          return result;
        }
        return next(name, args);
      },
    },
  };
  const created = new LanguageClient('patchwise', 'patchwise', serverOptions, clientOptions);
  created.registerFeature(instructionInput);
  // LSP 3.18 inline completion (ghost text as you type) is a proposed feature in
  // vscode-languageclient: without this the client never asks for it.
  created.registerProposedFeatures();
  created.onNotification('patchwise/runFinished', (params: RunFinished) => runs.finished(params));
  created.onDidChangeState((event) => {
    status?.setRunning(event.newState === State.Running);
    if (event.newState === State.Running) {
      const commands = created.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
      void vscode.commands.executeCommand('setContext', 'patchwise.canDevelop', commands.includes('patchwise.develop'));
      status?.setVersion(created.initializeResult?.serverInfo?.version);
    }
  });
  return created;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  status = new Status(context);
  status.setModel(vscode.workspace.getConfiguration('patchwise').get<string>('roles.coder'));
  client = startClient(context);

  const withProposal = (decision: 'accept' | 'reject', hunk: boolean) => async () => {
    const at = await hunkAt(client);
    if (!at) {
      const picked = await proposals.pick(`${decision === 'accept' ? 'Accept' : 'Reject'} which proposal?`);
      if (picked !== undefined) {
        await proposals.decide(decision, picked);
      }
      return;
    }
    await proposals.decide(decision, at.id, hunk ? at.hunk : undefined);
  };

  // The status-bar toggle of completion as you type (`patchwise.completion.enabled`); Tab
  // accepts a suggestion and VS Code's own "Accept Next Word" takes it word by word.
  const completionItem = vscode.window.createStatusBarItem('patchwise.completion', vscode.StatusBarAlignment.Right, 99);
  completionItem.name = 'patchwise completion';
  completionItem.command = 'patchwise.ui.toggleCompletion';
  const renderCompletion = () => {
    const on = vscode.workspace.getConfiguration('patchwise').get<boolean>('completion.enabled', true);
    completionItem.text = on ? '$(sparkle) patchwise' : '$(circle-slash) patchwise';
    completionItem.tooltip = on
      ? 'patchwise completes as you type (click to turn off)'
      : 'patchwise completion is off (click to turn on)';
  };
  renderCompletion();
  completionItem.show();

  context.subscriptions.push(
    status,
    completionItem,
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('patchwise.completion.enabled')) {
        renderCompletion();
      }
    }),
    vscode.commands.registerCommand('patchwise.ui.toggleCompletion', async () => {
      const config = vscode.workspace.getConfiguration('patchwise');
      await config.update('completion.enabled', !config.get<boolean>('completion.enabled', true), vscode.ConfigurationTarget.Global);
    }),
    vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, proposals),
    vscode.commands.registerCommand('patchwise.ui.editSelection', async () => {
      const target = currentTarget();
      if (target) {
        await editTarget(target);
      }
    }),
    vscode.commands.registerCommand('patchwise.ui.develop', () => develop()),
    vscode.commands.registerCommand('patchwise.ui.research', research),
    vscode.commands.registerCommand('patchwise.ui.library', library),
    vscode.commands.registerCommand('patchwise.ui.proposals', () => proposals.show()),
    vscode.commands.registerCommand('patchwise.ui.accept', withProposal('accept', false)),
    vscode.commands.registerCommand('patchwise.ui.acceptHunk', withProposal('accept', true)),
    vscode.commands.registerCommand('patchwise.ui.reject', withProposal('reject', false)),
    vscode.commands.registerCommand('patchwise.ui.rejectHunk', withProposal('reject', true)),
    vscode.commands.registerCommand('patchwise.ui.diff', async () => {
      const at = await hunkAt(client);
      const id = at?.id ?? (await proposals.pick('Diff of which proposal?'));
      if (id !== undefined) {
        await proposals.openDiff(id);
      }
    }),
    vscode.commands.registerCommand('patchwise.ui.cancel', async () => {
      try {
        const result = await execute<{ cancelled?: number }>('patchwise.cancel', {});
        void vscode.window.showInformationMessage(`patchwise: cancelled ${result?.cancelled ?? 0} running task(s)`);
      } catch (error) {
        warn(error);
      }
    }),
    vscode.commands.registerCommand('patchwise.ui.restart', async () => {
      await client?.stop().catch(() => undefined);
      client = startClient(context);
      await client.start().catch(warn);
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (!event.affectsConfiguration('patchwise')) {
        return;
      }
      status?.setModel(vscode.workspace.getConfiguration('patchwise').get<string>('roles.coder'));
      if (event.affectsConfiguration('patchwise.serverPath')) {
        await vscode.commands.executeCommand('patchwise.ui.restart');
        return;
      }
      // Only what the user set: defaults must not hide .patchwise/config.toml.
      await client?.sendNotification('workspace/didChangeConfiguration', { settings: explicitSettings(context) });
    }),
    vscode.window.onDidChangeTextEditorSelection((event) => proposals.updateCursorContext(event.textEditor)),
    vscode.languages.onDidChangeDiagnostics(() => proposals.updateCursorContext(vscode.window.activeTextEditor)),
  );
  try {
    await client.start();
  } catch (error) {
    warn(
      `cannot start "${vscode.workspace.getConfiguration('patchwise').get('serverPath')}" (${
        error instanceof Error ? error.message : error
      }); set patchwise.serverPath to the patchwise binary`,
    );
  }
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
