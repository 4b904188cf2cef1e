//! Reading a GGUF file's header without loading it: whether a file is GGUF at all, what it
//! says it is (architecture, name, trained context, chat template) and whether it is whole
//! (its tensors end where the file ends). `model list`, `doctor` and the host check a file
//! with it before llama.cpp sees it, so a wrong or truncated file is a sentence naming the
//! file, never a crash in C++ or a hang.
//!
//! Every count and length in the header is checked against the file's size before it is
//! trusted: a hostile file cannot make this allocate more than the file holds.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// The header's magic bytes.
pub const MAGIC: &[u8; 4] = b"GGUF";

/// What a GGUF file says about itself.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GgufInfo {
    pub version: u32,
    pub tensors: u64,
    /// `general.architecture` (`qwen2`, `llama`, …).
    pub architecture: Option<String>,
    /// `general.name`.
    pub name: Option<String>,
    /// `<arch>.context_length`.
    pub context_length: Option<u64>,
    /// `tokenizer.chat_template`.
    pub chat_template: Option<String>,
    /// `general.file_type` as llama.cpp names quantisations (15: Q4_K_M, 7: Q8_0, …).
    pub file_type: Option<u32>,
    /// The file's size in bytes.
    pub size: u64,
    /// Where the last tensor ends, when every tensor's type is known: a file shorter than this
    /// is truncated.
    pub data_end: Option<u64>,
    /// The other string and integer values, by key (arrays are left out).
    pub values: BTreeMap<String, String>,
}

impl GgufInfo {
    /// Whether the file holds all its tensors (unknown tensor types count as whole).
    pub fn is_whole(&self) -> bool {
        self.data_end.is_none_or(|end| end <= self.size)
    }

    /// Whether the file is an embedding model: its `<arch>.pooling_type` names a pooling
    /// (mean, CLS, last), as sentence encoders' files do (llama.cpp's converter writes it for
    /// BERT and its kin); a chat or completion model's file has none. Such a model turns a text
    /// into one vector and writes no text.
    pub fn is_embedding_model(&self) -> bool {
        let Some(arch) = &self.architecture else {
            return false;
        };
        self.values
            .get(&format!("{arch}.pooling_type"))
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|pooling| (1..=3).contains(&pooling))
    }
}

/// Why a file is not a usable GGUF file.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("cannot read {path}: {reason}")]
    Io { path: String, reason: String },
    #[error(
        "{path} is not a GGUF model file (it starts with {found:?}, a GGUF file with \"GGUF\")"
    )]
    NotGguf { path: String, found: String },
    #[error("{path} is GGUF version {version}; this build reads versions 2 and 3")]
    Version { path: String, version: u32 },
    #[error("{path} has a broken GGUF header: {reason}")]
    Broken { path: String, reason: String },
    #[error(
        "{path} is truncated: its tensors end at byte {expected} but the file has {size} bytes (an interrupted download? delete it and download it again)"
    )]
    Truncated {
        path: String,
        expected: u64,
        size: u64,
    },
}

