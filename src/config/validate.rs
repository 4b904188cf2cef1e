//! Validation of one configuration layer against the schema generated from the types in
//! [`super::file`].
//!
//! Every problem names the source, the dotted key, what was found and what is allowed — with a
//! did-you-mean for a misspelled key — and the bad value is dropped from the layer, so the value
//! of an earlier layer (or the default) stays. What survives is known to deserialize into the
//! types. A single walker over the schema serves every table, so a new key needs a field in
//! [`super::file`] and nothing here.

use serde_json::{Map, Value};

use super::reference::{main_type, resolve, trim_number};
use super::{ConfigProblem, Severity, ValueSource, describe, resolve_path};

/// Keys that would hold a secret: never read, never echoed.
const SECRET_KEYS: [&str; 5] = ["api_key", "key", "token", "secret", "password"];

/// Walks a layer's value against the schema, collecting problems.
pub(crate) struct Validator<'a> {
    /// The whole schema (for `$ref`s into `$defs`).
    pub root: &'a Value,
    pub source: &'a ValueSource,
    pub problems: &'a mut Vec<ConfigProblem>,
}

/// Any value.
static ANY: Value = Value::Bool(true);

impl<'a> Validator<'a> {
    /// The part of `value` that is valid at `path` under `schema`; `None` when nothing is.
    pub fn check(&mut self, path: &str, value: &Value, schema: &'a Value) -> Option<Value> {
        let schema = self.resolve(schema);
        let Some(obj) = schema.as_object() else {
            // `true` (anything) or `false` (nothing).
            return schema.as_bool().unwrap_or(true).then(|| value.clone());
        };
        if let Some(branches) = obj
            .get("anyOf")
            .or_else(|| obj.get("oneOf"))
            .and_then(Value::as_array)
        {
            return self.check_branches(path, value, obj, branches);
        }
        if let Some(allowed) = obj.get("enum").and_then(Value::as_array)
            && !value.is_null()
            && !allowed.contains(value)
        {
            self.enum_error(path, value, allowed);
            return None;
        }
        if let Some(constant) = obj.get("const")
            && constant != value
        {
            self.enum_error(path, value, std::slice::from_ref(constant));
            return None;
        }
        if !type_matches(obj.get("type"), value) {
            let expected = expected_words(obj);
            self.found(path, value, &expected, obj);
            return None;
        }
        match value {
            Value::Object(map) => Some(Value::Object(self.check_object(path, map, obj))),
            Value::Array(items) => {
                let item_schema = obj.get("items").unwrap_or(&ANY);
                let kept = items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, item)| self.check(&format!("{path}[{i}]"), item, item_schema))
                    .collect();
                Some(Value::Array(kept))
            }
            Value::String(text) => self.check_string(path, text, obj),
            Value::Number(n) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                let low = obj.get("minimum").and_then(Value::as_f64);
                let high = obj.get("maximum").and_then(Value::as_f64);
                let above = obj.get("exclusiveMinimum").and_then(Value::as_f64);
                let ok = low.is_none_or(|l| x >= l)
                    && high.is_none_or(|h| x <= h)
                    && above.is_none_or(|a| x > a);
                if ok {
                    Some(value.clone())
                } else {
                    self.found(path, value, &expected_words(obj), obj);
                    None
                }
            }
            _ => Some(value.clone()),
        }
    }

    fn resolve(&self, schema: &'a Value) -> &'a Value {
        resolve(self.root, schema)
    }

    fn check_branches(
        &mut self,
        path: &str,
        value: &Value,
        outer: &'a Map<String, Value>,
        branches: &'a [Value],
    ) -> Option<Value> {
        let mut first_problems = None;
        let mut constants = Vec::new();
        for branch in branches {
            let branch = self.resolve(branch);
            if branch.get("type").and_then(Value::as_str) == Some("null") && !value.is_null() {
                continue;
            }
            if let Some(c) = branch.get("const") {
                constants.push(c.clone());
            }
            if let Some(values) = branch.get("enum").and_then(Value::as_array) {
                constants.extend(values.iter().cloned());
            }
            let mut problems = Vec::new();
            let mut scratch = Validator {
                root: self.root,
                source: self.source,
                problems: &mut problems,
            };
            let kept = scratch.check(path, value, branch);
            if problems.is_empty() {
                return kept;
            }
            first_problems.get_or_insert(problems);
        }
        if !constants.is_empty() && constants.len() == branches.len() {
            self.enum_error(path, value, &constants);
        } else if let Some(problems) = first_problems {
            self.problems.extend(problems);
        } else {
            self.found(path, value, &expected_words(outer), outer);
        }
        None
    }

    fn check_object(
        &mut self,
        path: &str,
        map: &Map<String, Value>,
        schema: &'a Map<String, Value>,
    ) -> Map<String, Value> {
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        let mut kept = Map::new();
        for (key, value) in map {
            let key_path = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            // JSON settings send null for "unset": nothing to merge.
            if value.is_null() {
                continue;
            }
            let field = properties.and_then(|p| p.get(key));
            let field = match (field, additional) {
                (Some(field), _) => field,
                (None, Some(extra)) if extra.is_object() || extra == &Value::Bool(true) => {
                    if let Some(pattern) = schema
                        .get("propertyNames")
                        .and_then(|p| p.get("pattern"))
                        .and_then(Value::as_str)
                        && !regex_matches(pattern, key)
                    {
                        self.error(
                            &key_path,
                            format!(
                                "expected a name of letters, digits, '-', '_' or '.', found {key:?}"
                            ),
                        );
                        continue;
                    }
                    extra
                }
                _ => {
                    self.unknown(&key_path, key, properties);
                    continue;
                }
            };
            if let Some(valid) = self.check(&key_path, value, field) {
                kept.insert(key.clone(), valid);
            }
        }
        kept
    }

    fn check_string(
        &mut self,
        path: &str,
        text: &str,
        schema: &Map<String, Value>,
    ) -> Option<Value> {
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && (text.trim().chars().count() as u64) < min
        {
            let expected = schema.get("x-expected").and_then(Value::as_str).unwrap_or(
                if schema.get("x-path").is_some() {
                    "a path"
                } else {
                    "a non-empty string"
                },
            );
            self.error(path, format!("expected {expected}, found an empty string"));
            return None;
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
            && !regex_matches(pattern, text.trim())
        {
            self.found(path, &Value::String(text.to_owned()), "", schema);
            return None;
        }
        let text = text.trim();
        if schema.get("x-path").is_some() {
            let resolved = resolve_path(text, self.source);
            return Some(Value::String(resolved.to_string_lossy().into_owned()));
        }
        Some(Value::String(text.to_owned()))
    }

    /// "expected …, found …" (the value withheld where it could be a secret).
    fn found(&mut self, path: &str, value: &Value, default: &str, schema: &Map<String, Value>) {
        let expected = schema
            .get("x-expected")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| default.to_owned());
        let message = if schema.get("x-redact").is_some() && value.is_string() {
            format!("expected {expected}; the value is not shown")
        } else if value.is_string() && schema.get("x-expected").is_some() {
            format!("expected {expected}, found {}", quoted(value))
        } else {
            format!("expected {expected}, found {}", describe(value))
        };
        self.error(path, message);
    }

    fn enum_error(&mut self, path: &str, value: &Value, allowed: &[Value]) {
        let names: Vec<String> = allowed
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect();
        let message = format!(
            "expected one of {}, found {}",
            names.join(", "),
            quoted(value)
        );
        let message = match value.as_str() {
            Some(text) => suggesting(message, text, names.iter().map(String::as_str)),
            None => message,
        };
        self.error(path, message);
    }

    fn unknown(&mut self, path: &str, key: &str, properties: Option<&Map<String, Value>>) {
        if SECRET_KEYS.contains(&key) {
            self.error(
                path,
                "keys are never read from configuration; put the key in an environment variable and name it with api_key_env (the value is not shown)".to_owned(),
            );
            return;
        }
        // Sorted: a JSON map keeps the schema's declaration order when any crate in the build
        // turns on serde_json's `preserve_order`; the reader scans an alphabetical list faster.
        let mut allowed: Vec<&str> = properties
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        allowed.sort_unstable();
        let message = match did_you_mean(key, allowed.iter().copied()) {
            Some(best) => format!(
                "unknown key, ignored; did you mean {best:?}? allowed here: {}",
                allowed.join(", ")
            ),
            None if allowed.is_empty() => "unknown key, ignored; nothing is read here".to_owned(),
            None => format!("unknown key, ignored; allowed here: {}", allowed.join(", ")),
        };
        self.problems.push(ConfigProblem {
            severity: Severity::Warning,
            source: self.source.clone(),
            key: path.to_owned(),
            message,
        });
    }

    fn error(&mut self, path: &str, message: String) {
        self.problems.push(ConfigProblem {
            severity: Severity::Error,
            source: self.source.clone(),
            key: path.to_owned(),
            message,
        });
    }
}

