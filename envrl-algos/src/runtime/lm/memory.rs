//! How much memory a model needs, and whether the machine has it: sizes that cannot fit are
//! refused by name before anything is allocated (an allocation that fails aborts the process).

use envrl::shortfall;

use crate::error::{Error, Result};
use crate::runtime::lm::LmConfig;

impl LmConfig {
    /// The number of parameters of the model these sizes describe (exact for the Qwen2 and
    /// Llama layouts this crate builds), in `u128` so that no config overflows it.
    pub fn parameter_count(&self) -> u128 {
        let [vocab, hidden, inter, layers] = [
            self.vocab_size,
            self.hidden_size,
            self.intermediate_size,
            self.num_hidden_layers,
        ]
        .map(|n| n as u128);
        let kv = (self.num_key_value_heads * self.head_dim()) as u128;
        let bias = if self.attention_bias {
            hidden + 2 * kv
        } else {
            0
        };
        let attention = 2 * hidden * hidden + 2 * hidden * kv + bias;
        let mlp = 3 * hidden * inter;
        let layer = attention + mlp + 2 * hidden;
        let head = if self.tie_word_embeddings {
            0
        } else {
            vocab * hidden
        };
        vocab * hidden + layers * layer + hidden + head
    }

    /// The number of LoRA adapter parameters at `rank` ([`CausalLm::with_lora`]'s adapters on
    /// the seven projections of every layer: `rank × (d_in + d_out)` each).
    ///
    /// [`CausalLm::with_lora`]: crate::CausalLm::with_lora
    pub fn lora_parameter_count(&self, rank: usize) -> u128 {
        let [hidden, inter, layers, rank] = [
            self.hidden_size,
            self.intermediate_size,
            self.num_hidden_layers,
            rank,
        ]
        .map(|n| n as u128);
        let kv = (self.num_key_value_heads * self.head_dim()) as u128;
        // q and o: hidden ↔ hidden; k and v: hidden → kv; gate and up: hidden → inter; down back.
        let per_layer = 2 * (2 * hidden) + 2 * (hidden + kv) + 3 * (hidden + inter);
        rank * layers * per_layer
    }

    /// The bytes of one sequence position of the key/value cache (keys and values of every
    /// layer, f32).
    pub fn kv_bytes_per_position(&self) -> u128 {
        2 * (self.num_hidden_layers * self.num_key_value_heads * self.head_dim()) as u128 * 4
    }

    /// The bytes one training step on `rows` rows of `positions` tokens holds at once, at the
    /// least: one layer's attention scores and probabilities (`rows × heads × positions²`) and
    /// the logits with their gradient (`rows × positions × vocab`), f32.
    pub fn training_step_bytes(&self, rows: usize, positions: usize) -> u128 {
        let [rows, positions, heads, vocab] =
            [rows, positions, self.num_attention_heads, self.vocab_size].map(|n| n as u128);
        let attention = rows * heads * positions * positions * 4 * 2;
        let logits = rows * positions * vocab * 4 * 2;
        attention + logits
    }

    /// Refuses sizes whose f32 weights cannot fit in `available` bytes.
    ///
    /// # Errors
    /// [`Error::InvalidModelConfig`] on `num_hidden_layers`, naming every size.
    pub fn ensure_fits(&self, available: Option<u64>) -> Result<()> {
        let what = format!(
            "the model's f32 weights ({:.3e} parameters: vocab_size {}, hidden_size {}, \
             intermediate_size {}, num_hidden_layers {})",
            self.parameter_count() as f64,
            self.vocab_size,
            self.hidden_size,
            self.intermediate_size,
            self.num_hidden_layers
        );
        match shortfall(&what, self.parameter_count() * 4, available) {
            Some(reason) => Err(Error::InvalidModelConfig {
                field: "num_hidden_layers",
                reason,
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_count_matches_the_model_built() {
        use burn::module::Module;
        for (bias, tied) in [(true, true), (false, false)] {
            let mut config = LmConfig::tiny(50);
            config.attention_bias = bias;
            config.tie_word_embeddings = tied;
            let model = config.init(&burn::tensor::Device::flex(), 0).unwrap();
            assert_eq!(config.parameter_count(), model.num_params() as u128);
        }
    }

    #[test]
    fn the_lora_parameter_count_matches_the_adapters_built() {
        for (bias, tied) in [(true, true), (false, false)] {
            let mut config = LmConfig::tiny(50);
            config.attention_bias = bias;
            config.tie_word_embeddings = tied;
            let model = config.init(&burn::tensor::Device::flex(), 0).unwrap();
            let lora = model.with_lora(4, 8.0, 0);
            assert_eq!(
                config.lora_parameter_count(4),
                lora.adapter_parameters() as u128
            );
        }
    }

    #[test]
    fn sizes_that_cannot_fit_are_refused_by_name_before_allocating() {
        let mut config = LmConfig::tiny(50);
        config.num_hidden_layers = 1_000_000_000;
        let err = config.ensure_fits(Some(24 << 30)).unwrap_err().to_string();
        assert!(err.contains("num_hidden_layers 1000000000"), "{err}");
        assert!(err.contains("24.0 GiB available"), "{err}");
        assert!(LmConfig::tiny(50).ensure_fits(Some(24 << 30)).is_ok());
        // Unknown memory: no refusal.
        assert!(config.ensure_fits(None).is_ok());
        // Sizes whose product overflows 64 bits are still counted.
        config.hidden_size = 1 << 40;
        assert!(config.parameter_count() > u128::from(u64::MAX));
    }
}
