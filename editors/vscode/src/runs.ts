// Edit, develop and research runs end with the server's `patchwise/runFinished` notification. The command that
// started a run answers with its id at once, but a run that fails immediately can finish before
// that answer arrives: finished runs nobody waits for yet are kept until someone asks.

export interface RunFinished {
  runId: string;
  kind: string;
  ok: boolean;
  error?: string;
  cancelled?: boolean;
  proposal?: {
    id: number;
    uri?: string;
    diff?: string;
    model?: string;
    attempts?: number;
    matchedBy?: string;
    applied?: boolean;
    /** Develop: the files it changes (workspace-relative) and what the run learned. */
    files?: { path: string; created: boolean }[];
    summary?: string;
  };
  /** Research: the saved record. */
  research?: {
    id: string;
    query?: string;
    sources?: number;
    report?: string;
  };
}

export class Runs {
  private readonly waiting = new Map<string, (finished: RunFinished) => void>();
  private readonly early = new Map<string, RunFinished>();

  finished(params: RunFinished): void {
    const waiter = this.waiting.get(params.runId);
    if (waiter) {
      this.waiting.delete(params.runId);
      waiter(params);
      return;
    }
    this.early.set(params.runId, params);
    // Bounded: runs started by other clients of a shared server are never claimed.
    if (this.early.size > 100) {
      const oldest = this.early.keys().next().value;
      if (oldest !== undefined) {
        this.early.delete(oldest);
      }
    }
  }

  wait(runId: string): Promise<RunFinished> {
    const done = this.early.get(runId);
    if (done) {
      this.early.delete(runId);
      return Promise.resolve(done);
    }
    return new Promise((resolve) => this.waiting.set(runId, resolve));
  }
}
