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

/// A server on 127.0.0.1 that answers `GET /v1/models` only after `delay`, as a llama.cpp busy
/// generating does. Returns its base URL.
fn busy_server(delay: std::time::Duration) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let body = r#"{"object":"list","data":[{"id":"qwen2.5-coder-1.5b","object":"model"}]}"#;
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                std::thread::sleep(delay);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    url
}

/// `--server URL` names the server to use: a busy one that answers late is waited for (and the
/// wait is said), and one that does not answer at all is written into the file all the same,
/// with the probe's outcome as a comment and on stderr, and `doctor` as the next step.
#[tokio::test(flavor = "multi_thread")]
async fn a_named_server_is_written_whatever_the_probe_says() {
    let url = busy_server(std::time::Duration::from_secs(5));
    let dir = tempfile::tempdir().unwrap();
    let output = init(dir.path(), &["--server".to_owned(), url.clone()]).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains("waiting for") && stderr.contains(&url),
        "{stderr}"
    );
    let file = dir.path().join(".patchwise/config.toml");
    let (config, problems) = Config::load_from(&patchwise::config::ConfigPaths {
        user: None,
        workspace: Some(file.clone()),
    });
    assert!(problems.is_empty(), "{problems:?}");
    let coder = &config.roles[&ModelRole::Coder];
    assert_eq!(
        (coder.provider.as_str(), coder.model.as_str()),
        ("local", "qwen2.5-coder-1.5b"),
        "{stdout}{stderr}"
    );

    // Nothing listens there: the server is written anyway, and the user is told what to do.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", listener.local_addr().unwrap())
    };
    let output = init(
        dir.path(),
        &["--force".to_owned(), "--server".to_owned(), closed.clone()],
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(&closed)
            && stderr.contains("did not answer")
            && stderr.contains("patchwise doctor"),
        "{stderr}"
    );
    assert!(stdout.contains("patchwise doctor"), "{stdout}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("did not answer when this file was written"),
        "{text}"
    );
    let (config, problems) = Config::from_toml_str(&text, patchwise::config::ValueSource::Default);
    assert!(problems.is_empty(), "{problems:?}\n{text}");
    assert_eq!(config.providers["local"].base_url(), closed);
    assert_eq!(config.roles[&ModelRole::Coder].provider, "local", "{text}");
}
