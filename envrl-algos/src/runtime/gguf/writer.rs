//! Writing GGUF version 3 (llama.cpp's layout): the header, typed metadata, the tensor
//! directory (dimensions innermost first) and the tensor data, each tensor aligned to 32 bytes.
//!
//! candle's writer emits version 2 and no alignment key; llama.cpp and the `gguf` Python package
//! read either, but this writer produces what llama.cpp's own converter writes today.

use std::io::Write;

/// The alignment of tensor data (llama.cpp's default; `general.alignment` is not written).
pub const ALIGNMENT: usize = 32;

/// A metadata value with the exact type llama.cpp expects for its key.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    /// `GGUF_TYPE_UINT32` (sizes, token ids).
    U32(u32),
    /// `GGUF_TYPE_UINT64`.
    U64(u64),
    /// `GGUF_TYPE_INT32`.
    I32(i32),
    /// `GGUF_TYPE_FLOAT32` (ε, RoPE base).
    F32(f32),
    /// `GGUF_TYPE_BOOL`.
    Bool(bool),
    /// `GGUF_TYPE_STRING`.
    Str(String),
    /// An array of strings (tokens, merges).
    StrArray(Vec<String>),
    /// An array of `INT32` (token types).
    I32Array(Vec<i32>),
    /// An array of `FLOAT32` (token scores).
    F32Array(Vec<f32>),
}

impl MetaValue {
    fn type_id(&self) -> u32 {
        match self {
            MetaValue::U32(_) => 4,
            MetaValue::I32(_) => 5,
            MetaValue::F32(_) => 6,
            MetaValue::Bool(_) => 7,
            MetaValue::Str(_) => 8,
            MetaValue::StrArray(_) | MetaValue::I32Array(_) | MetaValue::F32Array(_) => 9,
            MetaValue::U64(_) => 10,
        }
    }
}

/// One tensor: its name, shape (outermost first, as [`super::TensorInfo::shape`]), ggml type
/// id and encoded bytes.
#[derive(Debug, Clone)]
pub struct GgufTensor {
    /// llama.cpp's name (`blk.0.attn_q.weight`).
    pub name: String,
    /// Outermost dimension first.
    pub shape: Vec<usize>,
    /// The ggml type id (0 = F32, 1 = F16, 8 = Q8_0).
    pub ggml_type: u32,
    /// The encoded data.
    pub data: Vec<u8>,
}

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn value(out: &mut Vec<u8>, v: &MetaValue) {
    match v {
        MetaValue::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        MetaValue::Bool(x) => out.push(u8::from(*x)),
        MetaValue::Str(s) => string(out, s),
        MetaValue::StrArray(items) => {
            out.extend_from_slice(&8u32.to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for s in items {
                string(out, s);
            }
        }
        MetaValue::I32Array(items) => {
            out.extend_from_slice(&5u32.to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for x in items {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        MetaValue::F32Array(items) => {
            out.extend_from_slice(&6u32.to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for x in items {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
}

fn pad(out: &mut Vec<u8>) {
    out.resize(out.len().div_ceil(ALIGNMENT) * ALIGNMENT, 0);
}

/// Writes a GGUF v3 file with `metadata` (in order) and `tensors` to `w`.
///
/// # Errors
/// Whatever writing to `w` returns.
pub fn write_gguf(
    w: &mut impl Write,
    metadata: &[(String, MetaValue)],
    tensors: &[GgufTensor],
) -> std::io::Result<()> {
    let mut head = Vec::new();
    head.extend_from_slice(b"GGUF");
    head.extend_from_slice(&3u32.to_le_bytes());
    head.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    head.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
    for (key, v) in metadata {
        string(&mut head, key);
        head.extend_from_slice(&v.type_id().to_le_bytes());
        value(&mut head, v);
    }
    let mut offset = 0usize;
    for tensor in tensors {
        string(&mut head, &tensor.name);
        head.extend_from_slice(&(tensor.shape.len() as u32).to_le_bytes());
        for &dim in tensor.shape.iter().rev() {
            head.extend_from_slice(&(dim as u64).to_le_bytes());
        }
        head.extend_from_slice(&tensor.ggml_type.to_le_bytes());
        head.extend_from_slice(&(offset as u64).to_le_bytes());
        offset += tensor.data.len().div_ceil(ALIGNMENT) * ALIGNMENT;
    }
    pad(&mut head);
    w.write_all(&head)?;
    for tensor in tensors {
        w.write_all(&tensor.data)?;
        let padding = tensor.data.len().div_ceil(ALIGNMENT) * ALIGNMENT - tensor.data.len();
        w.write_all(&vec![0u8; padding])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::gguf::{GgufFile, GgufValue};

    #[test]
    fn what_is_written_reads_back_with_every_type() {
        let metadata = vec![
            (
                "general.architecture".to_string(),
                MetaValue::Str("llama".into()),
            ),
            ("a.u32".into(), MetaValue::U32(7)),
            ("a.u64".into(), MetaValue::U64(1 << 40)),
            ("a.i32".into(), MetaValue::I32(-3)),
            ("a.f32".into(), MetaValue::F32(0.5)),
            ("a.bool".into(), MetaValue::Bool(true)),
            (
                "a.strs".into(),
                MetaValue::StrArray(vec!["x".into(), "yz".into()]),
            ),
            ("a.ints".into(), MetaValue::I32Array(vec![1, -2])),
            ("a.floats".into(), MetaValue::F32Array(vec![0.25])),
        ];
        let values: Vec<f32> = (0..6).map(|v| v as f32).collect();
        let tensors = vec![
            GgufTensor {
                name: "m".into(),
                shape: vec![2, 3],
                ggml_type: 0,
                data: bytemuck::cast_slice(&values).to_vec(),
            },
            GgufTensor {
                name: "v".into(),
                shape: vec![3],
                ggml_type: 0,
                data: bytemuck::cast_slice(&values[..3]).to_vec(),
            },
        ];
        let mut bytes = Vec::new();
        write_gguf(&mut bytes, &metadata, &tensors).unwrap();
        let file = GgufFile::from_bytes(bytes, "test.gguf").unwrap();
        assert_eq!(file.uint("a.u32").unwrap(), 7);
        assert_eq!(file.uint("a.u64").unwrap(), 1 << 40);
        assert_eq!(file.metadata()["a.i32"], GgufValue::Int(-3));
        assert_eq!(file.float("a.f32").unwrap(), 0.5);
        assert_eq!(file.metadata()["a.bool"], GgufValue::Bool(true));
        assert_eq!(file.array("a.strs").unwrap().len(), 2);
        assert_eq!(file.tensors()["m"].shape, vec![2, 3]);
        assert_eq!(file.tensors()["v"].start % ALIGNMENT, 0);
        assert_eq!(file.tensor_f32("m", &[2, 3]).unwrap(), values);
        assert_eq!(file.tensor_f32("v", &[3]).unwrap(), values[..3]);
    }
}
