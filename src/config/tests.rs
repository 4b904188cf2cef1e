use serde_json::json;

use super::*;

fn file(name: &str) -> ValueSource {
    ValueSource::File(PathBuf::from(name))
}

#[test]
fn documented_shape_parses() {
    let text = r#"
[providers.local]
kind = "openai"                 # openai | anthropic | gemini
base_url = "http://127.0.0.1:11434/v1/"
api_key_env = "OPENAI_API_KEY"

[providers.claude]
kind = "anthropic"

[roles]
coder = "local/qwen2.5-coder:7b"
escalation = "claude/claude-sonnet-4-5"

[models."qwen2.5-coder:7b"]
context_window = 32768

[timeouts]
connect = 2.5
first_token = 30

[retry]
max_attempts = 2
"#;
    let (config, problems) = Config::from_toml_str(text, file("a.toml"));
    assert!(problems.is_empty(), "{problems:?}");
    let local = &config.providers["local"];
    assert_eq!(local.kind, ProviderKind::OpenAi);
    assert_eq!(local.base_url(), "http://127.0.0.1:11434/v1");
    assert_eq!(local.key_env(), Some("OPENAI_API_KEY"));
    let claude = &config.providers["claude"];
    assert_eq!(claude.base_url(), "https://api.anthropic.com");
    assert_eq!(claude.key_env(), Some("ANTHROPIC_API_KEY"));
    assert_eq!(
        config.roles[&ModelRole::Coder],
        RoleTarget {
            provider: "local".into(),
            model: "qwen2.5-coder:7b".into()
        }
    );
    assert_eq!(
        config
            .model_settings("local", "qwen2.5-coder:7b")
            .context_window,
        Some(32768)
    );
    assert_eq!(config.timeouts.connect, Duration::from_millis(2500));
    assert_eq!(config.timeouts.total, Timeouts::default().total);
    assert_eq!(config.retry.max_attempts, 2);
    assert_eq!(config.source_of("roles.coder"), file("a.toml"));
    assert_eq!(config.source_of("timeouts.total"), ValueSource::Default);
}

#[test]
fn roles_fall_back_to_coder() {
    let (config, _) = Config::from_toml_str(
        "[providers.p]\nbase_url = \"http://h/v1\"\n[roles]\ncoder = \"p/m1\"\njudge = \"p/m2\"",
        file("a.toml"),
    );
    assert_eq!(config.role_candidates(ModelRole::Judge).1[0].model, "m2");
    let (from, targets) = config.role_candidates(ModelRole::Planner);
    assert_eq!((from, targets[0].model.as_str()), (ModelRole::Coder, "m1"));
}

#[test]
fn no_configuration_means_local_servers_in_order() {
    let config = Config::default();
    let (from, targets) = config.role_candidates(ModelRole::Escalation);
    assert_eq!(from, ModelRole::Coder);
    let names: Vec<&str> = targets.iter().map(|t| t.provider.as_str()).collect();
    // The model inside patchwise comes last, in builds that have it.
    if crate::model::embedded::AVAILABLE {
        assert_eq!(names, ["ollama", "lmstudio", "embedded"]);
        assert_eq!(
            config.effective_providers()["embedded"].kind,
            ProviderKind::Embedded
        );
    } else {
        assert_eq!(names, ["ollama", "lmstudio"]);
    }
    let providers = config.effective_providers();
    assert_eq!(providers["ollama"].base_url(), "http://127.0.0.1:11434/v1");
    assert_eq!(providers["lmstudio"].base_url(), "http://127.0.0.1:1234/v1");
    // Local servers get no key unless one is named.
    assert_eq!(providers["ollama"].key_env(), None);
}

