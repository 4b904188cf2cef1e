//! Research from the editor: `patchwise.research {query, wait?}` with phase progress and a
//! heartbeat, cancellable, answering at once with the run id and ending with
//! `patchwise/runFinished` (`lsp/runs.rs`); `patchwise.research.list`; `patchwise.research.open
//! {id}`. The Markdown report is opened with `window/showDocument` when the client supports it.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;

use super::from_proto;
use super::runs::{ResearchAnswer, RunAnswer, RunResult, Shown};
use super::server::{Backend, request_failed, show_file};
use crate::research;
use crate::workflow::session::choices::one_line;
use crate::workflow::session::research::RunOptions;
use crate::workflow::session::{self, RunEnded, RunHandle, RunKind, RunReport};

#[derive(Debug, Deserialize)]
pub struct ResearchCommandArgs {
    pub query: String,
    /// Only these sources (configured names, e.g. `openalex`, `workspace`).
    pub sources: Option<Vec<String>>,
    pub depth: Option<u8>,
    /// Answer when the run ends (with the record) instead of at once with the run id.
    #[serde(default)]
    pub wait: bool,
}

#[derive(Debug, Default, Deserialize)]
pub struct ListArgs {
    pub limit: Option<usize>,
    /// Full-text search over earlier research instead of the newest first.
    pub search: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct OpenArgs {
    pub id: String,
}

impl Backend {
    pub(super) async fn research(&self, args: ResearchCommandArgs) -> Result<Value> {
        if args.query.trim().is_empty() {
            return Err(tower_lsp_server::jsonrpc::Error::invalid_params(
                "patchwise.research needs {\"query\": \"<question>\"}",
            ));
        }
        let (config, workspace) = {
            let state = self.state();
            let workspace = state.workspace_roots.iter().find_map(from_proto::file_path);
            ((*state.config).clone(), workspace)
        };
        let run = self.runs.start_run(RunKind::Research, &args.query);
        let options = RunOptions {
            sources: args.sources,
            depth: args.depth,
            workspace,
            ..RunOptions::default()
        };
        let what = one_line(&args.query);
        let query = args.query;
        let call = move |run: RunHandle| async move {
            session::research::run(&config, &query, options, &run).await;
            run
        };
        let finish =
            |this: Backend, run_id, ended| async move { this.research_ended(run_id, ended).await };
        self.launch(run, args.wait, &what, call, finish).await
    }

    /// What a research run produced: the report saved, and shown.
    async fn research_ended(&self, run_id: String, ended: RunEnded) -> RunResult {
        let Some(RunReport::Research(done)) = ended.report else {
            return Err(format!("research failed: {}", ended.outcome).into());
        };
        let show = self.state().client.show_document;
        self.show_report(&done.report, show).await;
        let record = done.record;
        let message = format!(
            "patchwise: research {} saved ({} sources): {}",
            record.id,
            record.sources.len(),
            done.report.display()
        );
        let answer = ResearchAnswer {
            run_id,
            id: record.id,
            query: record.query,
            status: record.status,
            synthesis: record.synthesis,
            synthesis_kind: record.synthesis_kind,
            sources: record.sources.len(),
            notes: record.notes,
            report: done.report,
        };
        Ok(Shown {
            answer: RunAnswer::Research(answer),
            message,
        })
    }

    pub(super) async fn research_list(&self, args: ListArgs) -> Result<Value> {
        let config = (*self.state().config).clone();
        let limit = args.limit.unwrap_or(50).clamp(1, 1000);
        tokio::task::spawn_blocking(move || {
            let library = research::open_library(&config).map_err(|e| e.to_string())?;
            let found = match args.search.as_deref().filter(|s| !s.trim().is_empty()) {
                Some(text) => library.search(text, limit),
                None => library.list(limit),
            }
            .map_err(|e| e.to_string())?;
            serde_json::to_value(found).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| request_failed(e.to_string()))?
        .map_err(|e| request_failed(format!("cannot read the research library: {e}")))
    }

    pub(super) async fn research_open(&self, args: OpenArgs) -> Result<Value> {
        let (config, show) = {
            let state = self.state();
            ((*state.config).clone(), state.client.show_document)
        };
        let id = args.id.clone();
        let found = tokio::task::spawn_blocking(move || {
            let library = research::open_library(&config).map_err(|e| e.to_string())?;
            let record = library.get(&id).map_err(|e| e.to_string())?;
            let report = research::ensure_report(&library, &record).map_err(|e| e.to_string())?;
            Ok::<_, String>((record, report))
        })
        .await
        .map_err(|e| request_failed(e.to_string()))?
        .map_err(|e| request_failed(format!("cannot open research {}: {e}", args.id)))?;
        let (record, report) = found;
        self.show_report(&report, show).await;
        Ok(json!({ "id": record.id, "query": record.query, "report": report }))
    }

    async fn show_report(&self, report: &Path, supported: bool) {
        if !supported {
            return;
        }
        let shown = show_file(&self.client, report).await;
        if let Err(err) = shown {
            tracing::warn!("the client did not open the report: {err}");
        }
    }
}
