//! The configuration's JSON Schema and its Markdown reference, both generated from the types in
//! [`super::file`].
//!
//! The schema is checked in at `docs/config.schema.json` (the VS Code extension's settings are
//! generated from it) and the reference at `docs/configuration.md`; `tests/config_reference.rs`
//! fails when either is stale (`UPDATE_EXPECT=1 cargo test --test config_reference` rewrites
//! them).

use std::fmt::Write as _;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::file::ConfigFile;

/// Where the schema is checked in, relative to the repository root.
pub const SCHEMA_PATH: &str = "docs/config.schema.json";
/// Where the reference is checked in, relative to the repository root.
pub const REFERENCE_PATH: &str = "docs/configuration.md";

/// The JSON Schema of the whole configuration (draft 2020-12).
pub fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let schema = schemars::schema_for!(ConfigFile);
        sorted_keys(serde_json::to_value(schema).unwrap_or(Value::Bool(true)))
    })
}

/// The value with every object's keys in alphabetical order, so the checked-in schema and the
/// reference built from it do not depend on whether a crate in the build turned on serde_json's
/// `preserve_order` (then maps keep schemars' declaration order).
fn sorted_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted_keys).collect()),
        other => other,
    }
}

/// The schema as it is checked in: pretty JSON with a final newline.
pub fn schema_text() -> String {
    let mut text = serde_json::to_string_pretty(schema()).unwrap_or_default();
    text.push('\n');
    text
}

const INTRO: &str = "\
<!-- Generated from src/config/file.rs by `UPDATE_EXPECT=1 cargo test --test config_reference`; do not edit. -->

# Configuration

patchwise reads TOML: `.patchwise/config.toml` in the workspace over `patchwise/config.toml` in
the user configuration directory (`$XDG_CONFIG_HOME`, `~/.config` on Linux), then the editor's
settings over both — `initializationOptions` at start, `workspace/didChangeConfiguration` later —
in the same shape as JSON (under a `patchwise` key, or as the whole object). Later layers win, key
by key.

