//! `patchwise doctor [--json] [--workspace DIR] [--offline]`: what configuration is in effect
//! and where each value came from, whether each role's server answers and lists its model, and
//! where data is kept — the first thing to run when a model call fails.
//!
//! Keys are never printed: only the name of the variable and whether it is set. Exit codes:
//! 0 the coder role's server answers (and lists its model, if one is named) and the configuration
//! has no errors, 1 otherwise (the report is still printed), 2 usage or output errors.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;

use crate::config::ProviderKind;
use crate::config::{Config, ConfigPaths, ConfigProblem, ModelRole, ProviderConfig, Severity};
use crate::model::roles::{ProbeResult, lists_model, probe_provider};

/// Arguments of `patchwise doctor`.
#[derive(Debug, Clone, clap::Args)]
pub struct DoctorArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,

    /// The workspace whose `.patchwise/config.toml` is read (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Do not contact any server.
    #[arg(long)]
    pub offline: bool,
}

/// The whole report (also the `--json` output).
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    pub config_files: Vec<FileReport>,
    pub problems: Vec<ConfigProblem>,
    /// True when no provider is configured and the built-in local servers are used.
    pub builtin_providers: bool,
    pub providers: Vec<ProviderReport>,
    pub roles: Vec<RoleReport>,
    pub timeouts: BTreeMap<String, Sourced<f64>>,
    pub retry: BTreeMap<String, Sourced<u64>>,
    pub data_dir: Sourced<PathBuf>,
    pub data_dir_exists: bool,
    /// Whether the coder role is usable.
    pub coder_ready: bool,
    /// Whether the coder role is usable and the configuration has no errors (warnings, such as
    /// an unknown key, do not count). The exit code is 1 otherwise.
    pub ok: bool,
    /// What `patchwise develop` would run in the workspace (project kind, check commands).
    pub develop: Option<crate::workflow::develop::Setup>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub layer: &'static str,
    pub path: Option<PathBuf>,
    pub found: bool,
}

