//! The fill-in-the-middle formats of the model families, as one table, and the prompt each
//! lays out from the text before and after the cursor and other files.
//!
//! The layout keeps what a provider cached a prefix while the user types: other files come
//! first (they do not change while the current file is typed into), then the text before the
//! cursor, and only then the text after it, which is small (its tokens are read again on every
//! keystroke). Formats that put the suffix first (Codestral, CodeLlama's SPM variant) are sent
//! in their documented order all the same.

use crate::config::FimFamilyChoice;

/// A model family's fill-in-the-middle format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FimFormat {
    pub family: FimFamily,
    /// The text that starts the prompt, before any file.
    pub prefix: &'static str,
    pub suffix: &'static str,
    pub middle: &'static str,
    /// Starts another file (`{sep}{path}\n{text}`), for families trained with repositories.
    pub file_sep: Option<&'static str>,
    /// Strings that end a suggestion (the model's end of text and its other special tokens).
    pub stops: &'static [&'static str],
    /// The suffix goes before the prefix.
    pub suffix_first: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FimFamily {
    Qwen,
    StarCoder,
    DeepSeek,
    CodeLlama,
    Codestral,
}

/// One row per family; the tokens as each model's tokenizer spells them.
pub const FORMATS: [FimFormat; 5] = [
    FimFormat {
        family: FimFamily::Qwen,
        prefix: "<|fim_prefix|>",
        suffix: "<|fim_suffix|>",
        middle: "<|fim_middle|>",
        file_sep: Some("<|file_sep|>"),
        stops: &[
            "<|endoftext|>",
            "<|fim_prefix|>",
            "<|fim_suffix|>",
            "<|fim_middle|>",
            "<|fim_pad|>",
            "<|file_sep|>",
            "<|repo_name|>",
            "<|im_start|>",
            "<|im_end|>",
        ],
        suffix_first: false,
    },
    FimFormat {
        family: FimFamily::StarCoder,
        prefix: "<fim_prefix>",
        suffix: "<fim_suffix>",
        middle: "<fim_middle>",
        file_sep: Some("<file_sep>"),
        stops: &[
            "<|endoftext|>",
            "<fim_prefix>",
            "<fim_suffix>",
            "<fim_middle>",
            "<file_sep>",
            "<repo_name>",
        ],
        suffix_first: false,
    },
    FimFormat {
        family: FimFamily::DeepSeek,
        prefix: "<｜fim▁begin｜>",
        suffix: "<｜fim▁hole｜>",
        middle: "<｜fim▁end｜>",
        file_sep: None,
        stops: &[
            "<｜end▁of▁sentence｜>",
            "<｜fim▁begin｜>",
            "<｜fim▁hole｜>",
            "<｜fim▁end｜>",
            "<|EOT|>",
        ],
        suffix_first: false,
    },
    FimFormat {
        family: FimFamily::CodeLlama,
        prefix: "<PRE> ",
        suffix: " <SUF>",
        middle: " <MID>",
        file_sep: None,
        stops: &["<EOT>", "</s>", "<PRE>", "<SUF>", "<MID>"],
        suffix_first: false,
    },
    FimFormat {
        family: FimFamily::Codestral,
        prefix: "[PREFIX]",
        suffix: "[SUFFIX]",
        middle: "",
        file_sep: None,
        stops: &["</s>", "[PREFIX]", "[SUFFIX]"],
        suffix_first: true,
    },
];

impl FimFamily {
    pub fn format(self) -> &'static FimFormat {
        FORMATS
            .iter()
            .find(|f| f.family == self)
            .unwrap_or(&FORMATS[0])
    }

    /// The family a setting names, or the one a model's name says (Qwen's when it says none:
    /// the model patchwise ships and suggests).
    pub fn choose(choice: FimFamilyChoice, model: &str) -> FimFamily {
        match choice {
            FimFamilyChoice::Qwen => FimFamily::Qwen,
            FimFamilyChoice::Starcoder => FimFamily::StarCoder,
            FimFamilyChoice::Deepseek => FimFamily::DeepSeek,
            FimFamilyChoice::Codellama => FimFamily::CodeLlama,
            FimFamilyChoice::Codestral => FimFamily::Codestral,
            FimFamilyChoice::Auto => {
                let name = model.to_ascii_lowercase();
                if name.contains("starcoder") {
                    FimFamily::StarCoder
                } else if name.contains("deepseek") {
                    FimFamily::DeepSeek
                } else if name.contains("codellama") || name.contains("code-llama") {
                    FimFamily::CodeLlama
                } else if name.contains("codestral") {
                    FimFamily::Codestral
                } else {
                    FimFamily::Qwen
                }
            }
        }
    }
}

