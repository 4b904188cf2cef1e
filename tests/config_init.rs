//! `patchwise init` through the real binary: against a local server speaking the OpenAI wire
//! format it writes a starter file naming that server and its first listed model, which then
//! loads without a problem; it never overwrites a file without `--force`.

use std::process::Output;

use patchwise::config::{Config, ModelRole};
use patchwise::model::replay::{ReplayServer, Reply};

fn models_reply() -> Reply {
    Reply::from_file(format!(
        "{}/fixtures/model/openai/models.http",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

async fn init(workspace: &std::path::Path, args: &[String]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_patchwise"));
    command
        .arg("init")
        .arg("--workspace")
        .arg(workspace)
        .args(args)
        .env_remove("RUST_LOG");
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_a_starter_file_with_the_server_found_and_its_first_model() {
    let server = ReplayServer::start(vec![models_reply()]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A closed port first: the first server that answers wins.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", listener.local_addr().unwrap())
    };
    let url = format!("{}/v1", server.url());
    let args = [
        "--server".to_owned(),
        closed,
        "--server".to_owned(),
        url.clone(),
    ];
    let output = init(dir.path(), &args).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("coder = local2/qwen2.5-coder:7b"),
        "{stdout}"
    );

    let file = dir.path().join(".patchwise/config.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("# [edit]\n") && text.contains("\n# max_attempts = 3 "),
        "{text}"
    );
    assert!(text.contains("# [develop.checks]"), "{text}");
    let (config, problems) = Config::load_from(&patchwise::config::ConfigPaths {
        user: None,
        workspace: Some(file.clone()),
    });
    assert!(problems.is_empty(), "{problems:?}\n{text}");
    let coder = &config.roles[&ModelRole::Coder];
    assert_eq!(
        (coder.provider.as_str(), coder.model.as_str()),
        ("local2", "qwen2.5-coder:7b")
    );
    assert_eq!(config.providers["local2"].base_url(), url);
    // Uncommenting every default still loads without a problem.
    let uncommented: String = text
        .lines()
        .map(|l| match l.strip_prefix("# ") {
            Some(rest)
                if rest.starts_with('[') || (rest.contains(" = ") && !rest.contains(" =    #")) =>
            {
                format!("{rest}\n")
            }
            _ => format!("{l}\n"),
        })
        .filter(|l| {
            !l.starts_with("[providers.claude]")
                && !l.starts_with("escalation")
                && !l.starts_with("planner")
                && !l.starts_with("judge")
        })
        .collect();
    let (_, problems) =
        Config::from_toml_str(&uncommented, patchwise::config::ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}\n{uncommented}");

    // An existing file is left alone without --force.
    let output = init(dir.path(), &["--offline".to_owned()]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);

    // --force with no server answering writes commented examples that load cleanly.
    let output = init(dir.path(), &["--force".to_owned(), "--offline".to_owned()]).await;
    assert!(output.status.success());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("No local model server answered"), "{text}");
    let (config, problems) = Config::from_toml_str(&text, patchwise::config::ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}");
    assert!(config.providers.is_empty());
}
