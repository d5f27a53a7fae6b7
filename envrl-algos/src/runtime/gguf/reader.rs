//! The GGUF container (versions 2 and 3): header, metadata and tensor directory, read with a
//! bounds check before every allocation so that a malformed or hostile file is an error, never a
//! panic or an out-of-memory abort.

use std::collections::BTreeMap;

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    /// Any unsigned integer type (u8, u16, u32, u64).
    Uint(u64),
    /// Any signed integer type (i8, i16, i32, i64).
    Int(i64),
    /// f32 or f64.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A UTF-8 string.
    String(String),
    /// An array of values.
    Array(Vec<GgufValue>),
}

/// Where a tensor lies in the file and how it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// The shape, outermost dimension first (GGUF lists it innermost first).
    pub shape: Vec<usize>,
    /// The ggml type id (0 = F32, 1 = F16, 2 = Q4_0, …).
    pub ggml_type: u32,
    /// Byte offset of the data from the start of the file.
    pub start: usize,
    /// Length of the data in bytes.
    pub len: usize,
}

/// A parsed GGUF header.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    pub version: u32,
    pub metadata: BTreeMap<String, GgufValue>,
    pub tensors: BTreeMap<String, TensorInfo>,
}

const MAGIC: &[u8; 4] = b"GGUF";
const MAX_DIMS: u32 = 4;
const MAX_ARRAY_DEPTH: usize = 2;

/// Block size (elements) and block length (bytes) of a ggml type; `None` for types this crate
/// cannot dequantize.
pub(crate) fn block_layout(ggml_type: u32) -> Option<(usize, usize)> {
    Some(match ggml_type {
        0 => (1, 4),     // F32
        1 => (1, 2),     // F16
        2 => (32, 18),   // Q4_0
        3 => (32, 20),   // Q4_1
        6 => (32, 22),   // Q5_0
        7 => (32, 24),   // Q5_1
        8 => (32, 34),   // Q8_0
        10 => (256, 84), // Q2_K
        11 => (256, 110),
        12 => (256, 144), // Q4_K
        13 => (256, 176), // Q5_K
        14 => (256, 210), // Q6_K
        15 => (256, 292), // Q8_K
        30 => (1, 2),     // BF16
        _ => return None,
    })
}

/// The ggml name of a type id, for messages.
pub(crate) fn type_name(ggml_type: u32) -> String {
    let name = match ggml_type {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        6 => "Q5_0",
        7 => "Q5_1",
        8 => "Q8_0",
        9 => "Q8_1",
        10 => "Q2_K",
        11 => "Q3_K",
        12 => "Q4_K",
        13 => "Q5_K",
        14 => "Q6_K",
        15 => "Q8_K",
        16..=23 | 29 => "IQ (importance-matrix) quant",
        30 => "BF16",
        _ => "unknown",
    };
    format!("{name} (ggml type {ggml_type})")
}

/// A cursor over the file's bytes that checks every read.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| {
                format!(
                    "truncated: {what} needs {n} bytes at offset {}, the file has {}",
                    self.pos,
                    self.bytes.len()
                )
            })?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// A length read from the file, refused when `len × min_item` cannot fit in what is left.
    fn length(&mut self, min_item: usize, what: &str) -> Result<usize, String> {
        let len = self.u64(what)?;
        let fits = usize::try_from(len)
            .ok()
            .and_then(|l| l.checked_mul(min_item.max(1)))
            .is_some_and(|bytes| bytes <= self.remaining());
        if !fits {
            return Err(format!(
                "{what} {len} is larger than the {} bytes left in the file",
                self.remaining()
            ));
        }
        Ok(len as usize)
    }

    fn string(&mut self, what: &str) -> Result<String, String> {
        let len = self.length(1, what)?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| format!("{what} is not valid UTF-8"))
    }

    fn value(&mut self, value_type: u32, key: &str, depth: usize) -> Result<GgufValue, String> {
        let what = || format!("metadata `{key}`");
        Ok(match value_type {
            0 => GgufValue::Uint(u8::from_le_bytes(self.array(&what())?).into()),
            1 => GgufValue::Int(i8::from_le_bytes(self.array(&what())?).into()),
            2 => GgufValue::Uint(u16::from_le_bytes(self.array(&what())?).into()),
            3 => GgufValue::Int(i16::from_le_bytes(self.array(&what())?).into()),
            4 => GgufValue::Uint(self.u32(&what())?.into()),
            5 => GgufValue::Int(i32::from_le_bytes(self.array(&what())?).into()),
            6 => GgufValue::Float(f32::from_le_bytes(self.array(&what())?).into()),
            7 => match self.array::<1>(&what())?[0] {
                0 => GgufValue::Bool(false),
                1 => GgufValue::Bool(true),
                b => return Err(format!("{}: boolean byte {b}", what())),
            },
            8 => GgufValue::String(self.string(&what())?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(format!("{}: arrays nested too deeply", what()));
                }
                let item_type = self.u32(&what())?;
                let min_item = match item_type {
                    0 | 1 | 7 => 1,
                    2 | 3 => 2,
                    4..=6 => 4,
                    8..=12 => 8,
                    other => return Err(format!("{}: unknown array item type {other}", what())),
                };
                let len = self.length(min_item, &format!("{} array length", what()))?;
                let mut items = Vec::with_capacity(len);
                for _ in 0..len {
                    items.push(self.value(item_type, key, depth + 1)?);
                }
                GgufValue::Array(items)
            }
            10 => GgufValue::Uint(self.u64(&what())?),
            11 => GgufValue::Int(i64::from_le_bytes(self.array(&what())?)),
            12 => GgufValue::Float(f64::from_le_bytes(self.array(&what())?)),
            other => return Err(format!("{}: unknown value type {other}", what())),
        })
    }
}