/// Another file shown to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraFile {
    pub path: String,
    pub text: String,
}

/// What a fill-in-the-middle request is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FimInput {
    /// The current file's path relative to the workspace (or its name).
    pub path: String,
    pub prefix: String,
    pub suffix: String,
    /// Other files, in an order that does not change while the user types.
    pub extra: Vec<ExtraFile>,
}

/// The prompt for `input` in `format`, as a `/completions` request sends it (raw tokens).
pub fn layout(format: &FimFormat, input: &FimInput) -> String {
    let mut out = String::new();
    if let Some(sep) = format.file_sep
        && !input.extra.is_empty()
    {
        for file in &input.extra {
            out.push_str(sep);
            out.push_str(&file.path);
            out.push('\n');
            out.push_str(&file.text);
            if !file.text.ends_with('\n') {
                out.push('\n');
            }
        }
        out.push_str(sep);
        out.push_str(&input.path);
        out.push('\n');
    }
    if format.suffix_first {
        out.push_str(format.suffix);
        out.push_str(&input.suffix);
        out.push_str(format.prefix);
        out.push_str(&input.prefix);
    } else {
        out.push_str(format.prefix);
        out.push_str(&input.prefix);
        out.push_str(format.suffix);
        out.push_str(&input.suffix);
    }
    out.push_str(format.middle);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(extra: bool) -> FimInput {
        FimInput {
            path: "src/app.py".into(),
            prefix: "def add(a, b):\n    ".into(),
            suffix: "\n\nprint(add(1, 2))\n".into(),
            extra: if extra {
                vec![ExtraFile {
                    path: "src/util.py".into(),
                    text: "def sub(a, b):\n    return a - b".into(),
                }]
            } else {
                Vec::new()
            },
        }
    }

    #[test]
    fn every_family_lays_its_prompt_out_as_its_model_was_trained() {
        let cases = [
            (
                FimFamily::Qwen,
                "<|file_sep|>src/util.py\ndef sub(a, b):\n    return a - b\n<|file_sep|>src/app.py\n<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n\nprint(add(1, 2))\n<|fim_middle|>",
            ),
            (
                FimFamily::StarCoder,
                "<file_sep>src/util.py\ndef sub(a, b):\n    return a - b\n<file_sep>src/app.py\n<fim_prefix>def add(a, b):\n    <fim_suffix>\n\nprint(add(1, 2))\n<fim_middle>",
            ),
            (
                FimFamily::DeepSeek,
                "<｜fim▁begin｜>def add(a, b):\n    <｜fim▁hole｜>\n\nprint(add(1, 2))\n<｜fim▁end｜>",
            ),
            (
                FimFamily::CodeLlama,
                "<PRE> def add(a, b):\n     <SUF>\n\nprint(add(1, 2))\n <MID>",
            ),
            (
                FimFamily::Codestral,
                "[SUFFIX]\n\nprint(add(1, 2))\n[PREFIX]def add(a, b):\n    ",
            ),
        ];
        for (family, expected) in cases {
            assert_eq!(
                layout(family.format(), &input(true)),
                expected,
                "{family:?}"
            );
        }
        // Without other files, Qwen's prompt is the plain prefix-suffix-middle one.
        assert_eq!(
            layout(FimFamily::Qwen.format(), &input(false)),
            "<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n\nprint(add(1, 2))\n<|fim_middle|>"
        );
    }

    #[test]
    fn the_family_follows_the_setting_then_the_name() {
        let auto = FimFamilyChoice::Auto;
        assert_eq!(
            FimFamily::choose(auto, "qwen2.5-coder-1.5b"),
            FimFamily::Qwen
        );
        assert_eq!(
            FimFamily::choose(auto, "bigcode/starcoder2-3b"),
            FimFamily::StarCoder
        );
        assert_eq!(
            FimFamily::choose(auto, "deepseek-coder:1.3b-base"),
            FimFamily::DeepSeek
        );
        assert_eq!(
            FimFamily::choose(auto, "codellama:7b-code"),
            FimFamily::CodeLlama
        );
        assert_eq!(
            FimFamily::choose(auto, "codestral-latest"),
            FimFamily::Codestral
        );
        assert_eq!(FimFamily::choose(auto, "mystery"), FimFamily::Qwen);
        assert_eq!(
            FimFamily::choose(FimFamilyChoice::Starcoder, "qwen"),
            FimFamily::StarCoder
        );
    }
}
