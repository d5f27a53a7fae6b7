//! GGUF files (llama.cpp's format): the container is read by [`reader`] with bounds checks, and
//! quantized blocks are dequantized to f32 by `candle-core`'s ggml kernels.

mod reader;
mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use candle_core::quantized::GgmlDType;
use candle_core::quantized::ggml_file::qtensor_from_ggml;

use crate::error::{Error, Result};
pub use reader::{GgufValue, TensorInfo};
pub use writer::{GgufTensor, MetaValue, write_gguf};

/// A GGUF file read into memory: its metadata and its tensors.
pub struct GgufFile {
    path: PathBuf,
    bytes: Vec<u8>,
    version: u32,
    metadata: BTreeMap<String, GgufValue>,
    tensors: BTreeMap<String, TensorInfo>,
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("metadata", &self.metadata.len())
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

impl GgufFile {
    /// Reads and parses `path`.
    ///
    /// # Errors
    /// [`Error::ModelFile`] naming the file when it cannot be read, is not GGUF v2/v3, is
    /// truncated, or stores a tensor in a type envrl cannot dequantize.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| model_error(path, e.to_string()))?;
        Self::from_bytes(bytes, path)
    }

    /// Parses a GGUF file held in memory; `path` names it in errors.
    ///
    /// # Errors
    /// As [`GgufFile::open`].
    pub fn from_bytes(bytes: Vec<u8>, path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        let header = reader::parse(&bytes).map_err(|e| model_error(&path, e))?;
        Ok(Self {
            path,
            bytes,
            version: header.version,
            metadata: header.metadata,
            tensors: header.tensors,
        })
    }

    /// The file this was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every metadata key and value.
    pub fn metadata(&self) -> &BTreeMap<String, GgufValue> {
        &self.metadata
    }

    /// Every tensor's name, shape and storage.
    pub fn tensors(&self) -> &BTreeMap<String, TensorInfo> {
        &self.tensors
    }

    /// An error about this file.
    pub(crate) fn error(&self, reason: impl Into<String>) -> Error {
        model_error(&self.path, reason)
    }

    fn required(&self, key: &str) -> Result<&GgufValue> {
        self.metadata
            .get(key)
            .ok_or_else(|| self.error(format!("metadata `{key}` is missing")))
    }

    /// `read(self, key)` when `key` is present, `None` when it is absent: for metadata with a
    /// default (`file.optional(key, GgufFile::float)?.unwrap_or(1e4)`).
    ///
    /// # Errors
    /// Whatever `read` returns for a present key of the wrong type.
    pub fn optional<'a, T>(
        &'a self,
        key: &str,
        read: impl FnOnce(&'a Self, &str) -> Result<T>,
    ) -> Result<Option<T>> {
        if self.metadata.contains_key(key) {
            read(self, key).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A string value.
    ///
    /// # Errors
    /// [`Error::ModelFile`] when the key is missing or not a string.
    pub fn string(&self, key: &str) -> Result<&str> {
        match self.required(key)? {
            GgufValue::String(s) => Ok(s),
            other => Err(self.error(format!("metadata `{key}` is {other:?}, not a string"))),
        }
    }

    /// An unsigned integer value.
    ///
    /// # Errors
    /// [`Error::ModelFile`] when the key is missing or not a non-negative integer.
    pub fn uint(&self, key: &str) -> Result<u64> {
        match self.required(key)? {
            GgufValue::Uint(v) => Ok(*v),
            GgufValue::Int(v) if *v >= 0 => Ok(*v as u64),
            other => Err(self.error(format!("metadata `{key}` is {other:?}, not an integer"))),
        }
    }

    /// A float value (integers are accepted).
    ///
    /// # Errors
    /// [`Error::ModelFile`] when the key is missing or not a number.
    pub fn float(&self, key: &str) -> Result<f64> {
        match self.required(key)? {
            GgufValue::Float(v) => Ok(*v),
            GgufValue::Uint(v) => Ok(*v as f64),
            GgufValue::Int(v) => Ok(*v as f64),
            other => Err(self.error(format!("metadata `{key}` is {other:?}, not a number"))),
        }
    }

    /// An array value.
    ///
    /// # Errors
    /// [`Error::ModelFile`] when the key is missing or not an array.
    pub fn array(&self, key: &str) -> Result<&[GgufValue]> {
        match self.required(key)? {
            GgufValue::Array(items) => Ok(items),
            other => Err(self.error(format!("metadata `{key}` is {other:?}, not an array"))),
        }
    }

    /// The tensor `name` dequantized to f32, row-major in [`TensorInfo::shape`] order, after
    /// checking that its shape is `shape`.
    ///
    /// # Errors
    /// [`Error::ModelFile`] naming the tensor when it is missing or misshapen.
    pub fn tensor_f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let info = self
            .tensors
            .get(name)
            .ok_or_else(|| self.error(format!("tensor `{name}` is missing")))?;
        if info.shape != shape {
            return Err(self.error(format!(
                "tensor `{name}` has shape {:?}, the model config implies {shape:?}",
                info.shape
            )));
        }
        let fail = |e: candle_core::Error| {
            self.error(format!(
                "tensor `{name}` ({}): {e}",
                reader::type_name(info.ggml_type)
            ))
        };
        let dtype = ggml_dtype(info.ggml_type).ok_or_else(|| {
            self.error(format!(
                "tensor `{name}`: {} cannot be dequantized",
                reader::type_name(info.ggml_type)
            ))
        })?;
        // candle reinterprets the bytes as blocks in place, so hand it 8-byte-aligned memory.
        let raw = &self.bytes[info.start..info.start + info.len];
        let mut aligned = vec![0u64; info.len.div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..info.len].copy_from_slice(raw);
        let bytes = &bytemuck::cast_slice::<u64, u8>(&aligned)[..info.len];
        let device = candle_core::Device::Cpu;
        qtensor_from_ggml(dtype, bytes, info.shape.clone(), &device)
            .and_then(|q| q.dequantize(&device))
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(fail)
    }
}

/// candle's name for a ggml type id.
fn ggml_dtype(ggml_type: u32) -> Option<GgmlDType> {
    Some(match ggml_type {
        0 => GgmlDType::F32,
        1 => GgmlDType::F16,
        2 => GgmlDType::Q4_0,
        3 => GgmlDType::Q4_1,
        6 => GgmlDType::Q5_0,
        7 => GgmlDType::Q5_1,
        8 => GgmlDType::Q8_0,
        10 => GgmlDType::Q2K,
        11 => GgmlDType::Q3K,
        12 => GgmlDType::Q4K,
        13 => GgmlDType::Q5K,
        14 => GgmlDType::Q6K,
        15 => GgmlDType::Q8K,
        30 => GgmlDType::BF16,
        _ => return None,
    })
}

fn model_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::ModelFile {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}
