//! A real Node client: `editors/vscode/test/client.mjs` drives the server through
//! `vscode-jsonrpc` (the library under VS Code's language client): 400 UTF-16 changes with
//! pipelined `viewFileText` checks, code actions, an unknown method, clean shutdown.
//!
//! `scripts/test` runs `npm ci` in `editors/vscode/` first. Without those packages this test
//! fails and says how to get them; `PATCHWISE_SKIP_NODE=1` skips it on purpose.

use std::path::Path;
use std::process::Command;

#[test]
fn vscode_jsonrpc_client_drives_the_server() {
    if std::env::var_os("PATCHWISE_SKIP_NODE").is_some_and(|v| v == "1") {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/vscode");
    assert!(
        dir.join("node_modules/vscode-jsonrpc").exists(),
        "editors/vscode/node_modules is missing: run scripts/test (it runs npm ci there), \
         or set PATCHWISE_SKIP_NODE=1 to skip"
    );
    let output = Command::new("node")
        .arg("test/client.mjs")
        .current_dir(&dir)
        .env("PATCHWISE_BIN", env!("CARGO_BIN_EXE_patchwise"))
        .output()
        .expect("run node (Node.js 18+ must be on PATH)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "node client failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("node client: ok"), "{stdout}");
}