#[test]
fn unknown_keys_and_bad_values_are_reported_not_fatal() {
    let text = r#"
data_dir = 7
colour = "blue"

[providers.local]
kind = "opnai"
base_url = "localhost:11434"
api_key_env = "sk-live-abcdef0123456789"
temprature = 0.2

[roles]
coder = "nowhere/model"
reviewer = "local/x"

[timeouts]
connect = -1

[research]
max_sources = 12
"#;
    let (config, problems) = Config::from_toml_str(text, file("/w/.patchwise/config.toml"));
    let rendered: Vec<String> = problems.iter().map(ToString::to_string).collect();
    let has = |needle: &str| rendered.iter().any(|p| p.contains(needle));
    assert!(
        has("/w/.patchwise/config.toml: data_dir: expected a string, found number 7"),
        "{rendered:#?}"
    );
    assert!(
        has(
            "colour: unknown key, ignored; allowed here: completion, data_dir, develop, edit, models, providers"
        ),
        "{rendered:#?}"
    );
    assert!(
        has(
            "providers.local.kind: expected one of openai, anthropic, gemini, embedded, found \"opnai\"; did you mean \"openai\"?"
        ),
        "{rendered:#?}"
    );
    assert!(has(
        "providers.local.base_url: expected an http:// or https:// URL"
    ));
    assert!(has("providers.local.temprature: unknown key"));
    assert!(
        has(
            "roles.reviewer: unknown key, ignored; allowed here: coder, completion, escalation, judge, planner"
        ),
        "{rendered:#?}"
    );
    assert!(has(
        "roles.coder: expected a configured provider before the '/', found \"nowhere\""
    ));
    assert!(has("timeouts.connect: expected a number of seconds"));
    // A key pasted where a variable name belongs is rejected without being echoed.
    assert!(has(
        "providers.local.api_key_env: expected the NAME of an environment variable"
    ));
    assert!(
        !rendered.iter().any(|p| p.contains("sk-live")),
        "{rendered:#?}"
    );
    // Every section is checked when the file loads, not when its workflow first runs.
    assert!(
        has("research.max_sources: unknown key, ignored"),
        "{rendered:#?}"
    );
    // Bad values leave defaults in place; the provider itself still exists.
    assert_eq!(config.providers["local"].kind, ProviderKind::OpenAi);
    assert!(config.roles.is_empty());
    assert_eq!(config.timeouts, Timeouts::default());
}

#[test]
fn keys_in_config_are_refused() {
    let (config, problems) = Config::from_toml_str(
        "[providers.x]\nbase_url = \"https://api.example.com/v1\"\napi_key = \"sk-secret-value\"",
        file("a.toml"),
    );
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0]
            .message
            .contains("keys are never read from configuration")
    );
    assert!(!format!("{problems:?}{config:?}").contains("sk-secret-value"));
}

#[test]
fn invalid_toml_is_one_problem_and_the_file_is_ignored() {
    let (config, problems) = Config::from_toml_str("[roles\ncoder = ", file("bad.toml"));
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].severity, Severity::Error);
    assert!(
        problems[0]
            .to_string()
            .starts_with("error: bad.toml: invalid TOML, the file is ignored"),
        "{}",
        problems[0]
    );
    assert_eq!(config, Config::default());
}

#[test]
fn precedence_user_then_workspace_then_client() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    let workspace = dir.path().join("ws.toml");
    std::fs::write(
        &user,
        "[providers.local]\nbase_url = \"http://127.0.0.1:1/v1\"\n[roles]\ncoder = \"local/user-model\"\nplanner = \"local/user-planner\"\n[timeouts]\nconnect = 3",
    )
    .unwrap();
    std::fs::write(
        &workspace,
        "[providers.local]\nbase_url = \"http://127.0.0.1:2/v1\"\n[roles]\ncoder = \"local/ws-model\"",
    )
    .unwrap();
    let (mut config, problems) = Config::load_from(&ConfigPaths {
        user: Some(user.clone()),
        workspace: Some(workspace.clone()),
    });
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        config.providers["local"].base_url(),
        "http://127.0.0.1:2/v1"
    );
    assert_eq!(config.roles[&ModelRole::Coder].model, "ws-model");
    assert_eq!(config.roles[&ModelRole::Planner].model, "user-planner");
    assert_eq!(
        config.source_of("roles.coder"),
        ValueSource::File(workspace.clone())
    );
    assert_eq!(
        config.source_of("roles.planner"),
        ValueSource::File(user.clone())
    );
    assert_eq!(
        config.source_of("timeouts.connect"),
        ValueSource::File(user)
    );

    let problems = config.merge_json_from(
        &json!({"patchwise": {"roles": {"coder": "local/client-model"}, "timeouts": {"total": 60}}}),
        "initializationOptions",
    );
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(config.roles[&ModelRole::Coder].model, "client-model");
    assert_eq!(config.timeouts.total, Duration::from_secs(60));
    assert_eq!(
        config.source_of("roles.coder"),
        ValueSource::Client("initializationOptions".into())
    );
    assert_eq!(
        config.providers["local"].base_url(),
        "http://127.0.0.1:2/v1"
    );

    // Bad client values are problems too, naming the message they came from.
    let problems = config.merge_json(&json!({"retry": {"max_attempts": "many"}, "roles": 3}));
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0]
            .to_string()
            .contains("client settings: retry.max_attempts: expected an integer from 1 to 20")
    );
    assert!(config.merge_json(&Value::Null).is_empty());
    // Settings for other extensions beside ours are not ours to judge.
    let problems = config.merge_json(
        &json!({"rust-analyzer": {"check": true}, "patchwise": {"retry": {"max_attempts": 2}}}),
    );
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(config.retry.max_attempts, 2);
    assert!(!config.merge_json(&json!("text")).is_empty());
}

