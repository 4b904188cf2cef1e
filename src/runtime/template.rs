//! The chat template: OpenAI-style messages (and tools) turned into the one prompt text the
//! model was trained on, by the Jinja template its GGUF file carries
//! (`tokenizer.chat_template`), rendered the way llama.cpp's and llama-cpp-python's servers
//! render it — so a model answers the same inside patchwise as behind those servers. A file
//! without a template gets ChatML, the format most small open models were tuned on.

use minijinja::{Environment, Error, ErrorKind, Value as Jinja};
use serde_json::{Map, Value};

/// ChatML, for models whose file has no template.
pub const CHATML: &str = "{%- for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    bos: String,
    eos: String,
}

impl ChatTemplate {
    /// Compiles `source` (the file's template, or [`CHATML`] when `None`). A template that does
    /// not compile is an error naming the line, so the host refuses to start with it rather
    /// than answering with a wrong prompt.
    pub fn new(source: Option<&str>, bos: &str, eos: &str) -> Result<ChatTemplate, String> {
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<Jinja, Error> {
                Err(Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_function("strftime_now", |format: String| -> String {
            chrono::Local::now().format(&format).to_string()
        });
        env.set_trim_blocks(false);
        env.set_lstrip_blocks(false);
        env.add_template_owned("chat", source.unwrap_or(CHATML).to_owned())
            .map_err(|err| format!("the model's chat template does not compile: {err:#}"))?;
        Ok(ChatTemplate {
            env,
            bos: bos.to_owned(),
            eos: eos.to_owned(),
        })
    }

    /// The prompt for `messages` (OpenAI's shape: `role`, `content` as a string or a list of
    /// text parts, `tool_calls` with JSON `arguments`, `tool_call_id`), with `tools` described
    /// where the template puts them, ending with the assistant's turn opened.
    pub fn render(&self, messages: &[Value], tools: Option<&Value>) -> Result<String, String> {
        let messages: Vec<Value> = messages.iter().map(normalise_message).collect();
        let tools = tools.filter(|t| t.as_array().is_some_and(|a| !a.is_empty()));
        let template = self
            .env
            .get_template("chat")
            .map_err(|err| err.to_string())?;
        template
            .render(minijinja::context! {
                messages => Jinja::from_serialize(&messages),
                tools => tools.map(Jinja::from_serialize),
                add_generation_prompt => true,
                bos_token => self.bos.clone(),
                eos_token => self.eos.clone(),
            })
            .map_err(|err| format!("the chat template failed on these messages: {err:#}"))
    }
}

/// One message as templates expect it: text content as a string, tool-call arguments as JSON
/// objects rather than the string OpenAI's wire carries (as llama.cpp's server passes them).
fn normalise_message(message: &Value) -> Value {
    let Some(object) = message.as_object() else {
        return message.clone();
    };
    let mut out = Map::new();
    for (key, value) in object {
        let value = match key.as_str() {
            "content" => match value {
                Value::Array(parts) => Value::String(
                    parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                Value::Null => Value::String(String::new()),
                other => other.clone(),
            },
            "tool_calls" => Value::Array(
                value
                    .as_array()
                    .map(|calls| calls.iter().map(normalise_call).collect())
                    .unwrap_or_default(),
            ),
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    out.entry("content")
        .or_insert_with(|| Value::String(String::new()));
    Value::Object(out)
}

fn normalise_call(call: &Value) -> Value {
    let mut call = call.clone();
    if let Some(function) = call.get_mut("function").and_then(Value::as_object_mut)
        && let Some(Value::String(arguments)) = function.get("arguments")
        && let Ok(parsed) = serde_json::from_str::<Value>(arguments)
    {
        function.insert("arguments".into(), parsed);
    }
    call
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Qwen2.5's template as its GGUF files carry it (abridged to the parts with tools).
    const QWEN: &str = r#"{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"#;

    #[test]
    fn qwen_renders_system_user_and_the_open_assistant_turn() {
        let t = ChatTemplate::new(Some(QWEN), "", "<|im_end|>").unwrap();
        let prompt = t
            .render(
                &[
                    json!({"role": "system", "content": "Be brief."}),
                    json!({"role": "user", "content": [{"type": "text", "text": "Hi"}]}),
                ],
                None,
            )
            .unwrap();
        assert_eq!(
            prompt,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn tools_and_tool_calls_are_rendered_with_json_arguments() {
        let t = ChatTemplate::new(Some(QWEN), "", "").unwrap();
        let prompt = t
            .render(
                &[
                    json!({"role": "user", "content": "read a.py"}),
                    json!({"role": "assistant", "content": null, "tool_calls": [
                        {"id": "1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.py\"}"}}
                    ]}),
                    json!({"role": "tool", "tool_call_id": "1", "content": "1: x = 1"}),
                ],
                Some(&json!([{"type": "function", "function": {"name": "read_file"}}])),
            )
            .unwrap();
        assert!(
            prompt.contains(
                "<tools>\n{\"function\":{\"name\":\"read_file\"},\"type\":\"function\"}\n</tools>"
            ) || prompt.contains("\"name\":\"read_file\""),
            "{prompt}"
        );
        assert!(
            prompt.contains("<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\":\"a.py\"}}\n</tool_call>"),
            "{prompt}"
        );
        assert!(
            prompt.contains(
                "<|im_start|>user\n<tool_response>\n1: x = 1\n</tool_response><|im_end|>"
            )
        );
    }

    #[test]
    fn without_a_template_chatml_is_used_and_a_broken_template_is_refused() {
        let t = ChatTemplate::new(None, "", "").unwrap();
        assert_eq!(
            t.render(&[json!({"role": "user", "content": "x"})], None)
                .unwrap(),
            "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n"
        );
        let err = ChatTemplate::new(Some("{% for %}"), "", "").err().unwrap();
        assert!(err.contains("does not compile"), "{err}");
        let raising = ChatTemplate::new(
            Some("{{ raise_exception('only user and assistant') }}"),
            "",
            "",
        )
        .unwrap();
        let err = raising.render(&[], None).unwrap_err();
        assert!(err.contains("only user and assistant"), "{err}");
    }
}
