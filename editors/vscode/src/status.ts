// The status bar item: which coder model patchwise uses, and what is running now. Clicking it
// shows the pending proposals.
import * as vscode from 'vscode';

export class Status implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private model: string | undefined;
  private version: string | undefined;
  private running = false;
  private readonly work = new Map<number, string>();
  private next = 1;

  constructor(_context: vscode.ExtensionContext) {
    this.item = vscode.window.createStatusBarItem('patchwise.status', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'patchwise';
    this.item.command = 'patchwise.ui.proposals';
    this.render();
    this.item.show();
  }

  setModel(model: string | undefined): void {
    if (model) {
      this.model = model;
    }
    this.render();
  }

  setVersion(version: string | undefined): void {
    this.version = version;
    this.render();
  }

  setRunning(running: boolean): void {
    this.running = running;
    this.render();
  }

  /** Shows `message` until the returned function is called. */
  begin(message: string): () => void {
    const id = this.next++;
    this.work.set(id, message);
    this.render();
    return () => {
      this.work.delete(id);
      this.render();
    };
  }

  private render(): void {
    const busy = [...this.work.values()];
    const model = this.model ?? 'model from .patchwise/config.toml';
    if (!this.running) {
      this.item.text = '$(circle-slash) patchwise';
      this.item.tooltip = 'patchwise: the server is not running (see the "patchwise" output channel)';
    } else if (busy.length > 0) {
      this.item.text = `$(sync~spin) patchwise: ${busy[busy.length - 1]}${busy.length > 1 ? ` (+${busy.length - 1})` : ''}`;
      this.item.tooltip = `patchwise ${this.version ?? ''} · coder ${model} · "patchwise: Cancel Running Work" stops it`;
    } else {
      this.item.text = `$(sparkle) patchwise: ${this.model ?? 'ready'}`;
      this.item.tooltip = `patchwise ${this.version ?? ''} · coder ${model} · click for pending proposals`;
    }
  }

  dispose(): void {
    this.item.dispose();
  }
}
