use burn::config::Config;
use burn::tensor::Device;

use crate::error::{Error, Result};
use crate::runtime::lm::CausalLm;

/// The architecture of a Qwen2-family causal LM. Field names are the `config.json` keys.
#[derive(Config, Debug, PartialEq)]
pub struct LmConfig {
    /// Vocabulary size (`vocab_size`).
    pub vocab_size: usize,
    /// Model width d_model (`hidden_size`).
    pub hidden_size: usize,
    /// Width of the SwiGLU MLP (`intermediate_size`).
    pub intermediate_size: usize,
    /// Decoder layers (`num_hidden_layers`).
    pub num_hidden_layers: usize,
    /// Query heads (`num_attention_heads`).
    pub num_attention_heads: usize,
    /// Key/value heads for grouped-query attention (`num_key_value_heads`).
    pub num_key_value_heads: usize,
    /// RoPE base θ (`rope_theta`). Default 10000.
    #[config(default = 10000.0)]
    pub rope_theta: f64,
    /// RMSNorm ε (`rms_norm_eps`). Default 1e-6.
    #[config(default = 1e-6)]
    pub rms_norm_eps: f64,
    /// Bias on the q, k and v projections (true for Qwen2, false for Llama). Default true.
    #[config(default = true)]
    pub attention_bias: bool,
    /// Share the output layer with the token embedding (`tie_word_embeddings`). Default true.
    #[config(default = true)]
    pub tie_word_embeddings: bool,
    /// Standard deviation of the normal initialisation (`initializer_range`). Default 0.02.
    #[config(default = 0.02)]
    pub initializer_range: f64,
}

impl LmConfig {
    /// A tiny model for tests and from-scratch CPU training: 2 layers, width 64, 4 heads
    /// (2 key/value heads).
    pub fn tiny(vocab_size: usize) -> Self {
        LmConfig::new(vocab_size, 64, 128, 2, 4, 2)
    }

    /// The width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads.max(1)
    }

    /// Checks that the sizes fit together.
    ///
    /// # Errors
    /// [`Error::InvalidModelConfig`] when a size is 0, when `hidden_size` is not a multiple of
    /// `num_attention_heads`, when the head width is odd (RoPE pairs dimensions), or when
    /// `num_attention_heads` is not a multiple of `num_key_value_heads`, or when the f32 weights
    /// would not fit in the machine's available memory ([`LmConfig::ensure_fits`]).
    pub fn validate(&self) -> Result<()> {
        let sizes = [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("num_key_value_heads", self.num_key_value_heads),
        ];
        for (field, value) in sizes {
            if value == 0 {
                return Err(Error::InvalidModelConfig {
                    field,
                    reason: "must be at least 1".into(),
                });
            }
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(Error::InvalidModelConfig {
                field: "hidden_size",
                reason: format!(
                    "{} is not a multiple of num_attention_heads {}",
                    self.hidden_size, self.num_attention_heads
                ),
            });
        }
        if !self.head_dim().is_multiple_of(2) {
            return Err(Error::InvalidModelConfig {
                field: "hidden_size",
                reason: format!("head width {} must be even for RoPE", self.head_dim()),
            });
        }
        if !self
            .num_attention_heads
            .is_multiple_of(self.num_key_value_heads)
        {
            return Err(Error::InvalidModelConfig {
                field: "num_key_value_heads",
                reason: format!(
                    "num_attention_heads {} is not a multiple of {}",
                    self.num_attention_heads, self.num_key_value_heads
                ),
            });
        }
        self.ensure_fits(envrl::available_memory())
    }

    /// Builds a randomly initialised model on `device`, deterministically from `seed`.
    ///
    /// # Errors
    /// See [`LmConfig::validate`].
    pub fn init(&self, device: &Device, seed: u64) -> Result<CausalLm> {
        self.validate()?;
        Ok(CausalLm::init(self, device, seed))
    }
}
