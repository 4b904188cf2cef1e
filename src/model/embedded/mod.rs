//! The model inside patchwise, as a provider like any other: `kind = "embedded"` (or nothing
//! configured, no server answering, and a model in the data dir) answers through the model host
//! this machine shares (`host.rs`, `patchwise model serve`), over the same OpenAI wire as a
//! llama.cpp or Ollama server ([`HttpModel`]), so budgets, streaming, tool calls written as
//! text and cancellation are the code every server already goes through.
//!
//! Before each request the host is found or started; a host that died (killed, crashed, or
//! gone after its idle minutes) is started again by the next request. The runtime itself
//! (`crate::runtime`, llama.cpp) is compiled only with the `embedded` feature and runs only in
//! the host process.
//!
//! An embedding model inside patchwise ([`EmbeddedEmbedder`], all-MiniLM-L6-v2 by default) is
//! its own host, found or started the same way, reached over the same wire's `/embeddings`.

pub mod catalog;
pub mod gguf;
pub mod host;
pub mod pull;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ProviderConfig, ProviderKind, ToolMode};
use crate::model::embeddings::{Embedder, HttpEmbedder};
use crate::model::{ChatModel, ChatRequest, ChatStream, HttpModel, ModelError, ProbeResult};

pub use catalog::{CATALOG, DEFAULT_ENCODER, DEFAULT_MODEL};
pub use host::{Announcement, HostSpec};

/// Whether this build has the runtime (`--no-default-features` builds do not).
pub const AVAILABLE: bool = cfg!(feature = "embedded");

/// The host's idle minutes when none are configured.
pub const DEFAULT_IDLE_MINUTES: u32 = 10;

/// The settings of a `kind = "embedded"` provider.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct EmbeddedSettings {
    /// A catalogue name or a path to a GGUF file; `None`: the first catalogue model present
    /// in the data dir.
    pub model: Option<String>,
    pub threads: Option<u32>,
    pub context: Option<u32>,
    pub gpu_layers: Option<u32>,
    pub idle_minutes: Option<u32>,
}

/// The model file an embedded provider uses, found or not.
pub fn model_file(settings: &EmbeddedSettings, data_dir: &Path) -> catalog::ModelFile {
    match &settings.model {
        Some(spec) => catalog::resolve(spec, data_dir),
        None => catalog::first_present(data_dir)
            .unwrap_or_else(|| catalog::resolve(DEFAULT_MODEL, data_dir)),
    }
}

/// The model's name as roles and logs show it: the catalogue name, or the file's stem.
pub fn model_name(resolved: &catalog::ModelFile) -> String {
    match resolved.entry {
        Some(entry) => entry.name.to_owned(),
        None => resolved
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into()),
    }
}

/// What `doctor` and the router learn of an embedded provider without starting anything: the
/// model file is there and is a whole GGUF file, and this build has the runtime.
pub fn probe(settings: &EmbeddedSettings, data_dir: &Path) -> ProbeResult {
    let resolved = model_file(settings, data_dir);
    let mut result = ProbeResult {
        url: resolved.path.display().to_string(),
        answers: false,
        models: Vec::new(),
        error: None,
    };
    if !AVAILABLE {
        result.error = Some(
            "this patchwise was built without the embedded runtime (--no-default-features): rebuild with the default features, or use a model server".into(),
        );
        return result;
    }
    if !resolved.path.is_file() {
        result.error = Some(resolved.missing_hint());
        return result;
    }
    match gguf::read_info(&resolved.path) {
        Ok(info) => match too_large(info.size) {
            Some(reason) => result.error = Some(reason),
            None => {
                result.answers = true;
                result.models = vec![model_name(&resolved)];
            }
        },
        Err(err) => result.error = Some(err.to_string()),
    }
    result
}

/// Why a model of `bytes` cannot be loaded on this machine: larger than all its memory (the
/// host would page the weights in from disk for every token, or be killed).
pub fn too_large(bytes: u64) -> Option<String> {
    let total = memory_total()?;
    (bytes > total).then(|| {
        format!(
            "the model is {} MB and this machine has {} MB of memory in all: choose a smaller model (`patchwise model list`)",
            bytes / 1_000_000,
            total / 1_000_000
        )
    })
}