Every layer is checked when it loads. A problem names the file or the editor message, the key,
what was found and what is allowed, and suggests the key you probably meant; the bad value is
ignored (the earlier layer's value or the default stays) and the server keeps working. The editor
shows the problems once (`window/showMessage`); `patchwise doctor` prints them and exits 1 when
one is an error. Tables nothing reads are refused as unknown.

API keys are never read from the configuration: a provider names the environment variable that
holds its key (`api_key_env`).

`patchwise init` writes a commented starter file. The JSON Schema of this whole page is
[`config.schema.json`](config.schema.json) (generated from the same types; editors can validate
against it).
";

/// The reference page, generated from the schema.
pub fn markdown() -> String {
    let root = schema();
    let mut out = String::from(INTRO);
    let Some(top) = root.as_object() else {
        return out;
    };
    let mut tables: Vec<(String, &Map<String, Value>, Option<&str>)> = Vec::new();
    let mut top_keys = Vec::new();
    for (name, field) in properties(top) {
        let field_schema = resolve(root, field);
        let about = field.get("description").and_then(Value::as_str);
        if let Some(table) = struct_schema(root, field_schema) {
            tables.push((name.clone(), table, about));
        } else if let Some(entry) = map_entry(root, field_schema) {
            tables.push((format!("{name}.NAME"), entry, about));
        } else {
            top_keys.push((name.clone(), field));
        }
    }
    if !top_keys.is_empty() {
        out.push_str("\n## Top level\n\n");
        key_table(&mut out, root, &top_keys);
    }
    while !tables.is_empty() {
        let (name, table, about) = tables.remove(0);
        let _ = write!(out, "\n## `[{name}]`\n\n");
        if let Some(text) = about.or_else(|| table.get("description").and_then(Value::as_str)) {
            out.push_str(text);
            out.push_str("\n\n");
        }
        let mut keys = Vec::new();
        let mut nested = Vec::new();
        for (key, field) in properties(table) {
            let field_schema = resolve(root, field);
            let about = field.get("description").and_then(Value::as_str);
            if let Some(inner) = struct_schema(root, field_schema) {
                nested.push((format!("{name}.{key}"), inner, about));
            } else if let Some(entry) = map_entry(root, field_schema) {
                nested.push((format!("{name}.{key}.NAME"), entry, about));
            } else {
                keys.push((key.clone(), field));
            }
        }
        key_table(&mut out, root, &keys);
        for (i, item) in nested.into_iter().enumerate() {
            tables.insert(i, item);
        }
    }
    out
}

fn key_table(out: &mut String, root: &Value, keys: &[(String, &Value)]) {
    if keys.is_empty() {
        return;
    }
    out.push_str("| key | allowed | default | what it does |\n|---|---|---|---|\n");
    for (key, field) in keys {
        let resolved = resolve(root, field);
        let description = field
            .get("description")
            .or_else(|| resolved.get("description"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .replace('\n', " ");
        let default = field
            .get("default")
            .filter(|d| !d.is_null())
            .map(|d| format!("`{}`", toml_value(d)))
            .unwrap_or_else(|| "unset".to_owned());
        let _ = writeln!(
            out,
            "| `{key}` | {} | {default} | {} |",
            allowed(root, field),
            description.replace('|', "\\|")
        );
    }
}

/// What a key accepts, in words.
fn allowed(root: &Value, field: &Value) -> String {
    let schema = resolve(root, field);
    let Some(obj) = schema.as_object() else {
        return "anything".to_owned();
    };
    if let Some(expected) = obj.get("x-expected").and_then(Value::as_str) {
        return expected.replace('|', "\\|");
    }
    let mut values = Vec::new();
    collect_constants(root, schema, &mut values);
    if !values.is_empty() {
        return values
            .iter()
            .map(|v| format!("`{}`", toml_value(v)))
            .collect::<Vec<_>>()
            .join(", ");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = obj.get(key).and_then(Value::as_array) {
            let words: Vec<String> = branches
                .iter()
                .filter(|b| resolve(root, b).get("type").and_then(Value::as_str) != Some("null"))
                .map(|b| allowed(root, b))
                .collect();
            return words.join(" or ");
        }
    }
    let kind = main_type(obj);
    let bound = |k: &str| obj.get(k).and_then(Value::as_f64);
    let range = match (
        bound("minimum").or(bound("exclusiveMinimum")),
        bound("maximum"),
    ) {
        (Some(l), Some(h)) => format!(" {}–{}", trim_number(l), trim_number(h)),
        (Some(l), None) if l > 0.0 => format!(" ≥ {}", trim_number(l)),
        (None, Some(h)) => format!(" ≤ {}", trim_number(h)),
        _ => String::new(),
    };
    match kind {
        "integer" => format!("integer{range}"),
        "number" => format!("number{range}"),
        "string" if obj.get("x-path").is_some() => "path".to_owned(),
        "string" => "string".to_owned(),
        "boolean" => "`true`, `false`".to_owned(),
        "array" => {
            let item = obj
                .get("items")
                .map(|i| allowed(root, i))
                .unwrap_or_else(|| "anything".to_owned());
            format!("array of {item}")
        }
        "object" => {
            let value = obj
                .get("additionalProperties")
                .filter(|v| v.is_object())
                .map(|v| allowed(root, v))
                .unwrap_or_else(|| "anything".to_owned());
            format!("table of NAME = {value}")
        }
        _ => "anything".to_owned(),
    }
}

fn collect_constants(root: &Value, schema: &Value, out: &mut Vec<Value>) {
    let schema = resolve(root, schema);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        out.extend(values.iter().filter(|v| !v.is_null()).cloned());
        return;
    }
    if let Some(c) = schema.get("const") {
        out.push(c.clone());
        return;
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            let before = out.len();
            for branch in branches {
                let b = resolve(root, branch);
                if b.get("type").and_then(Value::as_str) == Some("null") {
                    continue;
                }
                let len = out.len();
                collect_constants(root, b, out);
                if out.len() == len {
                    // A branch that is not a constant: not an enumeration after all.
                    out.truncate(before);
                    return;
                }
            }
        }
    }
}

/// The type a schema names besides `null` (`""` when it names none).
pub(super) fn main_type(schema: &Map<String, Value>) -> &str {
    match schema.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or(""),
        _ => "",
    }
}