#[test]
fn missing_files_are_fine_unreadable_ones_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (config, problems) = Config::load_from(&ConfigPaths {
        user: Some(dir.path().join("nope.toml")),
        workspace: Some(dir.path().to_path_buf()), // a directory cannot be read as a file
    });
    assert_eq!(config.providers.len(), 0);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].message.contains("cannot read the file"));
}

#[test]
fn data_dir_relative_to_its_file() {
    let (config, _) =
        Config::from_toml_str("data_dir = \"data\"", file("/w/.patchwise/config.toml"));
    assert_eq!(config.data_dir(), PathBuf::from("/w/.patchwise/data"));
}

#[test]
fn loopback_detection() {
    for url in [
        "http://127.0.0.1:8080/v1",
        "http://localhost/v1",
        "http://[::1]:1234/v1",
        "http://127.1.2.3",
    ] {
        assert!(is_loopback_url(url), "{url}");
    }
    for url in [
        "https://api.openai.com/v1",
        "http://10.0.0.1/v1",
        "http://127.0.0.1.evil.com/v1",
        "http://user@evil.com",
    ] {
        assert!(!is_loopback_url(url), "{url}");
    }
}

#[test]
fn role_target_parsing() {
    assert_eq!(
        RoleTarget::parse("or/qwen/qwen-2.5-coder-32b").unwrap(),
        RoleTarget {
            provider: "or".into(),
            model: "qwen/qwen-2.5-coder-32b".into()
        }
    );
    assert_eq!(RoleTarget::parse("local").unwrap().model, "");
    assert!(RoleTarget::parse("/model").is_err());
    assert!(RoleTarget::parse("").is_err());
}

#[test]
fn misspelled_keys_get_a_suggestion_in_every_section() {
    let text = r#"
data_dri = "x"
[providers.local]
base_ulr = "http://127.0.0.1:1/v1"
[roles]
codr = "local/m"
[models.m]
context_windw = 4096
[timeouts]
conect = 3
[retry]
max_attempt = 2
[edit]
max_attempt = 5
[research]
depht = 3
[research.sources.openalex]
mailt = "a@b.org"
[develop]
fix_round = 1
[develop.checks]
tset = "make test"
[tools]
write_continuation = 2
[tools.validate_by_extension]
yaml = "wran"
"#;
    let (config, problems) = Config::from_toml_str(text, file("c.toml"));
    let rendered: Vec<String> = problems.iter().map(ToString::to_string).collect();
    for (key, meant) in [
        ("data_dri", "data_dir"),
        ("providers.local.base_ulr", "base_url"),
        ("roles.codr", "coder"),
        ("models.m.context_windw", "context_window"),
        ("timeouts.conect", "connect"),
        ("retry.max_attempt", "max_attempts"),
        ("edit.max_attempt", "max_attempts"),
        ("research.depht", "depth"),
        ("research.sources.openalex.mailt", "mailto"),
        ("develop.fix_round", "fix_rounds"),
        ("develop.checks.tset", "test"),
        ("tools.write_continuation", "write_continuations"),
        ("tools.validate_by_extension.yaml", "warn"),
    ] {
        let wanted = format!("c.toml: {key}: ");
        let hit = rendered
            .iter()
            .find(|p| p.contains(&wanted))
            .unwrap_or_else(|| panic!("no problem for {key}: {rendered:#?}"));
        assert!(hit.contains(&format!("did you mean \"{meant}\"?")), "{hit}");
    }
    assert_eq!(problems.len(), 13, "{rendered:#?}");
    // Nothing misspelled took effect.
    assert_eq!(config.edit, EditSection::default());
    assert_eq!(config.retry, RetryPolicy::default());
}

