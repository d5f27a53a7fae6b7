//! A run's tokenizer and model: a word tokenizer and a fresh tiny model, or a pretrained one;
//! LoRA adapters on top when configured.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use burn::module::Module;
use burn::tensor::Device;
use envrl::{Demonstration, Environment, Tokenizer};
use envrl_algos::{AuxConfig, CausalLm, Pretrained};

use super::config::{ModelSource, RunConfig};
use super::corpus::{TextCollector, word_tokenizer};
use super::envs::EnvSetup;

/// A run's tokenizer and model, and for the tiny model the expert's episodes it was built from
/// (encoded with its tokenizer, for the warm start).
pub(crate) struct LoadedModel {
    pub tokenizer: Arc<dyn Tokenizer>,
    pub model: CausalLm,
    pub demonstrations: Option<Vec<Demonstration>>,
}

/// The tokenizer and the model: the tiny model gets a word tokenizer over everything the
/// expert's episodes encode and over every built-in objective's prompt words (so that arms
/// with and without objectives share one vocabulary), saved as `dir/tokenizer.json`; a
/// pretrained model brings its own; `description` is how the objectives' prompts name the world.
/// LoRA adapters are added when `config.lora.rank > 0` (`say` reports them).
pub(crate) fn load<E: Environment>(
    config: &RunConfig,
    setup: &EnvSetup<E>,
    description: &str,
    dir: &Path,
    device: &Device,
    say: &dyn Fn(String),
) -> Result<LoadedModel> {
    let mut loaded = match &config.model {
        ModelSource::Tiny => {
            let collector = TextCollector::default();
            let demos = (setup.demonstrate)(&collector, config.warmup.episodes);
            let objectives: Vec<_> = AuxConfig::all()
                .into_iter()
                .map(|aux| aux.with_environment(description).build())
                .collect();
            let tokenizer = word_tokenizer(collector.texts(), &objectives);
            let path = dir.join("tokenizer.json");
            tokenizer
                .save(&path)
                .with_context(|| format!("writing {}", path.display()))?;
            let demonstrations = Some(collector.retokenize(demos, &tokenizer));
            let model = config
                .tiny
                .lm_config(tokenizer.vocab_size())
                .init(device, config.trainer.seed)?;
            LoadedModel {
                tokenizer: Arc::new(tokenizer),
                model,
                demonstrations,
            }
        }
        ModelSource::Gguf(path) | ModelSource::HfDir(path) => {
            let pretrained = Pretrained::load(path, device)?;
            LoadedModel {
                tokenizer: Arc::new(pretrained.tokenizer),
                model: pretrained.model,
                demonstrations: None,
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
    Ok(loaded)
}