/// A value and where it came from.
#[derive(Debug, Clone, Serialize)]
pub struct Sourced<T> {
    pub value: T,
    /// `default`, a file path, or the client message that set it.
    pub source: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProviderReport {
    pub name: String,
    pub kind: Sourced<&'static str>,
    pub base_url: Sourced<String>,
    /// The variable the key is read from (`None`: no key is sent).
    pub api_key_env: Option<String>,
    /// `set (redacted)`, `not set` or `not needed` — never the key.
    pub api_key: &'static str,
    pub tools: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct RoleReport {
    pub role: ModelRole,
    /// The role whose setting is used (`coder` when this role is not configured).
    pub uses: ModelRole,
    pub source: String,
    /// The providers tried, in order (several only for an open choice).
    pub candidates: Vec<String>,
    pub provider: Option<String>,
    /// The model (for an open choice, the first the server lists).
    pub model: Option<String>,
    pub answers: Option<bool>,
    pub model_listed: Option<bool>,
    pub detail: String,
}

/// Runs the command.
pub fn run(args: &DoctorArgs) -> ExitCode {
    let workspace = args
        .workspace
        .clone()
        .or_else(|| std::env::current_dir().ok());
    let paths = ConfigPaths::standard(workspace.as_deref());
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("patchwise doctor: cannot start the async runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let report = runtime.block_on(build_report(&paths, workspace.as_deref(), !args.offline));
    let output = if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(text) => text + "\n",
            Err(err) => {
                eprintln!("patchwise doctor: cannot render JSON: {err}");
                return ExitCode::from(2);
            }
        }
    } else {
        render_text(&report)
    };
    if std::io::stdout()
        .lock()
        .write_all(output.as_bytes())
        .is_err()
    {
        return ExitCode::from(2);
    }
    if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Loads the configuration at `paths` and, if `online`, probes every role's server; with a
/// `workspace` that exists, says what `patchwise develop` would run in it.
pub async fn build_report(
    paths: &ConfigPaths,
    workspace: Option<&Path>,
    online: bool,
) -> DoctorReport {
    let (config, problems) = Config::load_from(paths);
    tracing::debug!(
        providers = ?config.providers.keys().collect::<Vec<_>>(),
        roles = ?config.roles,
        "doctor: resolved configuration"
    );
    for problem in &problems {
        tracing::warn!("{problem}");
    }
    let providers = config.effective_providers();
    let config_files = vec![
        FileReport {
            layer: "user",
            found: paths.user.as_ref().is_some_and(|p| p.is_file()),
            path: paths.user.clone(),
        },
        FileReport {
            layer: "workspace",
            found: paths.workspace.as_ref().is_some_and(|p| p.is_file()),
            path: paths.workspace.clone(),
        },
    ];
    let provider_reports = providers
        .iter()
        .map(|(name, p)| provider_report(&config, name, p))
        .collect();

    let probe_timeout = config.timeouts.connect.min(Duration::from_secs(5));
    let mut probes: BTreeMap<String, ProbeResult> = BTreeMap::new();
    let mut roles = Vec::new();
    for role in ModelRole::ALL {
        let (uses, candidates) = config.role_candidates(role);
        let source = config.source_of(&format!("roles.{uses}")).to_string();
        let mut report = RoleReport {
            role,
            uses,
            source,
            candidates: candidates.iter().map(|t| t.provider.clone()).collect(),
            provider: None,
            model: None,
            answers: None,
            model_listed: None,
            detail: String::new(),
        };
        let mut reasons = Vec::new();
        for target in &candidates {
            let Some(provider) = providers.get(&target.provider) else {
                continue;
            };
            report.provider = Some(target.provider.clone());
            report.model = (!target.model.is_empty()).then(|| target.model.clone());
            if !online {
                report.detail = "not checked (--offline)".to_owned();
                break;
            }
            // An embedded provider's role may name its own model file.
            let mut provider = provider.clone();
            if provider.kind == ProviderKind::Embedded && !target.model.is_empty() {
                provider.embedded.model = Some(target.model.clone());
            }
            // One probe per server; an embedded provider's role may name its own file.
            let probe_key = if provider.kind == ProviderKind::Embedded {
                format!("{}/{}", target.provider, target.model)
            } else {
                target.provider.clone()
            };
            if !probes.contains_key(&probe_key) {
                let result = probe_provider(&config, &provider, probe_timeout).await;
                tracing::debug!(provider = %target.provider, answers = result.answers, "doctor: probed");
                probes.insert(probe_key.clone(), result);
            }
            let result = &probes[&probe_key];
            report.answers = Some(result.answers && result.error.is_none());
            if let Some(error) = &result.error {
                reasons.push(format!("{} ({}): {error}", target.provider, result.url));
                continue;
            }
            if provider.kind == ProviderKind::Embedded {
                report.model = result.models.first().cloned();
                report.model_listed = Some(true);
                report.detail = if reasons.is_empty() {
                    format!(
                        "the model inside patchwise: {} (loaded by the shared model host on first use)",
                        result.url
                    )
                } else {
                    format!(
                        "the model inside patchwise: {}, because no model server answers ({})",
                        result.url,
                        reasons.join("; ")
                    )
                };
                break;
            }
            if target.model.is_empty() {
                match result.models.first() {
                    Some(first) => {
                        report.model = Some(first.clone());
                        report.model_listed = Some(true);
                        report.detail = format!(
                            "answers; no model configured, using the first listed ({} models)",
                            result.models.len()
                        );
                        break;
                    }
                    None => {
                        reasons.push(format!("{}: lists no models", target.provider));
                        continue;
                    }
                }
            }
            let listed = lists_model(&result.models, &target.model);
            report.model_listed = Some(listed);
            report.detail = if listed {
                "answers and lists the model".to_owned()
            } else if result.models.is_empty() {
                "answers, but lists no models".to_owned()
            } else {
                format!(
                    "answers, but does not list {:?}; it lists: {}",
                    target.model,
                    result.models.join(", ")
                )
            };
            break;
        }
        if report.detail.is_empty() {
            if candidates.len() > 1 {
                report.provider = None;
            }
            report.detail = if reasons.is_empty() {
                "no provider configured for this role".to_owned()
            } else {
                format!("not answering: {}", reasons.join("; "))
            };
        }
        roles.push(report);
    }
    let coder_ready = roles
        .iter()
        .find(|r| r.role == ModelRole::Coder)
        .is_some_and(|r| {
            if online {
                r.answers == Some(true) && r.model_listed != Some(false)
            } else {
                r.provider.is_some()
            }
        });
    let secs = |key: &str, d: Duration| {
        (
            key.to_owned(),
            Sourced {
                value: d.as_secs_f64(),
                source: config.source_of(&format!("timeouts.{key}")).to_string(),
            },
        )
    };
    let timeouts = BTreeMap::from([
        secs("connect", config.timeouts.connect),
        secs("first_token", config.timeouts.first_token),
        secs("total", config.timeouts.total),
    ]);
    let retry_value = |key: &str, value: u64| {
        (
            key.to_owned(),
            Sourced {
                value,
                source: config.source_of(&format!("retry.{key}")).to_string(),
            },
        )
    };
    let retry = BTreeMap::from([
        retry_value("max_attempts", u64::from(config.retry.max_attempts)),
        retry_value(
            "initial_backoff_ms",
            config.retry.initial_backoff.as_millis() as u64,
        ),
        retry_value(
            "max_backoff_ms",
            config.retry.max_backoff.as_millis() as u64,
        ),
    ]);
    let develop = workspace.filter(|w| w.is_dir()).map(|root| {
        crate::workflow::develop::setup(root, &config, &crate::tools::process::RealRunner)
    });
    let data_dir = config.data_dir();
    let problems_have_errors = problems.iter().any(|p| p.severity == Severity::Error);
    DoctorReport {
        config_files,
        problems,
        builtin_providers: config.providers.is_empty(),
        providers: provider_reports,
        roles,
        timeouts,
        retry,
        data_dir_exists: data_dir.is_dir(),
        data_dir: Sourced {
            value: data_dir,
            source: config.source_of("data_dir").to_string(),
        },
        coder_ready,
        ok: coder_ready && !problems_have_errors,
        develop,
    }
}

fn provider_report(config: &Config, name: &str, provider: &ProviderConfig) -> ProviderReport {
    let key = |field: &str| config.source_of(&format!("providers.{name}.{field}"));
    ProviderReport {
        name: name.to_owned(),
        kind: Sourced {
            value: provider.kind.name(),
            source: key("kind").to_string(),
        },
        base_url: Sourced {
            value: provider.base_url().to_owned(),
            source: key("base_url").to_string(),
        },
        api_key_env: provider.key_env().map(str::to_owned),
        api_key: match (provider.key_env(), provider.api_key()) {
            (None, _) => "not needed",
            (Some(_), Some(_)) => "set (redacted)",
            (Some(_), None) => "not set",
        },
        tools: match provider.tools {
            crate::config::ToolMode::Native => "native",
            crate::config::ToolMode::Text => "text",
        },
    }
}

/// The human-readable report.
pub fn render_text(report: &DoctorReport) -> String {
    let mut out = String::new();
    out.push_str("configuration files\n");
    for file in &report.config_files {
        let path = file
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "(no location)".to_owned());
        let state = if file.found { "" } else { " (not found)" };
        out.push_str(&format!("  {:<10} {path}{state}\n", file.layer));
    }
    if report.problems.is_empty() {
        out.push_str("  no problems\n");
    } else {
        for problem in &report.problems {
            out.push_str(&format!("  {problem}\n"));
        }
    }
    out.push_str("\nproviders");
    if report.builtin_providers {
        out.push_str(" (none configured: the built-in local servers, tried in order)");
    }
    out.push('\n');
    for p in &report.providers {
        let key = match &p.api_key_env {
            Some(var) => format!("key from ${var}: {}", p.api_key),
            None => "no key sent".to_owned(),
        };
        out.push_str(&format!(
            "  {:<10} {} {} [{}]\n             {key}; tools: {}\n",
            p.name, p.kind.value, p.base_url.value, p.base_url.source, p.tools
        ));
    }
    out.push_str("\nroles\n");
    for r in &report.roles {
        let target = match (&r.provider, &r.model) {
            (Some(p), Some(m)) => format!("{p}/{m}"),
            (Some(p), None) => format!("{p}/(first listed)"),
            _ if r.candidates.len() > 1 => {
                format!("first answering of {}", r.candidates.join(", "))
            }
            _ => "(none)".to_owned(),
        };
        let via = if r.uses != r.role {
            format!(" (falls back to {})", r.uses)
        } else {
            String::new()
        };
        let status = match r.answers {
            Some(true) if r.model_listed != Some(false) => "ok  ",
            Some(_) => "FAIL",
            None => "    ",
        };
        out.push_str(&format!(
            "  {status} {:<10} {target}{via} [{}]\n             {}\n",
            r.role.name(),
            r.source,
            r.detail
        ));
    }
    let t = |k: &str| {
        report
            .timeouts
            .get(k)
            .map(|s| format!("{}s [{}]", s.value, s.source))
            .unwrap_or_default()
    };
    out.push_str(&format!(
        "\ntimeouts   connect {}, first token {}, total {}\n",
        t("connect"),
        t("first_token"),
        t("total")
    ));
    let r = |k: &str| report.retry.get(k).map(|s| s.value).unwrap_or_default();
    let sources: std::collections::BTreeSet<&str> =
        report.retry.values().map(|s| s.source.as_str()).collect();
    out.push_str(&format!(
        "retry      {} attempts, backoff {} ms doubling up to {} ms [{}]\n",
        r("max_attempts"),
        r("initial_backoff_ms"),
        r("max_backoff_ms"),
        sources.into_iter().collect::<Vec<_>>().join(", ")
    ));
    out.push_str(&format!(
        "data dir   {} [{}]{}\n",
        report.data_dir.value.display(),
        report.data_dir.source,
        if report.data_dir_exists {
            ""
        } else {
            " (does not exist yet)"
        }
    ));
    if let Some(develop) = &report.develop {
        out.push_str(&develop.render());
    }
    out.push_str(if report.coder_ready {
        "\nthe coder role is ready\n"
    } else {
        "\nthe coder role is NOT ready: see its line above\n"
    });
    let errors = report
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .count();
    if errors > 0 {
        out.push_str(&format!(
            "the configuration has {errors} error{}: see the problems above\n",
            if errors == 1 { "" } else { "s" }
        ));
    }
    out
}
