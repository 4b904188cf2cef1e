//! Models by name: the short built-in catalogue `patchwise model pull NAME` downloads from, and
//! where a pulled model lives in the data dir. A provider's `model` is a catalogue name or a path
//! to any GGUF file; a path never needs the network.

use std::path::{Path, PathBuf};

/// One model patchwise knows how to download.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogEntry {
    /// The name to pull and to configure (`model = "qwen2.5-coder-1.5b"`).
    pub name: &'static str,
    /// The Hugging Face repository.
    pub repo: &'static str,
    /// The GGUF file in it (also its name in the data dir).
    pub file: &'static str,
    /// Approximate download size, for the listing.
    pub size_mb: u32,
    /// Instruction-tuned (chat: edit, develop, research), a base model (completion), or a
    /// sentence encoder (embeddings: research ranks passages by meaning with it).
    pub use_for: &'static str,
}

/// The catalogue. Instruct models are Qwen's own Q4_K_M files; the base models for
/// fill-in-the-middle completion are ggml-org's Q8_0 files (the ones llama.vscode uses); the
/// sentence encoder is all-MiniLM-L6-v2 converted by llama.cpp's converter (BERT, mean pooling),
/// at Q8_0.
pub const CATALOG: &[CatalogEntry] = &[
    CatalogEntry {
        name: "qwen2.5-coder-0.5b",
        repo: "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size_mb: 398,
        use_for: "chat",
    },
    CatalogEntry {
        name: "qwen2.5-coder-1.5b",
        repo: "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size_mb: 1117,
        use_for: "chat",
    },
    CatalogEntry {
        name: "qwen2.5-coder-3b",
        repo: "Qwen/Qwen2.5-Coder-3B-Instruct-GGUF",
        file: "qwen2.5-coder-3b-instruct-q4_k_m.gguf",
        size_mb: 2104,
        use_for: "chat",
    },
    CatalogEntry {
        name: "qwen2.5-coder-7b",
        repo: "Qwen/Qwen2.5-Coder-7B-Instruct-GGUF",
        file: "qwen2.5-coder-7b-instruct-q4_k_m.gguf",
        size_mb: 4683,
        use_for: "chat",
    },
    CatalogEntry {
        name: "qwen2.5-coder-0.5b-base",
        repo: "ggml-org/Qwen2.5-Coder-0.5B-Q8_0-GGUF",
        file: "qwen2.5-coder-0.5b-q8_0.gguf",
        size_mb: 531,
        use_for: "completion",
    },
    CatalogEntry {
        name: "qwen2.5-coder-1.5b-base",
        repo: "ggml-org/Qwen2.5-Coder-1.5B-Q8_0-GGUF",
        file: "qwen2.5-coder-1.5b-q8_0.gguf",
        size_mb: 1646,
        use_for: "completion",
    },
    CatalogEntry {
        name: "qwen2.5-coder-3b-base",
        repo: "ggml-org/Qwen2.5-Coder-3B-Q8_0-GGUF",
        file: "qwen2.5-coder-3b-q8_0.gguf",
        size_mb: 3285,
        use_for: "completion",
    },
    CatalogEntry {
        name: "qwen2.5-coder-7b-base",
        repo: "ggml-org/Qwen2.5-Coder-7B-Q8_0-GGUF",
        file: "qwen2.5-coder-7b-q8_0.gguf",
        size_mb: 8099,
        use_for: "completion",
    },
    CatalogEntry {
        name: "all-minilm-l6-v2",
        repo: "second-state/All-MiniLM-L6-v2-Embedding-GGUF",
        file: "all-MiniLM-L6-v2-Q8_0.gguf",
        size_mb: 25,
        use_for: "embeddings",
    },
];

/// The model `pull` takes with no name, and the embedded provider uses when none is named:
/// the largest that answers at an interactive pace on a laptop's CPU.
pub const DEFAULT_MODEL: &str = "qwen2.5-coder-1.5b";

/// The embedding model `pull` takes with no name too, and research ranks passages by meaning
/// with when it is in the data dir (`[research] embeddings`, docs/research.md).
pub const DEFAULT_ENCODER: &str = "all-minilm-l6-v2";

/// The catalogue entry called `name` (case-insensitive; `qwen2.5-coder:1.5b` as Ollama writes
/// it is accepted too).
pub fn find(name: &str) -> Option<&'static CatalogEntry> {
    let wanted = name.trim().to_ascii_lowercase().replace(':', "-");
    CATALOG.iter().find(|entry| entry.name == wanted)
}

/// Where pulled models are kept: `<data dir>/models`.
pub fn models_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("models")
}

