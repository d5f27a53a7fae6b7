//! Arbitrary bytes as a GGUF file: parsing, the model config, the tokenizer and every tensor's
//! dequantization return values or errors naming the file, and never panic or over-allocate.
#![no_main]

use envrl_algos::{GgufFile, HfTokenizer, gguf_config};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    match GgufFile::from_bytes(bytes.to_vec(), "fuzz.gguf") {
        Ok(file) => {
            let _ = gguf_config(&file);
            let _ = HfTokenizer::from_gguf(&file);
            for (name, info) in file.tensors() {
                if info.shape.iter().product::<usize>() <= 1 << 20 {
                    let _ = file.tensor_f32(name, &info.shape);
                }
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.gguf")),
    }
});