/// Reads `path`'s header.
pub fn read_info(path: &Path) -> Result<GgufInfo, GgufError> {
    let shown = path.display().to_string();
    let io = |err: std::io::Error| GgufError::Io {
        path: shown.clone(),
        reason: err.to_string(),
    };
    let file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut reader = Reader {
        inner: BufReader::new(file),
        size,
        pos: 0,
    };
    let broken = |reason: String| GgufError::Broken {
        path: shown.clone(),
        reason,
    };
    let mut magic = [0u8; 4];
    if reader.exact(&mut magic).is_err() || &magic != MAGIC {
        let mut start = magic.to_vec();
        start.truncate(size.min(4) as usize);
        return Err(GgufError::NotGguf {
            path: shown.clone(),
            found: String::from_utf8_lossy(&start).into_owned(),
        });
    }
    let version = reader.u32().map_err(&broken)?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::Version {
            path: shown.clone(),
            version,
        });
    }
    let tensors = reader.u64().map_err(&broken)?;
    let kv_count = reader.u64().map_err(&broken)?;
    // Each entry takes at least a few bytes: more entries than bytes is a broken header.
    if tensors > size || kv_count > size {
        return Err(broken(format!(
            "it claims {tensors} tensors and {kv_count} values in {size} bytes"
        )));
    }
    let mut info = GgufInfo {
        version,
        tensors,
        size,
        ..GgufInfo::default()
    };
    let mut alignment = 32u64;
    for _ in 0..kv_count {
        let key = reader.string().map_err(&broken)?;
        let kind = reader.u32().map_err(&broken)?;
        let value = reader.value(kind, 0).map_err(&broken)?;
        match (key.as_str(), &value) {
            ("general.architecture", Value::Text(text)) => info.architecture = Some(text.clone()),
            ("general.name", Value::Text(text)) => info.name = Some(text.clone()),
            ("tokenizer.chat_template", Value::Text(text)) => {
                info.chat_template = Some(text.clone())
            }
            ("general.file_type", Value::Int(n)) => info.file_type = u32::try_from(*n).ok(),
            ("general.alignment", Value::Int(n)) if *n > 0 && (*n as u64).is_power_of_two() => {
                alignment = *n as u64
            }
            _ => {}
        }
        if key.ends_with(".context_length")
            && let Value::Int(n) = value
        {
            info.context_length = u64::try_from(n).ok();
        }
        match value {
            Value::Text(text) if key != "tokenizer.chat_template" => {
                info.values.insert(key, text);
            }
            Value::Int(n) => {
                info.values.insert(key, n.to_string());
            }
            _ => {}
        }
    }
    let mut data_end = Some(0u64);
    for _ in 0..tensors {
        let _name = reader.string().map_err(&broken)?;
        let dims = reader.u32().map_err(&broken)?;
        if dims > 8 {
            return Err(broken(format!("a tensor with {dims} dimensions")));
        }
        let mut elements: u64 = 1;
        for _ in 0..dims {
            elements = elements.saturating_mul(reader.u64().map_err(&broken)?);
        }
        let kind = reader.u32().map_err(&broken)?;
        let offset = reader.u64().map_err(&broken)?;
        data_end = match (data_end, tensor_bytes(kind, elements)) {
            (Some(end), Some(bytes)) => Some(end.max(offset.saturating_add(bytes))),
            _ => None,
        };
    }
    let data_start = reader.pos.div_ceil(alignment) * alignment;
    info.data_end = data_end.map(|end| data_start.saturating_add(end));
    if let Some(expected) = info.data_end
        && expected > size
    {
        return Err(GgufError::Truncated {
            path: shown,
            expected,
            size,
        });
    }
    Ok(info)
}

/// Bytes of `elements` values of ggml type `kind` (`None` for a type this table does not know).
fn tensor_bytes(kind: u32, elements: u64) -> Option<u64> {
    // (bytes per block, values per block), from ggml's type traits.
    let (block_bytes, block_len): (u64, u64) = match kind {
        0 => (4, 1),      // F32
        1 => (2, 1),      // F16
        2 => (18, 32),    // Q4_0
        3 => (20, 32),    // Q4_1
        6 => (22, 32),    // Q5_0
        7 => (24, 32),    // Q5_1
        8 => (34, 32),    // Q8_0
        9 => (36, 32),    // Q8_1
        10 => (84, 256),  // Q2_K
        11 => (110, 256), // Q3_K
        12 => (144, 256), // Q4_K
        13 => (176, 256), // Q5_K
        14 => (210, 256), // Q6_K
        15 => (292, 256), // Q8_K
        16 => (66, 256),  // IQ2_XXS
        17 => (74, 256),  // IQ2_XS
        18 => (98, 256),  // IQ3_XXS
        19 => (50, 256),  // IQ1_S
        20 => (18, 32),   // IQ4_NL
        21 => (110, 256), // IQ3_S
        22 => (82, 256),  // IQ2_S
        23 => (136, 256), // IQ4_XS
        24 => (1, 1),     // I8
        25 => (2, 1),     // I16
        26 => (4, 1),     // I32
        27 => (8, 1),     // I64
        28 => (8, 1),     // F64
        29 => (56, 256),  // IQ1_M
        30 => (2, 1),     // BF16
        _ => return None,
    };
    Some(elements.div_ceil(block_len).saturating_mul(block_bytes))
}

enum Value {
    Int(i128),
    Text(String),
    Other,
}

struct Reader {
    inner: BufReader<File>,
    size: u64,
    pos: u64,
}