/// The closest of `candidates` to a misspelled `word`, when it is close enough to be meant.
pub fn did_you_mean<'c>(word: &str, candidates: impl Iterator<Item = &'c str>) -> Option<&'c str> {
    let word = word.to_ascii_lowercase().replace('-', "_");
    candidates
        .map(|c| {
            (
                strsim::damerau_levenshtein(&word, &c.to_ascii_lowercase()),
                c,
            )
        })
        .filter(|(distance, c)| {
            let longest = word.chars().count().max(c.chars().count());
            *distance > 0 && *distance <= (longest / 3).max(1)
                || (*distance > 0
                    && (c.starts_with(&word) || word.starts_with(c))
                    && word.len() >= 3)
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

/// `message`, ending in "; did you mean …?" when `word` looks like a misspelling of a candidate.
pub(super) fn suggesting<'c>(
    message: String,
    word: &str,
    candidates: impl Iterator<Item = &'c str>,
) -> String {
    match did_you_mean(word, candidates) {
        Some(best) => format!("{message}; did you mean {best:?}?"),
        None => message,
    }
}

fn quoted(value: &Value) -> String {
    match value {
        Value::String(s) if s.chars().count() > 60 => "a long string".to_owned(),
        Value::String(s) => format!("{s:?}"),
        other => describe(other),
    }
}

fn regex_matches(pattern: &str, text: &str) -> bool {
    regex::Regex::new(pattern).is_ok_and(|re| re.is_match(text))
}

fn type_matches(types: Option<&Value>, value: &Value) -> bool {
    let one = |t: &str| match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        _ => true,
    };
    match types {
        None => true,
        Some(Value::String(t)) => one(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).any(one),
        Some(_) => true,
    }
}

/// What a schema allows, in the words a problem uses.
fn expected_words(schema: &Map<String, Value>) -> String {
    let min = schema.get("minimum").and_then(Value::as_f64);
    let max = schema.get("maximum").and_then(Value::as_f64);
    let range = match (min, max) {
        (Some(l), Some(h)) => format!(" from {} to {}", trim_number(l), trim_number(h)),
        (Some(l), None) if l > 0.0 => format!(" of at least {}", trim_number(l)),
        (None, Some(h)) => format!(" of at most {}", trim_number(h)),
        _ => String::new(),
    };
    match main_type(schema) {
        "integer" => format!("an integer{range}"),
        "number" => format!("a number{range}"),
        "string" => "a string".to_owned(),
        "boolean" => "true or false".to_owned(),
        "object" => "a table".to_owned(),
        "array" => "an array".to_owned(),
        _ => "a valid value".to_owned(),
    }
}