/// Parses the header, metadata and tensor directory of a GGUF file held in `bytes`, and checks
/// that every tensor's data lies inside the file.
pub(crate) fn parse(bytes: &[u8]) -> Result<Header, String> {
    let mut c = Cursor { bytes, pos: 0 };
    let magic = c.array::<4>("magic")?;
    if &magic != MAGIC {
        return Err(format!(
            "not a GGUF file (magic {magic:02x?}, expected `GGUF`)"
        ));
    }
    let version = c.u32("version")?;
    if !(2..=3).contains(&version) {
        return Err(format!("GGUF version {version} is not supported (2, 3)"));
    }
    // Each tensor entry and each metadata pair takes at least 8 bytes.
    let n_tensors = c.length(8, "tensor count")?;
    let n_metadata = c.length(8, "metadata count")?;

    let mut metadata = BTreeMap::new();
    for _ in 0..n_metadata {
        let key = c.string("metadata key")?;
        let value_type = c.u32(&format!("type of metadata `{key}`"))?;
        let value = c.value(value_type, &key, 0)?;
        metadata.insert(key, value);
    }

    let mut directory = Vec::with_capacity(n_tensors);
    for _ in 0..n_tensors {
        let name = c.string("tensor name")?;
        let n_dims = c.u32(&format!("tensor `{name}` rank"))?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(format!(
                "tensor `{name}` has rank {n_dims} (1 to {MAX_DIMS})"
            ));
        }
        let mut shape = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            let dim = c.u64(&format!("tensor `{name}` shape"))?;
            shape.push(usize::try_from(dim).map_err(|_| format!("tensor `{name}`: dim {dim}"))?);
        }
        shape.reverse();
        let ggml_type = c.u32(&format!("tensor `{name}` type"))?;
        let offset = c.u64(&format!("tensor `{name}` offset"))?;
        directory.push((name, shape, ggml_type, offset));
    }

    let alignment = match metadata.get("general.alignment") {
        None => 32,
        Some(GgufValue::Uint(a)) if a.is_power_of_two() && *a <= 1 << 16 => *a as usize,
        Some(other) => return Err(format!("general.alignment {other:?} is not a power of two")),
    };
    let data_start = c.pos.div_ceil(alignment) * alignment;

    let mut tensors = BTreeMap::new();
    for (name, shape, ggml_type, offset) in directory {
        let (block, block_bytes) = block_layout(ggml_type).ok_or_else(|| {
            format!(
                "tensor `{name}` is stored as {}, which envrl cannot dequantize (F32, F16, BF16, \
                 Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K–Q6_K, Q8_K)",
                type_name(ggml_type)
            )
        })?;
        if shape.contains(&0) {
            return Err(format!(
                "tensor `{name}`: shape {shape:?} has an empty dimension"
            ));
        }
        let elements = shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| format!("tensor `{name}`: shape {shape:?} overflows"))?;
        if shape.last().is_none_or(|inner| inner % block != 0) {
            return Err(format!(
                "tensor `{name}`: rows of {shape:?} are not whole {} blocks of {block}",
                type_name(ggml_type)
            ));
        }
        let len = (elements / block)
            .checked_mul(block_bytes)
            .ok_or_else(|| format!("tensor `{name}`: shape {shape:?} overflows"))?;
        let start = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_add(data_start))
            .filter(|s| s.checked_add(len).is_some_and(|end| end <= bytes.len()))
            .ok_or_else(|| {
                format!(
                    "truncated: tensor `{name}` ({len} bytes at data offset {offset}) lies beyond \
                     the end of the file ({} bytes)",
                    bytes.len()
                )
            })?;
        let info = TensorInfo {
            shape,
            ggml_type,
            start,
            len,
        };
        if tensors.insert(name.clone(), info).is_some() {
            return Err(format!("tensor `{name}` is listed twice"));
        }
    }
    Ok(Header {
        version,
        metadata,
        tensors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A small valid GGUF v3 file: three metadata values (one an array) and two tensors.
    fn sample_file() -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend(2u64.to_le_bytes()); // tensors
        b.extend(3u64.to_le_bytes()); // metadata
        let string = |b: &mut Vec<u8>, s: &str| {
            b.extend((s.len() as u64).to_le_bytes());
            b.extend(s.as_bytes());
        };
        string(&mut b, "general.architecture");
        b.extend(8u32.to_le_bytes());
        string(&mut b, "llama");
        string(&mut b, "llama.block_count");
        b.extend(4u32.to_le_bytes());
        b.extend(1u32.to_le_bytes());
        string(&mut b, "tokenizer.ggml.tokens");
        b.extend(9u32.to_le_bytes());
        b.extend(8u32.to_le_bytes());
        b.extend(2u64.to_le_bytes());
        string(&mut b, "a");
        string(&mut b, "b");
        // token_embd.weight: F32 [2, 4] at 0; blk.0.attn_q.weight: Q8_0 [1, 32] at 32.
        string(&mut b, "token_embd.weight");
        b.extend(2u32.to_le_bytes());
        b.extend(4u64.to_le_bytes());
        b.extend(2u64.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        string(&mut b, "blk.0.attn_q.weight");
        b.extend(2u32.to_le_bytes());
        b.extend(32u64.to_le_bytes());
        b.extend(1u64.to_le_bytes());
        b.extend(8u32.to_le_bytes());
        b.extend(32u64.to_le_bytes());
        while !b.len().is_multiple_of(32) {
            b.push(0);
        }
        b.extend((0..8).flat_map(|i| (i as f32).to_le_bytes()));
        b.extend(std::iter::repeat_n(1u8, 34));
        b
    }

    #[test]
    fn a_valid_file_parses_with_shapes_outermost_first() {
        let header = parse(&sample_file()).unwrap();
        assert_eq!(header.version, 3);
        assert_eq!(
            header.metadata["general.architecture"],
            GgufValue::String("llama".into())
        );
        let embd = &header.tensors["token_embd.weight"];
        assert_eq!((embd.shape.clone(), embd.len), (vec![2, 4], 32));
        assert_eq!(header.tensors["blk.0.attn_q.weight"].len, 34);
    }

    /// Found by the `gguf_file` fuzz target: a shape whose element count fits in `usize` but
    /// whose byte length does not (2³¹ × 2³¹ f32 values), or that has an empty dimension, is an
    /// error, not an overflow.
    #[test]
    fn a_shape_too_large_in_bytes_is_an_error() {
        let mut bytes = sample_file();
        let name = b"token_embd.weight";
        let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + name.len() + 4;
        for dim in 0..2 {
            bytes[at + 8 * dim..at + 8 * dim + 8].copy_from_slice(&(1u64 << 31).to_le_bytes());
        }
        let err = parse(&bytes).unwrap_err();
        assert!(
            err.contains("token_embd.weight") && err.contains("overflows"),
            "{err}"
        );
    }

    /// Seeded mutation fuzzing in the unit tests (the libFuzzer target `gguf_file` goes further):
    /// flipped bytes, overwritten lengths and truncations give a header or an error, never a
    /// panic or an oversized allocation.
    #[test]
    fn mutated_files_are_errors_not_panics() {
        let original = sample_file();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let (mut ok, mut err) = (0, 0);
        for _ in 0..20_000 {
            let mut bytes = original.clone();
            match rng.random_range(0..3) {
                0 => {
                    for _ in 0..rng.random_range(1..4) {
                        let i = rng.random_range(0..bytes.len());
                        bytes[i] = rng.random();
                    }
                }
                1 => {
                    let i = rng.random_range(0..bytes.len() - 8);
                    let huge: u64 = rng.random::<u64>() >> rng.random_range(0..64);
                    bytes[i..i + 8].copy_from_slice(&huge.to_le_bytes());
                }
                _ => bytes.truncate(rng.random_range(0..bytes.len())),
            }
            match parse(&bytes) {
                Ok(_) => ok += 1,
                Err(_) => err += 1,
            }
        }
        assert!(ok > 0 && err > 0, "{ok} parsed, {err} refused");
    }
}