/// A bound as a problem or the reference writes it: `10`, not `10.0`.
pub(super) fn trim_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

/// The default of the configuration key at `path` (`"research.time_budget_secs"`) as the
/// reference page writes it; `None` when the key is unknown or unset by default. A help text
/// that names a configuration default takes it from here ([`help_with_default`]), so it says
/// what the configuration does.
pub fn default_of(path: &str) -> Option<String> {
    let root = schema();
    let mut field = root;
    for part in path.split('.') {
        field = struct_schema(root, field)?.get("properties")?.get(part)?;
    }
    field
        .get("default")
        .filter(|d| !d.is_null())
        .map(toml_value)
}

/// `what`, then the configuration key its default comes from and that default:
/// `"Time budget … (default: the configuration's `[research] time_budget_secs`, 300)"`.
pub fn help_with_default(what: &str, path: &str) -> String {
    let (table, key) = path.rsplit_once('.').unwrap_or(("", path));
    let value = default_of(path).unwrap_or_else(|| "unset".to_owned());
    format!("{what} (default: the configuration's `[{table}] {key}`, {value})")
}

/// A value as it is written in TOML.
fn toml_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) if map.is_empty() => "{}".to_owned(),
        other => other.to_string(),
    }
}

/// The schema's properties by name: the page's order does not depend on how serde_json keeps a
/// map (sorted, or in insertion order when a crate in the build turns on `preserve_order`).
fn properties(schema: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut all: Vec<(&String, &Value)> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    all.sort_by(|a, b| a.0.cmp(b.0));
    all
}

/// `schema` with its `$ref`s into `root`'s `$defs` followed.
pub(super) fn resolve<'v>(root: &'v Value, schema: &'v Value) -> &'v Value {
    let mut current = schema;
    for _ in 0..16 {
        let Some(name) = current
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
        else {
            break;
        };
        match root.get("$defs").and_then(|d| d.get(name)) {
            Some(found) => current = found,
            None => break,
        }
    }
    current
}

/// The schema of a struct (a table with named keys), if `schema` is one.
fn struct_schema<'v>(root: &'v Value, schema: &'v Value) -> Option<&'v Map<String, Value>> {
    let schema = resolve(root, schema).as_object()?;
    schema.get("properties")?;
    Some(schema)
}

/// The schema of a map's entries when they are structs (`[providers.NAME]`).
fn map_entry<'v>(root: &'v Value, schema: &'v Value) -> Option<&'v Map<String, Value>> {
    let extra = resolve(root, schema).get("additionalProperties")?;
    struct_schema(root, extra)
}

/// A model server `patchwise init` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// The provider name written (`ollama`, `lmstudio`, `llamacpp`).
    pub name: String,
    /// What it is, for the comment (`Ollama`).
    pub label: String,
    pub base_url: String,
    /// The first model it lists (`None`: it listed none, or did not answer).
    pub model: Option<String>,
    /// Why the server did not answer when the file was written (`None`: it answered). A
    /// server the user named is written even so.
    pub unanswered: Option<String>,
    /// The model inside patchwise instead of a server: the model to write (a catalogue name
    /// or a GGUF path), when no server answered and a model is downloaded.
    pub embedded: Option<String>,
}

