//! A run's tokenizer and model: a word tokenizer and a fresh tiny model, or a pretrained one;
//! LoRA adapters on top when configured.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use burn::module::Module;
use burn::tensor::Device;
use envrl::{Demonstration, RolloutWeights, Tokenizer};
use envrl::{available_memory, shortfall};
use envrl_algos::recipe::{builtin_objectives, word_tokenizer};
use envrl_algos::{CausalLm, HfTokenizer, LmConfig, Pretrained, WordTokenizer};

use super::config::{ModelSource, RunConfig};
use super::corpus::TextCollector;
use super::envs::EnvSetup;

/// A run's tokenizer and model, and for the tiny model the expert's episodes it was built from
/// (encoded with its tokenizer, for the warm start).
pub(crate) struct LoadedModel {
    pub tokenizer: Arc<dyn Tokenizer>,
    pub model: CausalLm,
    pub demonstrations: Option<Vec<Demonstration>>,
    /// The word tokenizer built for the tiny model, which the run directory keeps.
    word_tokenizer: Option<Arc<WordTokenizer>>,
    /// A pretrained model's tokenizer, which a rollout server is given with [`Self::lm`] (so
    /// the model is read once).
    pub hf_tokenizer: Option<Arc<HfTokenizer>>,
    /// The model's architecture.
    pub lm: LmConfig,
}