/// The machine's memory in bytes (`MemTotal` of /proc/meminfo; `None` elsewhere).
fn memory_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The host for `model` with `settings`: the context is the configured one, else the file's
/// trained window at most [`DEFAULT_CONTEXT`] (read from its header, nothing loaded).
pub fn host_spec(settings: &EmbeddedSettings, model: &Path) -> HostSpec {
    let trained = gguf::read_info(model)
        .ok()
        .and_then(|info| info.context_length)
        .map(|n| n.min(u64::from(u32::MAX)) as u32);
    // Past the trained window a model's answers fall apart: a larger setting is cut to it.
    let context = match (settings.context, trained) {
        (Some(wanted), Some(trained)) if wanted > trained => {
            tracing::warn!(
                wanted,
                trained,
                "the configured context is larger than the model's trained window; using the window"
            );
            trained
        }
        (Some(wanted), _) => wanted,
        (None, trained) => trained.unwrap_or(DEFAULT_CONTEXT).clamp(1, DEFAULT_CONTEXT),
    };
    HostSpec {
        model: model.to_path_buf(),
        threads: settings.threads,
        context: Some(context),
        gpu_layers: settings.gpu_layers.unwrap_or(0),
        idle: Duration::from_secs(
            60 * u64::from(settings.idle_minutes.unwrap_or(DEFAULT_IDLE_MINUTES).max(1)),
        ),
    }
}

/// The `patchwise` binary a host is started from: this one (`PATCHWISE_HOST_PROGRAM` names
/// another, for tests that drive the runtime from a test binary).
pub fn host_program() -> PathBuf {
    std::env::var_os("PATCHWISE_HOST_PROGRAM")
        .map(PathBuf::from)
        .or_else(|| std::env::current_exe().ok())
        .unwrap_or_else(|| PathBuf::from("patchwise"))
}

/// An embedded provider's model: the shared host, reached over the OpenAI wire.
pub struct EmbeddedModel {
    name: String,
    window: usize,
    inner: Arc<Inner>,
}

struct Inner {
    spec: HostSpec,
    data_dir: PathBuf,
    program: PathBuf,
    provider_name: String,
    model: String,
    tools: ToolMode,
    config: Config,
    /// The wire to the host last found, by its URL.
    current: Mutex<Option<(String, Arc<HttpModel>)>>,
}

impl EmbeddedModel {
    /// The model for provider `provider_name` (`kind = "embedded"`). Fails when the model file
    /// is missing or broken, or this build has no runtime, with what to do about it.
    pub fn new(
        config: &Config,
        provider_name: &str,
        provider: &ProviderConfig,
    ) -> Result<EmbeddedModel, ModelError> {
        let data_dir = config.data_dir();
        let settings = &provider.embedded;
        let probed = probe(settings, &data_dir);
        if let Some(reason) = probed.error {
            return Err(ModelError::NoModel {
                role: String::new(),
                reason: format!("{provider_name} (the model inside patchwise): {reason}"),
            });
        }
        let resolved = model_file(settings, &data_dir);
        let model = model_name(&resolved);
        let spec = host_spec(settings, &resolved.path);
        let context = spec.context.unwrap_or(DEFAULT_CONTEXT);
        let program = host_program();
        // The budget is fitted to the host's window, whatever the model table says of the name.
        let mut config = config.clone();
        let mut model_settings = config.model_settings(provider_name, &model);
        model_settings.context_window = Some(context as usize);
        config
            .models
            .insert(format!("{provider_name}/{model}"), model_settings);
        Ok(EmbeddedModel {
            name: format!("{provider_name}/{model}"),
            window: context as usize,
            inner: Arc::new(Inner {
                spec,
                data_dir,
                program,
                provider_name: provider_name.to_owned(),
                model,
                tools: provider.tools,
                config,
                current: Mutex::new(None),
            }),
        })
    }

    /// Which host this model uses.
    pub fn host_spec(&self) -> &HostSpec {
        &self.inner.spec
    }
}

impl Inner {
    /// The running host, started if needed (blocking; called off the async runtime).
    fn ensure_host(&self) -> Result<Announcement, ModelError> {
        host::ensure(&self.spec, &self.data_dir, &self.program).map_err(|err| ModelError::Connect {
            url: self.spec.model.display().to_string(),
            reason: err.to_string(),
        })
    }

    fn wire_to(&self, url: &str) -> Arc<HttpModel> {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((known, model)) = current.as_ref()
            && known == url
        {
            return model.clone();
        }
        let mut provider = ProviderConfig::new(ProviderKind::OpenAi, Some(url));
        provider.api_key_env = Some(String::new());
        provider.tools = self.tools;
        let model = Arc::new(HttpModel::new(
            &self.config,
            &self.provider_name,
            &provider,
            &self.model,
        ));
        *current = Some((url.to_owned(), model.clone()));
        model
    }
}

/// The window used when neither the provider nor the file says one (the runtime's default).
pub const DEFAULT_CONTEXT: u32 = 8192;

impl ChatModel for EmbeddedModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn context_window(&self) -> usize {
        self.window
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let inner = self.inner.clone();
        let found = {
            let inner = inner.clone();
            let cancel = cancel.clone();
            async move {
                let ensured = tokio::task::spawn_blocking(move || inner.ensure_host());
                tokio::select! {
                    _ = cancel.cancelled() => Err(ModelError::Cancelled),
                    joined = ensured => joined.unwrap_or_else(|err| {
                        Err(ModelError::Request(format!("the model host check failed: {err}")))
                    }),
                }
            }
        };
        Box::pin(
            futures::stream::once(found).flat_map(move |found| -> ChatStream {
                match found {
                    Ok(host) => inner
                        .wire_to(&host.url)
                        .chat(request.clone(), cancel.clone()),
                    Err(err) => Box::pin(futures::stream::once(async move { Err(err) })),
                }
            }),
        )
    }
}

