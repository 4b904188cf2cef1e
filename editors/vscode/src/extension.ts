// patchwise for VS Code: starts `patchwise serve` for file documents and supplies what only the
// editor can: the instruction for "Edit selection…" and the question for research. Everything
// else — hover diffs, code lenses, Accept/Reject, applying edits — is the language server's.
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
} from 'vscode-languageclient/node';

let client: LanguageClient | undefined;

interface Target {
  uri: string;
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
}

async function runEdit(target: Target): Promise<void> {
  if (!client) {
    return;
  }
  const instruction = await vscode.window.showInputBox({
    prompt: 'What should change?',
    placeHolder: 'e.g. return early when the list is empty',
  });
  if (!instruction) {
    return;
  }
  try {
    const result = await client.sendRequest(ExecuteCommandRequest.type, {
      command: 'patchwise.edit',
      arguments: [{ ...target, instruction }],
    });
    const id = (result as { id?: number } | null)?.id;
    vscode.window.showInformationMessage(
      `patchwise: proposal ${id} ready — hover the change for the diff, use the code lens to accept`,
    );
  } catch (error) {
    vscode.window.showWarningMessage(`patchwise: ${(error as Error).message}`);
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const config = vscode.workspace.getConfiguration('patchwise');
  const command = config.get<string>('serverPath', 'patchwise');
  const serverOptions: ServerOptions = { command, args: ['serve'] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }],
    initializationOptions: config.get('settings', {}),
    synchronize: { configurationSection: 'patchwise' },
  };
  client = new LanguageClient('patchwise', 'patchwise', serverOptions, clientOptions);

  context.subscriptions.push(
    // The server's "Edit selection…" code action carries the target; the instruction is ours.
    vscode.commands.registerCommand('patchwise.editSelection', async (target?: Target) => {
      if (target) {
        return runEdit(target);
      }
      const editor = vscode.window.activeTextEditor;
      if (!editor || !client) {
        return;
      }
      const range = client.code2ProtocolConverter.asRange(editor.selection);
      return runEdit({ uri: editor.document.uri.toString(), range });
    }),
    vscode.commands.registerCommand('patchwise.researchPrompt', async () => {
      const query = await vscode.window.showInputBox({ prompt: 'Research question' });
      if (!query || !client) {
        return;
      }
      try {
        await client.sendRequest(ExecuteCommandRequest.type, {
          command: 'patchwise.research',
          arguments: [{ query }],
        });
      } catch (error) {
        vscode.window.showWarningMessage(`patchwise: ${(error as Error).message}`);
      }
    }),
    vscode.commands.registerCommand('patchwise.cancelAll', async () => {
      await client?.sendRequest(ExecuteCommandRequest.type, { command: 'patchwise.cancel', arguments: [] });
    }),
  );
  await client.start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