#[test]
fn typed_sections_read_what_other_workflows_need() {
    let text = r#"
[models."qwen2.5-coder:1.5b"]
edit_format = "rewrite"
[edit]
max_attempts = 5
auto_apply = true
[develop]
approve = "auto"
risky = ["billing"]
[develop.checks]
test = "cargo test -q"
timeout_secs = 60
[tools]
validate = "warn"
[tools.validate_by_extension]
YAML = "off"
[research]
verify = true
library = "lib.sqlite3"
"#;
    let (config, problems) = Config::from_toml_str(text, file("/w/.patchwise/config.toml"));
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        config
            .model_settings("local", "qwen2.5-coder:1.5b")
            .edit_format,
        Some(EditFormat::Rewrite)
    );
    assert_eq!(config.model_settings("local", "other").edit_format, None);
    assert_eq!(config.edit.max_attempts, 5);
    assert!(config.edit.auto_apply);
    assert_eq!(config.develop.approve, Approve::Auto);
    assert_eq!(config.develop.risky, ["billing"]);
    assert_eq!(config.develop.fix_rounds, 2);
    assert_eq!(config.develop.checks.test.as_deref(), Some("cargo test -q"));
    assert_eq!(config.develop.checks.check, None);
    assert_eq!(config.tools.validate_for("json"), ValidateLevel::Warn);
    assert_eq!(config.tools.write_continuations, 3);
    assert!(config.research.verify);
    assert_eq!(
        config.research.library.as_deref(),
        Some("/w/.patchwise/lib.sqlite3")
    );
}

#[test]
fn client_values_are_checked_like_files_and_null_changes_nothing() {
    let (mut config, _) = Config::from_toml_str(
        "[edit]
max_attempts = 4",
        file("a.toml"),
    );
    let problems = config.merge_json(&json!({
        "edit": {"max_attempts": null, "escalate": "yes", "temperature": 9},
        "develop": {"approve": "sometimes"},
        "lsp": {}
    }));
    let rendered: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 4, "{rendered:#?}");
    assert!(rendered.iter().any(|p| {
        p.contains("client settings: edit.escalate: expected true or false, found string \"yes\"")
    }));
    assert!(
        rendered
            .iter()
            .any(|p| p.contains("edit.temperature: expected a number from 0 to 2, found number 9")),
        "{rendered:#?}"
    );
    assert!(
        rendered
            .iter()
            .any(|p| p.contains("develop.approve: expected one of ask, auto, found \"sometimes\"")),
        "{rendered:#?}"
    );
    assert!(
        rendered.iter().any(|p| p.contains("lsp: unknown key")),
        "{rendered:#?}"
    );
    assert_eq!(config.edit.max_attempts, 4);
    assert!(config.edit.escalate);
    assert_eq!(config.source_of("edit.max_attempts"), file("a.toml"));
}

#[test]
fn suggestions_only_for_near_misses() {
    let keys = ["max_attempts", "escalate", "parse_check"];
    assert_eq!(
        did_you_mean("max_attempt", keys.into_iter()),
        Some("max_attempts")
    );
    assert_eq!(did_you_mean("escalte", keys.into_iter()), Some("escalate"));
    assert_eq!(did_you_mean("colour", keys.into_iter()), None);
    assert_eq!(did_you_mean("escalate", keys.into_iter()), None);
}

#[test]
fn only_a_vendors_own_api_is_hosted() {
    let (config, problems) = Config::from_toml_str(
        r#"
[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1/"

[providers.lan]
kind = "openai"
base_url = "http://192.168.1.20:8080/v1"

[providers.openai]
kind = "openai"

[providers.claude]
kind = "anthropic"
base_url = "https://api.anthropic.com/"
"#,
        file("a.toml"),
    );
    assert!(problems.is_empty(), "{problems:?}");
    assert!(config.vendor_hosted("openai/gpt-5"));
    assert!(config.vendor_hosted("claude/claude-sonnet-4-5"));
    assert!(!config.vendor_hosted("local/qwen2.5-coder:7b"));
    assert!(!config.vendor_hosted("lan/qwen2.5-coder:7b"));
    assert!(!config.vendor_hosted("nowhere/x"));
    assert!(!config.vendor_hosted("gpt-5"));
}