/// The commented starter `.patchwise/config.toml`: the detected server as the coder (or
/// commented examples when none answered), then every workflow table with its defaults,
/// commented out. It loads without a problem.
pub fn starter_toml(detected: Option<&Detected>) -> String {
    let mut out = String::from(
        "# patchwise configuration for this workspace.\n\
         # Every key, its default and what it allows: docs/configuration.md in the patchwise\n\
         # repository (or the JSON Schema docs/config.schema.json). Check this file with\n\
         # `patchwise doctor`; keys are never written here, only the NAME of the variable that\n\
         # holds one (api_key_env).\n\n",
    );
    match detected {
        Some(Detected {
            embedded: Some(model),
            ..
        }) => {
            let _ = write!(
                out,
                "# No model server answered when this file was written; the model inside\n\
                 # patchwise serves every role (loaded once per machine by the shared model host).\n\
                 [providers.embedded]\n\
                 kind = \"embedded\"\n\
                 model = \"{model}\"     # a catalogue name (`patchwise model list`) or a GGUF path\n\
                 # threads = 4\n\
                 # context = 8192\n\n\
                 [roles]\n\
                 coder = \"embedded\"\n",
                model = toml_escape(model),
            );
        }
        Some(found) => {
            let (label, url, name) = (&found.label, &found.base_url, &found.name);
            match &found.unanswered {
                None => {
                    let _ = writeln!(
                        out,
                        "# {label} answered at {url} when this file was written."
                    );
                }
                Some(why) => {
                    let _ = write!(
                        out,
                        "# {label} at {url} did not answer when this file was written\n\
                         # ({why}); it is configured as given. `patchwise doctor` checks it again.\n",
                        why = why.replace('\n', " "),
                    );
                }
            }
            let (coder, example) = match &found.model {
                Some(model) => {
                    let model = toml_escape(model);
                    (
                        format!(
                            "\"{name}/{model}\"          # \"{name}\" alone: the first model the server lists"
                        ),
                        format!("{name}/{model}"),
                    )
                }
                None => (
                    format!(
                        "\"{name}\"          # the first model the server lists; \"{name}/MODEL\" names one"
                    ),
                    format!("{name}/MODEL"),
                ),
            };
            let _ = write!(
                out,
                "[providers.{name}]\n\
                 kind = \"openai\"\n\
                 base_url = \"{url}\"\n\n\
                 [roles]\n\
                 coder = {coder}\n\
                 # planner = \"{example}\"\n\
                 # judge = \"{example}\"\n\
                 # escalation = \"hosted/a-stronger-model\"\n",
            );
        }
        None => out.push_str(
            "# No local model server answered (Ollama on :11434, LM Studio on :1234, llama.cpp on\n\
             # :8080, vLLM on :8000) and no model is downloaded. Without any provider, Ollama,\n\
             # LM Studio, then the model inside patchwise are tried: `patchwise model pull`\n\
             # downloads one (Qwen2.5-Coder 1.5B, ~1.1 GB) and nothing else is needed.\n\
             # `patchwise init --server URL` writes the server you name. Examples:\n\
             # [providers.embedded]\n\
             # kind = \"embedded\"\n\
             # model = \"qwen2.5-coder-1.5b\"        # or the path to any GGUF file\n\
             #\n\
             # [providers.local]\n\
             # kind = \"openai\"                       # openai | anthropic | gemini\n\
             # base_url = \"http://127.0.0.1:11434/v1\"\n\
             #\n\
             # [providers.claude]\n\
             # kind = \"anthropic\"\n\
             # api_key_env = \"ANTHROPIC_API_KEY\"\n\
             #\n\
             # [roles]\n\
             # coder = \"local/qwen2.5-coder:7b\"\n",
        ),
    }
    let root = schema();
    for section in ["edit", "research", "develop", "tools"] {
        let Some(field) = root.get("properties").and_then(|p| p.get(section)) else {
            continue;
        };
        let Some(table) = struct_schema(root, field) else {
            continue;
        };
        commented_table(&mut out, root, section, table);
    }
    out
}

fn commented_table(out: &mut String, root: &Value, name: &str, table: &Map<String, Value>) {
    let _ = write!(out, "\n# [{name}]\n");
    let mut nested = Vec::new();
    for (key, field) in properties(table) {
        let field_schema = resolve(root, field);
        if let Some(inner) = struct_schema(root, field_schema) {
            nested.push((format!("{name}.{key}"), inner));
            continue;
        }
        if map_entry(root, field_schema).is_some() {
            continue;
        }
        let about = field
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .replace('\n', " ");
        let first = about.split(". ").next().unwrap_or("").trim_end_matches('.');
        match field.get("default").filter(|d| !d.is_null()) {
            Some(default) if !matches!(default, Value::Object(_)) => {
                let _ = writeln!(out, "# {key} = {}    # {first}", toml_value(default));
            }
            _ => {
                let _ = writeln!(out, "# {key} =    # {first} (unset by default)");
            }
        }
    }
    for (name, inner) in nested {
        commented_table(out, root, &name, inner);
    }
}

fn toml_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}
