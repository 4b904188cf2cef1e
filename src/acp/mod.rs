//! `patchwise acp`: the Agent Client Protocol (version 1) over stdio, so the agent panels of Zed,
//! the JetBrains IDEs, Neovim (CodeCompanion) and Emacs (agent-shell) run develop, edit and
//! research. It is the third edge beside `lsp/` and `mcp/`, and the only module that knows the
//! `agent_client_protocol` crate: it converts requests into `workflow::session` calls and the
//! runs' typed events into `session/update`s, and holds no workflow logic.
//!
//! Layout: `agent` (state and the requests that answer at once), `turn` (one prompt: the run,
//! its updates, the permission to write, the writes), `target` (what an edit prompt names).
//! stdout carries the protocol (one JSON message per line) and nothing else; logs go to stderr.
//!
//! Long work never blocks the connection's dispatch loop (the crate runs one handler at a time):
//! a prompt is spawned, so `session/cancel` and other requests are read while it runs.

mod agent;
mod target;
mod turn;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, InitializeRequest,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, SessionId, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Stdio};
use anyhow::Context;

use agent::AcpState;
pub use agent::Mode;

/// Serves ACP on stdin/stdout until the client closes stdin. Sessions may work in `roots` and
/// the folders below them.
pub fn run_stdio(roots: Vec<PathBuf>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    tracing::info!(roots = ?roots, "serving ACP on stdio");
    let state = AcpState::new(roots);
    let result = runtime.block_on(serve(state.clone()));
    state.cancel_all();
    // A blocking stdin read may still be pending; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

async fn serve(state: Arc<AcpState>) -> anyhow::Result<()> {
    let s_init = state.clone();
    let s_new = state.clone();
    let s_load = state.clone();
    let s_mode = state.clone();
    let s_option = state.clone();
    let s_prompt = state.clone();
    let s_cancel = state.clone();
    Agent
        .v1()
        .name("patchwise")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                responder.respond(s_init.initialize(&request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: AuthenticateRequest, responder, _cx| {
                // No authentication methods are offered; models are configured in files.
                responder.respond(AuthenticateResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        cx: ConnectionTo<Client>| {
                match s_new.new_session(&request) {
                    Ok(response) => {
                        let id = response.session_id.clone();
                        responder.respond(response)?;
                        list_served_models(s_new.clone(), cx, id);
                        Ok(())
                    }
                    Err(rejected) => responder.respond_with_error(rejected.into_error()),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: ConnectionTo<Client>| {
                match s_load.load_session(&request) {
                    Ok((response, replay)) => {
                        // The conversation is shown again before the answer, as ACP asks.
                        for update in replay {
                            let sent = cx.send_notification(SessionNotification::new(
                                request.session_id.clone(),
                                update,
                            ));
                            if let Err(err) = sent {
                                tracing::warn!("the session's conversation was not sent: {err}");
                            }
                        }
                        responder.respond(response)?;
                        list_served_models(s_load.clone(), cx, request.session_id);
                        Ok(())
                    }
                    Err(rejected) => responder.respond_with_error(rejected.into_error()),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse>,
                        cx: ConnectionTo<Client>| {
                match s_mode.set_mode(&request) {
                    Ok((response, update)) => {
                        // Clients that read the config options see the mode change too; sent
                        // before the answer, so a client that closes once answered still gets it.
                        notify(&cx, &request.session_id, update);
                        responder.respond(response)
                    }
                    Err(rejected) => responder.respond_with_error(rejected.into_error()),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest,
                        responder: Responder<SetSessionConfigOptionResponse>,
                        cx: ConnectionTo<Client>| {
                match s_option.set_config_option(&request) {
                    Ok((response, update)) => {
                        // Clients that read the modes see the mode change too (before the
                        // answer, as for set_mode).
                        if let Some(update) = update {
                            notify(&cx, &request.session_id, update);
                        }
                        responder.respond(response)
                    }
                    Err(rejected) => responder.respond_with_error(rejected.into_error()),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let (cancel, session) = match s_prompt.begin_prompt(&request.session_id) {
                    Ok(started) => started,
                    Err(rejected) => return responder.respond_with_error(rejected.into_error()),
                };
                let state = s_prompt.clone();
                let peer = turn::Peer {
                    cx: cx.clone(),
                    session: request.session_id.clone(),
                    abilities: state.client(),
                };
                let prompt = request.prompt;
                cx.spawn(async move {
                    let id = session.id.clone();
                    let user = turn::user_turn(&prompt);
                    // A task of its own: a run waits in place for the client's answers
                    // (`workflow::session::client_files`), which this connection's task reads.
                    let runs = state.runs.clone();
                    let end = tokio::spawn(turn::run(peer, session, prompt, cancel, runs))
                        .await
                        .unwrap_or_else(|err| {
                            tracing::error!("a prompt turn stopped: {err}");
                            turn::TurnEnd {
                                stop: StopReason::EndTurn,
                                said: format!("The turn stopped unexpectedly: {err}"),
                                always_allow: false,
                            }
                        });
                    state.end_prompt(
                        &id,
                        vec![user, turn::agent_turn(end.said)],
                        end.always_allow,
                    );
                    if let Err(err) = responder.respond(PromptResponse::new(end.stop)) {
                        tracing::warn!("the prompt's answer could not be sent: {err}");
                    }
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                s_cancel.cancel(&notification.session_id);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
        .map_err(|e| anyhow::anyhow!("the ACP connection failed: {e}"))
}

fn notify(cx: &ConnectionTo<Client>, session: &SessionId, update: SessionUpdate) {
    if let Err(err) = cx.send_notification(SessionNotification::new(session.clone(), update)) {
        tracing::warn!("a session/update could not be sent: {err}");
    }
}

/// Asks the servers the session's configuration leaves the model open for which models they
/// serve, in a task of its own (a slow server must not hold up the connection), and sends the
/// longer `model` option as a `config_option_update`.
fn list_served_models(state: Arc<AcpState>, cx: ConnectionTo<Client>, session: SessionId) {
    tokio::spawn(async move {
        if let Some(update) = state.list_served_models(&session.0).await {
            notify(&cx, &session, update);
        }
    });
}