/// Where a model names a file: a catalogue entry's file in the models dir, or the path itself
/// (relative paths are taken from the current directory; `~/` is the home directory).
pub fn resolve(spec: &str, data_dir: &Path) -> ModelFile {
    if let Some(entry) = find(spec) {
        return ModelFile {
            path: models_dir(data_dir).join(entry.file),
            entry: Some(entry),
        };
    }
    let expanded = match spec.strip_prefix("~/") {
        Some(rest) => dirs::home_dir()
            .map(|home| home.join(rest))
            .unwrap_or_else(|| PathBuf::from(spec)),
        None => PathBuf::from(spec),
    };
    // A bare file name is looked for in the models dir too (`model rm` and `list` show them so).
    let in_models = models_dir(data_dir).join(&expanded);
    let path = if expanded.components().count() == 1 && !expanded.exists() && in_models.exists() {
        in_models
    } else {
        expanded
    };
    ModelFile { path, entry: None }
}

/// A model spec resolved to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFile {
    pub path: PathBuf,
    /// The catalogue entry, when the spec named one.
    pub entry: Option<&'static CatalogEntry>,
}

impl ModelFile {
    /// What to tell a user whose model file is missing: the command that fetches it, or for a
    /// path, that the path has no file.
    pub fn missing_hint(&self) -> String {
        match self.entry {
            Some(entry) => format!(
                "{} is not downloaded yet: run `patchwise model pull {}` (or download {} from https://huggingface.co/{} and put it at {})",
                entry.name,
                entry.name,
                entry.file,
                entry.repo,
                self.path.display()
            ),
            None => format!(
                "no GGUF file at {}: give the path to a .gguf file, or a catalogue name (`patchwise model list`)",
                self.path.display()
            ),
        }
    }
}

/// The first catalogue model for chat that is present in the data dir, else any `.gguf` file
/// there: what serves every role when nothing is configured and no server answers.
pub fn first_present(data_dir: &Path) -> Option<ModelFile> {
    let chat = std::iter::once(DEFAULT_MODEL)
        .chain(
            CATALOG
                .iter()
                .filter(|e| e.use_for == "chat")
                .map(|e| e.name),
        )
        .filter_map(find)
        .map(|entry| ModelFile {
            path: models_dir(data_dir).join(entry.file),
            entry: Some(entry),
        })
        .find(|r| r.path.is_file());
    chat.or_else(|| {
        let mut files: Vec<PathBuf> = std::fs::read_dir(models_dir(data_dir))
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "gguf") && p.is_file())
            // An embedding model writes no text: never the model a chat falls back on.
            .filter(|p| !super::gguf::read_info(p).is_ok_and(|info| info.is_embedding_model()))
            .filter(|p| {
                CATALOG.iter().all(|e| {
                    e.use_for != "embeddings" || p.file_name().is_none_or(|name| name != e.file)
                })
            })
            .collect();
        files.sort();
        files
            .into_iter()
            .next()
            .map(|path| ModelFile { path, entry: None })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_files_in_the_data_dir_and_paths_stay_paths() {
        let data = Path::new("/data");
        let r = resolve("qwen2.5-coder-1.5b", data);
        assert_eq!(
            r.path,
            Path::new("/data/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
        );
        assert!(
            r.missing_hint()
                .contains("patchwise model pull qwen2.5-coder-1.5b")
        );
        assert_eq!(
            find("Qwen2.5-Coder:7B").map(|e| e.name),
            Some("qwen2.5-coder-7b")
        );
        let r = resolve("/models/x.gguf", data);
        assert_eq!(
            (r.path.as_path(), r.entry),
            (Path::new("/models/x.gguf"), None)
        );
        assert!(r.missing_hint().contains("no GGUF file at /models/x.gguf"));
    }

    #[test]
    fn every_entry_is_a_gguf_file_with_a_unique_name() {
        let mut names: Vec<_> = CATALOG.iter().map(|e| e.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), CATALOG.len());
        assert!(CATALOG.iter().all(|e| e.file.ends_with(".gguf")));
        assert!(find(DEFAULT_MODEL).is_some());
        assert_eq!(find(DEFAULT_ENCODER).map(|e| e.use_for), Some("embeddings"));
    }

    #[test]
    fn an_embedding_model_alone_is_not_a_chat_model() {
        let data = tempfile::tempdir().unwrap();
        let dir = models_dir(data.path());
        std::fs::create_dir_all(&dir).unwrap();
        let encoder = find(DEFAULT_ENCODER).unwrap();
        std::fs::write(dir.join(encoder.file), b"GGUF").unwrap();
        assert_eq!(first_present(data.path()), None);
        std::fs::write(dir.join("mine.gguf"), b"GGUF").unwrap();
        assert_eq!(
            first_present(data.path()).map(|m| m.path),
            Some(dir.join("mine.gguf"))
        );
    }
}