impl Reader {
    fn exact(&mut self, buf: &mut [u8]) -> Result<(), String> {
        self.inner
            .read_exact(buf)
            .map_err(|_| format!("it ends at byte {} inside the header", self.size))?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn u32(&mut self) -> Result<u32, String> {
        let mut b = [0u8; 4];
        self.exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let mut b = [0u8; 8];
        self.exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn skip(&mut self, n: u64) -> Result<(), String> {
        if self.pos.saturating_add(n) > self.size {
            return Err(format!("a value runs past the end of the file ({n} bytes)"));
        }
        self.inner
            .seek(SeekFrom::Current(n as i64))
            .map_err(|err| err.to_string())?;
        self.pos += n;
        Ok(())
    }

    fn string(&mut self) -> Result<String, String> {
        let len = self.u64()?;
        if self.pos.saturating_add(len) > self.size {
            return Err(format!(
                "a string of {len} bytes runs past the end of the file"
            ));
        }
        let mut bytes = vec![0u8; len as usize];
        self.exact(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn value(&mut self, kind: u32, depth: u32) -> Result<Value, String> {
        let fixed = |r: &mut Reader, n: usize| -> Result<[u8; 8], String> {
            let mut b = [0u8; 8];
            r.exact(&mut b[..n])?;
            Ok(b)
        };
        Ok(match kind {
            0 => Value::Int(fixed(self, 1)?[0] as i128),
            1 => Value::Int(fixed(self, 1)?[0] as i8 as i128),
            2 => Value::Int(u16::from_le_bytes(fixed(self, 2)?[..2].try_into().unwrap()) as i128),
            3 => Value::Int(i16::from_le_bytes(fixed(self, 2)?[..2].try_into().unwrap()) as i128),
            4 => Value::Int(self.u32()? as i128),
            5 => Value::Int(self.u32()? as i32 as i128),
            6 => {
                self.skip(4)?;
                Value::Other
            }
            7 => {
                self.skip(1)?;
                Value::Other
            }
            8 => Value::Text(self.string()?),
            9 => {
                if depth > 2 {
                    return Err("arrays nested too deep".into());
                }
                let inner = self.u32()?;
                let count = self.u64()?;
                if count > self.size {
                    return Err(format!("an array of {count} values"));
                }
                let width = match inner {
                    0 | 1 | 7 => Some(1),
                    2 | 3 => Some(2),
                    4..=6 => Some(4),
                    10..=12 => Some(8),
                    _ => None,
                };
                match width {
                    Some(w) => self.skip(count.saturating_mul(w))?,
                    None => {
                        for _ in 0..count {
                            self.value(inner, depth + 1)?;
                        }
                    }
                }
                Value::Other
            }
            10 => Value::Int(self.u64()? as i128),
            11 => Value::Int(self.u64()? as i64 as i128),
            12 => {
                self.skip(8)?;
                Value::Other
            }
            other => return Err(format!("a value of unknown type {other}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.gguf");
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    fn header(tensor_bytes: usize) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"GGUF");
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes()); // one tensor
        b.extend_from_slice(&1u64.to_le_bytes()); // one value
        let key = b"general.architecture";
        b.extend_from_slice(&(key.len() as u64).to_le_bytes());
        b.extend_from_slice(key);
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&5u64.to_le_bytes());
        b.extend_from_slice(b"llama");
        let name = b"w";
        b.extend_from_slice(&(name.len() as u64).to_le_bytes());
        b.extend_from_slice(name);
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&4u64.to_le_bytes()); // 4 floats
        b.extend_from_slice(&0u32.to_le_bytes()); // F32
        b.extend_from_slice(&0u64.to_le_bytes());
        while b.len() % 32 != 0 {
            b.push(0);
        }
        b.extend(std::iter::repeat_n(0u8, tensor_bytes));
        b
    }

    #[test]
    fn a_whole_file_is_read() {
        let (_dir, path) = write(&header(16));
        let info = read_info(&path).unwrap();
        assert_eq!(info.architecture.as_deref(), Some("llama"));
        assert!(info.is_whole());
    }

    #[test]
    fn a_truncated_file_says_so() {
        let (_dir, path) = write(&header(10));
        let err = read_info(&path).unwrap_err().to_string();
        assert!(err.contains("is truncated"), "{err}");
        let bytes = header(16);
        let (_dir, path) = write(&bytes[..40]);
        let err = read_info(&path).unwrap_err().to_string();
        assert!(err.contains("broken GGUF header"), "{err}");
    }

    #[test]
    fn a_file_that_is_not_gguf_says_what_it_starts_with() {
        let (_dir, path) = write(b"<html>not found</html>");
        let err = read_info(&path).unwrap_err().to_string();
        assert!(
            err.contains("not a GGUF model file") && err.contains("<htm"),
            "{err}"
        );
        let (_dir, path) = write(b"");
        assert!(
            read_info(&path)
                .unwrap_err()
                .to_string()
                .contains("not a GGUF")
        );
    }

    #[test]
    fn hostile_counts_are_refused_without_allocating() {
        let mut b = Vec::new();
        b.extend_from_slice(b"GGUF");
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes()); // a key of 2^64 bytes
        let (_dir, path) = write(&b);
        let err = read_info(&path).unwrap_err().to_string();
        assert!(err.contains("runs past the end"), "{err}");
    }
}