impl LoadedModel {
    /// Writes the tiny model's word tokenizer as `dir/tokenizer.json` (a pretrained model's
    /// tokenizer stays with its model file).
    pub(crate) fn save_tokenizer(&self, dir: &Path) -> Result<()> {
        if let Some(tokenizer) = &self.word_tokenizer {
            let path = dir.join("tokenizer.json");
            tokenizer
                .save(&path)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }
}

/// The tokenizer and the model: the tiny model gets a word tokenizer over everything the
/// expert's episodes encode and over every built-in objective's prompt words (so that arms
/// with and without objectives share one vocabulary), to be saved with
/// [`LoadedModel::save_tokenizer`]; a pretrained model brings its own.
/// LoRA adapters are added when `config.lora.rank > 0` (`say` reports them).
pub(crate) fn load(
    config: &RunConfig,
    setup: &EnvSetup,
    device: &Device,
    say: &dyn Fn(String),
) -> Result<LoadedModel> {
    let mut loaded = match &config.model {
        ModelSource::Tiny => {
            let collector = TextCollector::default();
            let demos = (setup.demonstrate)(&collector, config.warmup.episodes);
            let objectives = builtin_objectives();
            let tokenizer = word_tokenizer(collector.texts(), &objectives, &setup.world.info);
            let demonstrations = Some(collector.retokenize(demos, &tokenizer));
            let lm_config = config.tiny.lm_config(tokenizer.vocab_size());
            ensure_run_fits(config, &lm_config, available_memory())?;
            let model = lm_config.init(device, config.trainer.seed)?;
            let tokenizer = Arc::new(tokenizer);
            LoadedModel {
                tokenizer: tokenizer.clone(),
                model,
                demonstrations,
                word_tokenizer: Some(tokenizer),
                hf_tokenizer: None,
                lm: lm_config,
            }
        }
        ModelSource::Gguf(path) | ModelSource::HfDir(path) => {
            let pretrained = Pretrained::load(path, device)?;
            ensure_run_fits(config, &pretrained.config, available_memory())?;
            let tokenizer = Arc::new(pretrained.tokenizer);
            LoadedModel {
                tokenizer: tokenizer.clone(),
                model: pretrained.model,
                demonstrations: None,
                word_tokenizer: None,
                lm: pretrained.config,
                hf_tokenizer: Some(tokenizer),
            }
        }
    };
    if config.lora.rank > 0 {
        let total = loaded.model.num_params();
        loaded.model =
            loaded
                .model
                .with_lora(config.lora.rank, config.lora.alpha, config.trainer.seed);
        let adapters = loaded.model.adapter_parameters();
        say(format!(
            "LoRA: rank {}, {adapters} trainable adapter parameters ({:.2} % of {total})",
            config.lora.rank,
            100.0 * adapters as f64 / total as f64
        ));
    }
    // A lighter acting copy the model cannot have is refused now, not after the warm start
    // (the trainer checks again).
    loaded
        .model
        .check_acting_copy(config.trainer.rollout_weights)?;
    Ok(loaded)
}

/// Refuses a run whose model, optimizer state and rollouts cannot fit in `available` bytes,
/// before the warm start or the first rollout allocates them: for a full fine-tune, the f32
/// weights and a reference copy, gradients and two AdamW moments for every parameter (5 × the
/// weights); for a LoRA run, the frozen weights (the forward pass applies the adapters as
/// products of width `rank` and materialises no adapted matrix; the reference shares the frozen
/// base) and the adapters with their reference copy, gradients and moments (5 × the adapters);
/// then the key/value caches of
/// the `groups × group_size` episodes one iteration plays, each at least `max_new_tokens` long,
/// and a lighter acting copy's packed matrices (2 bytes a weight in bf16, 1.125 in int8; prompts
/// and activations come on top).
fn ensure_run_fits(config: &RunConfig, lm: &LmConfig, available: Option<u64>) -> Result<()> {
    lm.ensure_fits(available)?;
    let trainer = &config.trainer;
    let weights = lm.parameter_count() * 4;
    let (training, trained) = match config.lora.rank {
        0 => (5 * weights, "optimizer state"),
        rank => (
            weights + 5 * lm.lora_parameter_count(rank) * 4,
            "LoRA adapters with their optimizer state",
        ),
    };
    let acting = match trainer.rollout_weights {
        RolloutWeights::F32 => 0,
        RolloutWeights::Bf16 => 2 * lm.parameter_count(),
        RolloutWeights::Int8 => lm.parameter_count() * 9 / 8,
    };
    let episodes = trainer.groups as u128 * trainer.group_size as u128;
    let positions = trainer.sampling.max_new_tokens as u128;
    let caches = episodes * positions * lm.kv_bytes_per_position();
    let what = format!(
        "the weights, {trained} and the key/value caches of trainer.groups × \
         trainer.group_size = {episodes} episodes of at least sampling.max_new_tokens = \
         {positions} positions{}",
        if acting > 0 {
            format!(", and the {} acting copy", trainer.rollout_weights)
        } else {
            String::new()
        }
    );
    match shortfall(&what, training + acting + caches, available) {
        Some(reason) => anyhow::bail!("the run cannot fit in memory: {reason}"),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_batch_that_cannot_fit_is_refused_naming_its_fields() {
        let mut config = RunConfig::cpu_tiny(crate::run::envs::EnvName::Keydoor).unwrap();
        let lm = config.tiny.lm_config(200);
        assert!(ensure_run_fits(&config, &lm, Some(24 << 30)).is_ok());
        config.trainer.group_size = 4_000_000_000;
        let err = ensure_run_fits(&config, &lm, Some(24 << 30))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("trainer.group_size") && err.contains("24.0 GiB"),
            "{err}"
        );
    }

    #[test]
    fn a_lora_run_counts_the_optimizer_state_of_its_adapters_alone() {
        let mut config = RunConfig::cpu_tiny(crate::run::envs::EnvName::Keydoor).unwrap();
        config.trainer.groups = 1;
        config.trainer.group_size = 1;
        // A model of ~1.1e9 parameters (4.4 GB of f32 weights): a full fine-tune needs 5 ×,
        // a rank-8 LoRA run a little over 1 ×.
        let lm = LmConfig::new(32_000, 2048, 5632, 22, 32, 4);
        let available = Some(6 << 30);
        let err = ensure_run_fits(&config, &lm, available)
            .unwrap_err()
            .to_string();
        assert!(err.contains("optimizer state"), "{err}");
        config.lora.rank = 8;
        ensure_run_fits(&config, &lm, available).unwrap();
        assert!(lm.lora_parameter_count(8) * 100 < lm.parameter_count());
    }
}