/// An embedding model inside patchwise: the host of a GGUF file that names a pooling (a
/// sentence encoder), asked for vectors over the OpenAI wire's `/embeddings`. Each request
/// finds or starts the host first, so a host gone idle or killed is started again.
pub struct EmbeddedEmbedder {
    name: String,
    model: String,
    spec: HostSpec,
    data_dir: PathBuf,
    program: PathBuf,
    timeout: Duration,
    /// The wire to the host last found, by its URL.
    current: Mutex<Option<(String, Arc<HttpEmbedder>)>>,
}

impl EmbeddedEmbedder {
    /// The embedder for `settings.model` (a catalogue name or a GGUF path) as provider
    /// `provider_name`. Fails, saying what to do, when this build has no runtime, the file is
    /// missing or broken, or the model writes text instead of pooling it into a vector.
    pub fn new(
        config: &Config,
        provider_name: &str,
        settings: &EmbeddedSettings,
        timeout: Duration,
    ) -> Result<EmbeddedEmbedder, String> {
        let data_dir = config.data_dir();
        let resolved = model_file(settings, &data_dir);
        if let Some(reason) = probe(settings, &data_dir).error {
            return Err(reason);
        }
        let info = gguf::read_info(&resolved.path).map_err(|err| err.to_string())?;
        if !info.is_embedding_model() {
            return Err(format!(
                "{} writes text and has no pooling to turn a text into one vector: name an embedding model (`patchwise model pull {DEFAULT_ENCODER}`)",
                resolved.path.display()
            ));
        }
        let model = model_name(&resolved);
        Ok(EmbeddedEmbedder {
            name: format!("{provider_name}/{model}"),
            spec: host_spec(settings, &resolved.path),
            model,
            data_dir,
            program: host_program(),
            timeout,
            current: Mutex::new(None),
        })
    }

    /// The built-in encoder ([`DEFAULT_ENCODER`]) when it is downloaded and this build has the
    /// runtime; `None` otherwise (research then ranks by words alone); `Some(Err)` when its
    /// file is there but unusable.
    pub fn default_for(
        config: &Config,
        timeout: Duration,
    ) -> Option<Result<EmbeddedEmbedder, String>> {
        let settings = EmbeddedSettings {
            model: Some(DEFAULT_ENCODER.to_owned()),
            ..EmbeddedSettings::default()
        };
        let present = model_file(&settings, &config.data_dir()).path.is_file();
        (AVAILABLE && present).then(|| {
            EmbeddedEmbedder::new(config, crate::config::BUILTIN_EMBEDDED, &settings, timeout)
        })
    }

    fn wire_to(&self, url: &str) -> Result<Arc<HttpEmbedder>, String> {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((known, wire)) = current.as_ref()
            && known == url
        {
            return Ok(wire.clone());
        }
        let mut provider = ProviderConfig::new(ProviderKind::OpenAi, Some(url));
        provider.api_key_env = Some(String::new());
        let wire = Arc::new(HttpEmbedder::new(
            "embedded",
            &self.model,
            provider,
            self.timeout,
        )?);
        *current = Some((url.to_owned(), wire.clone()));
        Ok(wire)
    }
}

impl Embedder for EmbeddedEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> futures::future::BoxFuture<'a, Result<Vec<Vec<f32>>, String>> {
        Box::pin(async move {
            let (spec, data_dir, program) = (
                self.spec.clone(),
                self.data_dir.clone(),
                self.program.clone(),
            );
            let host =
                tokio::task::spawn_blocking(move || host::ensure(&spec, &data_dir, &program))
                    .await
                    .map_err(|err| format!("the model host check failed: {err}"))?
                    .map_err(|err| err.to_string())?;
            self.wire_to(&host.url)?.embed(texts).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_larger_than_the_machine_is_refused_with_the_sizes() {
        if memory_total().is_none() {
            return;
        }
        let reason = too_large(u64::MAX / 2).unwrap();
        assert!(reason.contains("choose a smaller model"), "{reason}");
        assert_eq!(too_large(1_000_000), None);
    }

    #[test]
    fn a_missing_model_names_the_pull_command() {
        let data = tempfile::tempdir().unwrap();
        let probed = probe(&EmbeddedSettings::default(), data.path());
        assert!(!probed.answers);
        let error = probed.error.unwrap();
        if AVAILABLE {
            assert!(
                error.contains("patchwise model pull qwen2.5-coder-1.5b"),
                "{error}"
            );
        } else {
            assert!(error.contains("--no-default-features"), "{error}");
        }
    }
}
