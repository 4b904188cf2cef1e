//! Wraps the whole service: one tracing span per message, and panics turned into responses.
//!
//! tower-lsp-server runs each handler as a future inside its own serve loop; a panic there
//! would unwind through the loop and take the server down. Catching it here, once, covers every
//! handler — present and future — without a `catch_unwind` in each.

use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};

use futures::FutureExt;
use futures::future::BoxFuture;
use tower::Service;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Request, Response};
use tracing::Instrument;

use crate::logging::panic_message;

pub struct Guard<S> {
    inner: S,
}

impl<S> Guard<S> {
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S> Service<Request> for Guard<S>
where
    S: Service<Request, Response = Option<Response>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Option<Response>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Option<Response>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let method = request.method().to_owned();
        let id = request.id().cloned();
        let span = match &id {
            Some(id) => tracing::info_span!("request", %method, %id),
            None => tracing::info_span!("notification", %method),
        };
        let future = {
            let _entered = span.enter();
            std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(request)))
        };
        Box::pin(
            async move {
                let outcome = match future {
                    Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
                    Err(payload) => Err(payload),
                };
                match outcome {
                    Ok(result) => result,
                    Err(payload) => {
                        let message = panic_message(payload.as_ref());
                        tracing::error!("handler panicked: {message}");
                        // A notification has no one to answer; the log line is all we can do.
                        Ok(id.map(|id| {
                            Response::from_error(
                                id,
                                Error {
                                    code: ErrorCode::InternalError,
                                    message: format!(
                                        "internal error: patchwise failed while handling {method}: {message}; \
                                         the server is still running, please report this with the log"
                                    )
                                    .into(),
                                    data: None,
                                },
                            )
                        }))
                    }
                }
            }
            .instrument(span),
        )
    }
}
