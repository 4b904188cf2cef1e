//! Research from the editor: `patchwise.research {query}` with phase progress and a heartbeat,
//! cancellable; `patchwise.research.list`; `patchwise.research.open {id}`. The Markdown report
//! is opened with `window/showDocument` when the client supports it.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;

use super::from_proto;
use super::progress::Reporter;
use super::server::{Backend, request_failed, show_file};
use crate::research::{self, RunOptions};
use crate::workflow::session::{self, RunKind};

#[derive(Debug, Deserialize)]
pub struct ResearchCommandArgs {
    pub query: String,
    /// Only these sources (configured names, e.g. `openalex`, `workspace`).
    pub sources: Option<Vec<String>>,
    pub depth: Option<u8>,
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
        let (config, workspace, features) = {
            let state = self.state();
            let workspace = state.workspace_roots.iter().find_map(from_proto::file_path);
            ((*state.config).clone(), workspace, state.client)
        };
        let mut handle = self.runs.start_run(RunKind::Research, &args.query);
        let reporter =
            Reporter::start(&self.client, features.work_done_progress, &mut handle).await;
        let options = RunOptions {
            sources: args.sources,
            depth: args.depth,
            workspace,
            ..RunOptions::default()
        };
        let outcome = session::research::run(&config, &args.query, options, &handle).await;
        let run = match outcome {
            Ok(run) => run,
            Err(err) => {
                handle.finish(&err.to_string());
                reporter.done().await;
                return Err(request_failed(format!("research failed: {err}")));
            }
        };
        handle.finish("report ready");
        reporter.done().await;
        self.show_report(&run.report, features.show_document).await;
        Ok(json!({
            "id": run.record.id,
            "query": run.record.query,
            "status": run.record.status,
            "synthesis": run.record.synthesis,
            "synthesisKind": run.record.synthesis_kind,
            "sources": run.record.sources.len(),
            "notes": run.record.notes,
            "report": run.report,
        }))
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
