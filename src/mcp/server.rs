//! The rmcp handler: lists the catalog's tools and routes `tools/call` to the [`Agent`]. Three
//! lines per call — convert in, call the core, convert out — plus what only the protocol knows:
//! progress tokens, cancellation, and which failures are protocol errors (an unknown tool, a
//! request that is not a call) rather than tool results the model should read (everything else,
//! with `isError: true`).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value};

use super::agent::{Agent, CallReply};
use super::catalog::{self, ToolDef};

/// What the server tells a client about itself (clients may show it to their model).
const INSTRUCTIONS: &str = "patchwise edits files so that an edit never lands in the wrong \
    place: read_file (or context) before editing; edit_file tolerates indentation and whitespace \
    slips but refuses ambiguous or stale edits with the current text. research runs cited deep \
    research.";

/// The MCP server of one session.
#[derive(Clone)]
pub struct Server {
    agent: Arc<Agent>,
    tools: Arc<Vec<Tool>>,
}

impl Server {
    pub fn new(agent: Agent) -> Server {
        Server {
            agent: Arc::new(agent),
            tools: Arc::new(catalog::tools().iter().map(to_tool).collect()),
        }
    }
}

fn to_tool(def: &ToolDef) -> Tool {
    let schema = match &def.schema {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let hints = def.hints;
    let annotations = ToolAnnotations::with_title(def.title)
        .read_only(hints.read_only)
        .destructive(hints.destructive)
        .idempotent(hints.idempotent)
        .open_world(hints.open_world);
    Tool::new(def.name, def.description.clone(), Arc::new(schema)).annotate(annotations)
}

fn to_result(reply: CallReply) -> CallToolResponse {
    let content = vec![ContentBlock::text(reply.text)];
    if reply.is_error {
        CallToolResult::error(content).into()
    } else {
        CallToolResult::success(content).into()
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("patchwise", env!("CARGO_PKG_VERSION")).with_title("patchwise"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !catalog::NAMES.contains(&name.as_str()) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{name}`; the tools are: {}",
                    catalog::NAMES.join(", ")
                ),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        if name == "research" {
            return Ok(to_result(self.research(args, &request.meta, context).await));
        }
        let agent = self.agent.clone();
        let started = std::time::Instant::now();
        let reply = tokio::task::spawn_blocking(move || agent.call(&name, args))
            .await
            .unwrap_or_else(|e| {
                tracing::error!("a tool call failed: {e}");
                CallReply::error(format!(
                    "the tool failed unexpectedly ({e}); nothing was written. Try again or use \
                     another tool"
                ))
            });
        tracing::debug!(
            tool = %request.name,
            id = ?context.id,
            elapsed_ms = started.elapsed().as_millis() as u64,
            error = reply.is_error,
            "tools/call"
        );
        Ok(to_result(reply))
    }
}

impl Server {
    /// Research with progress notifications (when the client sent a progress token) and the
    /// request's cancellation token.
    async fn research(
        &self,
        args: Map<String, Value>,
        meta: &Option<rmcp::model::RequestMetaObject>,
        context: RequestContext<RoleServer>,
    ) -> CallReply {
        let token = meta
            .as_ref()
            .and_then(|m| m.get_progress_token())
            .or_else(|| context.meta.get_progress_token());
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<(u8, String)>();
        let forward = token.map(|token| {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                // Progress must increase with every notification: equal percents are spread
                // a little, and never reach 100 before the end.
                let mut last = 0.0_f64;
                while let Some((percent, message)) = receiver.recv().await {
                    let value = f64::from(percent).max(last + 0.01).min(99.99);
                    if value <= last {
                        continue;
                    }
                    last = value;
                    let param = ProgressNotificationParam::new(token.clone(), value)
                        .with_total(100.0)
                        .with_message(message);
                    if peer.notify_progress(param).await.is_err() {
                        break;
                    }
                }
            })
        });
        let progress = move |percent: u8, message: String| {
            let _ = sender.send((percent, message));
        };
        let reply = self
            .agent
            .research(&args, progress, context.ct.clone())
            .await;
        if let Some(task) = forward {
            // The sender is gone with `progress`: the forwarder drains and stops.
            let _ = task.await;
        }
        reply
    }
}
