//! The configuration's JSON Schema (`docs/config.schema.json`) and reference page
//! (`docs/configuration.md`) are generated from the types in `src/config/file.rs`; these tests
//! fail when the checked-in copies are stale. `UPDATE_EXPECT=1 cargo test --test
//! config_reference` regenerates them.

#[path = "support/expect.rs"]
mod expect;

use patchwise::config::reference;

#[test]
fn schema_is_current() {
    expect::expect_file(reference::SCHEMA_PATH, &reference::schema_text());
}

#[test]
fn reference_page_is_current() {
    expect::expect_file(reference::REFERENCE_PATH, &reference::markdown());
}

/// Every key of the schema appears in the reference page, with its table.
#[test]
fn the_reference_names_every_key() {
    let page = reference::markdown();
    for table in [
        "[providers.NAME]",
        "[roles]",
        "[models.NAME]",
        "[timeouts]",
        "[retry]",
        "[edit]",
        "[research]",
        "[research.sources.NAME]",
        "[develop]",
        "[develop.checks]",
        "[tools]",
    ] {
        assert!(page.contains(&format!("## `{table}`")), "{table} missing");
    }
    for key in [
        "`data_dir`",
        "`edit_format`",
        "`auto_apply`",
        "`verify`",
        "`fix_rounds`",
        "`timeout_secs`",
        "`write_continuations`",
        "`validate_by_extension`",
        "`api_key_env`",
    ] {
        assert!(page.contains(&format!("| {key} |")), "{key} missing");
    }
}

/// Every default a `--help` names from the configuration (`(default: the configuration's
/// `[table] key`, VALUE)`) is the default docs/configuration.md gives that key; no help text
/// names a configuration default in another form, where a stale number could hide.
#[test]
fn help_defaults_are_the_configurations() {
    let bin = env!("CARGO_BIN_EXE_patchwise");
    let help = |args: &[&str]| {
        let out = std::process::Command::new(bin)
            .args(args)
            .arg("--help")
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?} --help failed");
        String::from_utf8(out.stdout).unwrap()
    };
    let top = help(&[]);
    let commands: Vec<String> = top
        .split("Commands:")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.iter().any(|c| c == "research"), "{top}");
    let page = std::fs::read_to_string(expect::repo_path(reference::REFERENCE_PATH)).unwrap();
    let named = regex::Regex::new(
        r"default: the configuration's\s+`\[([a-z_.]+)\]\s+([a-z_]+)`,\s+([^)\s]+)\)",
    )
    .unwrap();
    let mut checked = 0;
    for command in &commands {
        let text = help(&[command.as_str()]);
        // clap wraps long help lines; the pattern reads across the breaks.
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for caps in named.captures_iter(&flat) {
            let (table, key, value) = (&caps[1], &caps[2], &caps[3]);
            let section = page
                .split(&format!("\n## `[{table}]`\n"))
                .nth(1)
                .unwrap_or_else(|| panic!("no [{table}] in the reference"));
            let section = section.split("\n## ").next().unwrap_or_default();
            let row = section
                .lines()
                .find(|l| l.starts_with(&format!("| `{key}` |")))
                .unwrap_or_else(|| panic!("no `{key}` in [{table}] of the reference"));
            let documented = row.split(" | ").nth(2).unwrap_or_default();
            assert_eq!(
                documented,
                format!("`{value}`"),
                "`patchwise {command} --help` says [{table}] {key} defaults to {value}; \
                 {} says {documented}",
                reference::REFERENCE_PATH
            );
            checked += 1;
        }
        let loose = flat.matches("the configuration's").count();
        let tied = named.find_iter(&flat).count();
        assert_eq!(
            loose, tied,
            "`patchwise {command} --help` names a configuration default without its key and \
             value:\n{text}"
        );
    }
    assert!(
        checked >= 3,
        "only {checked} configuration defaults found in --help"
    );
}
