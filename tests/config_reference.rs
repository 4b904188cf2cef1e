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
