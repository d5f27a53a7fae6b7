//! The configuration of a training run: one TOML file, every field overridable from the
//! command line with `--set path.to.field=value`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use envrl::TrainerConfig;
use envrl_algos::{AdvantageConfig, AlgorithmConfig, AuxConfig, LmConfig, Targets};
use serde::{Deserialize, Serialize};

use crate::device::DType;
use crate::run::envs::{EnvConfig, EnvName, RunFacts, TasksConfig};
use crate::run::presets::Preset;
use crate::run::rollout_config::RolloutConfig;

/// The most tasks a split may hold.
pub const MAX_TASKS: usize = 1_000_000;
/// Where fetched registry models live: `$ENVRL_MODELS`, else `~/.cache/envrl-models`.
pub fn models_dir() -> PathBuf {
    std::env::var_os("ENVRL_MODELS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/envrl-models")))
        .unwrap_or_else(|| PathBuf::from(".cache/envrl-models"))
}

/// Where a run's model comes from; written as one string in configs (`tiny`, a path ending in
/// `.gguf`, or a Hugging Face model directory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ModelSource {
    /// A from-scratch tiny model with a word tokenizer over the environment's texts.
    Tiny,
    /// A GGUF file (weights and tokenizer).
    Gguf(PathBuf),
    /// A Hugging Face model directory (`config.json`, safetensors, `tokenizer.json`).
    HfDir(PathBuf),
}

impl From<String> for ModelSource {
    fn from(text: String) -> Self {
        if text == "tiny" {
            ModelSource::Tiny
        } else if text.ends_with(".gguf") {
            ModelSource::Gguf(text.into())
        } else {
            ModelSource::HfDir(text.into())
        }
    }
}

impl From<ModelSource> for String {
    fn from(source: ModelSource) -> Self {
        match source {
            ModelSource::Tiny => "tiny".into(),
            ModelSource::Gguf(path) | ModelSource::HfDir(path) => path.display().to_string(),
        }
    }
}

impl std::str::FromStr for ModelSource {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(text.to_string().into())
    }
}

impl ModelSource {
    /// The file or directory of a pretrained model; `None` for the tiny model.
    pub fn path(&self) -> Option<&Path> {
        match self {
            ModelSource::Tiny => None,
            ModelSource::Gguf(path) | ModelSource::HfDir(path) => Some(path),
        }
    }
}

/// A from-scratch model's sizes (Qwen2 architecture).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TinyModelConfig {
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Width of the MLP.
    pub intermediate_size: usize,
    /// Decoder layers.
    pub layers: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Biases on the q/k/v projections: true is the Qwen2 architecture, false Llama's.
    pub attention_bias: bool,
    /// The output layer shares the token embedding's weights.
    pub tie_word_embeddings: bool,
}

impl Default for TinyModelConfig {
    fn default() -> Self {
        Self {
            hidden_size: 64,
            intermediate_size: 128,
            layers: 2,
            heads: 4,
            kv_heads: 2,
            attention_bias: true,
            tie_word_embeddings: true,
        }
    }
}

impl TinyModelConfig {
    /// The model config for a vocabulary.
    pub fn lm_config(&self, vocab_size: usize) -> LmConfig {
        LmConfig::new(
            vocab_size,
            self.hidden_size,
            self.intermediate_size,
            self.layers,
            self.heads,
            self.kv_heads,
        )
        .with_attention_bias(self.attention_bias)
        .with_tie_word_embeddings(self.tie_word_embeddings)
    }
}

/// The supervised warm start on expert demonstrations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WarmupConfig {
    /// Expert episodes recorded.
    pub episodes: usize,
    /// Optimizer steps (0 skips the warm start).
    pub steps: usize,
    /// Examples per step.
    pub batch_size: usize,
    /// AdamW learning rate.
    pub learning_rate: f64,
    /// Weight of next-token prediction on the prompts besides the responses (0: responses
    /// only); see `BehaviourCloning::context_weight`.
    pub context_weight: f32,
    /// A run directory whose warm-started model (`warm-start.bpk`) to start from instead of
    /// training one: runs that differ only after the warm start (another objective, the same
    /// seed and warm-start settings) share it.
    pub from: Option<std::path::PathBuf>,
}

impl Default for WarmupConfig {
    fn default() -> Self {
        Self {
            episodes: 100,
            steps: 200,
            batch_size: 16,
            learning_rate: 3e-3,
            context_weight: 0.0,
            from: None,
        }
    }
}

/// LoRA fine-tuning: trainable low-rank adapters on the attention and MLP projections, every
/// other parameter frozen (`CausalLm::with_lora`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoraConfig {
    /// Adapter rank; 0 (the default) trains every parameter.
    pub rank: usize,
    /// Scaling numerator: an adapted weight is `W + alpha / rank · A·B`.
    pub alpha: f64,
}

impl Default for LoraConfig {
    fn default() -> Self {
        Self {
            rank: 0,
            alpha: 16.0,
        }
    }
}

/// Everything a run needs; written to `config.toml` in the run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// The environment and its own settings (`[env] name = "alfworld"`, …).
    pub env: EnvConfig,
    /// The preset this config started from: a `--config` file overlays it, so fields the file
    /// leaves out come from the preset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<Preset>,
    /// The model.
    pub model: ModelSource,
    /// Sizes of the tiny model.
    #[serde(default)]
    pub tiny: TinyModelConfig,
    /// LoRA adapters instead of full fine-tuning.
    #[serde(default)]
    pub lora: LoraConfig,
    /// Recompute memory-bound activations in the backward pass instead of keeping them (Burn's
    /// balanced gradient checkpointing): less memory, more compute, the same gradients.
    #[serde(default)]
    pub gradient_checkpointing: bool,
    /// Float type of the weights, activations and gradients: `f32` (the default), `bf16` or
    /// `f16` (on backends that support it; on the CPU, Burn flex converts to f32 for products).
    #[serde(default)]
    pub dtype: DType,
    /// The warm start.
    #[serde(default)]
    pub warmup: WarmupConfig,
    /// Task counts.
    #[serde(default)]
    pub tasks: TasksConfig,
    /// Iterations, batch, learning rate, sampling, evaluation, checkpoints.
    #[serde(default)]
    pub trainer: TrainerConfig,
    /// Estimator, actor loss and auxiliary objectives.
    #[serde(default)]
    pub algorithm: AlgorithmConfig,
    /// Where the rollouts are sampled (this process, or an inference server).
    #[serde(default)]
    pub rollout: RolloutConfig,
}

impl RunConfig {
    /// The `cpu-tiny` preset for an environment ([`Preset::CpuTiny`]).
    ///
    /// # Errors
    /// Never for the built-in tables (the tests build every preset).
    pub fn cpu_tiny(env: EnvName) -> Result<Self> {
        Self::preset(Preset::CpuTiny, env)
    }

    /// A preset's config for an environment: the preset's table, then the environment's
    /// changes ([`EnvName::preset_delta`]).
    ///
    /// # Errors
    /// Never for the built-in tables (the tests build every preset).
    pub fn preset(preset: Preset, env: EnvName) -> Result<Self> {
        let models = models_dir().display().to_string();
        let mut tree: toml::Value = toml::from_str(&preset.table().replace("{models}", &models))
            .with_context(|| format!("the `{preset}` preset's table"))?;
        let table = tree
            .as_table_mut()
            .context("a preset's table is a TOML table")?;
        table.insert("env".into(), toml::Value::try_from(env.default_config())?);
        table.insert("preset".into(), toml::Value::try_from(preset)?);
        let delta: toml::Value = toml::from_str(env.preset_delta(preset))
            .with_context(|| format!("{env}'s changes to the `{preset}` preset"))?;
        overlay(&mut tree, delta);
        tree.try_into()
            .with_context(|| format!("the `{preset}` preset for {env}"))
    }

    /// What the environment's set-up reads of the run besides its own settings.
    pub fn facts(&self) -> RunFacts {
        RunFacts {
            tasks: self.tasks,
            seed: self.trainer.seed,
            max_steps: self.trainer.max_steps,
        }
    }

    /// What `--config` and `--preset` say for `env`: the file over its preset, else the preset
    /// (`cpu-tiny` by default).
    ///
    /// # Errors
    /// As [`RunConfig::from_toml_file_over`], or when the config is for another environment.
    pub fn from_flags(file: Option<&Path>, preset: Option<Preset>, env: EnvName) -> Result<Self> {
        let config = match file {
            Some(path) => Self::from_toml_file_over(path, preset, env)?,
            None => Self::preset(preset.unwrap_or(Preset::CpuTiny), env)?,
        };
        if config.env.name() != env {
            anyhow::bail!("the config is for `{}`, not `{env}`", config.env);
        }
        Ok(config)
    }

    /// Reads a TOML config file over its preset: fields the file leaves out come from the
    /// preset it names (`preset = "…"`), or from `preset` (`--preset`), or from `cpu-tiny`, for
    /// environment `env` unless the file names its own.
    ///
    /// # Errors
    /// When the file cannot be read or parsed, names an unknown key, or names another preset
    /// than `preset`.
    pub fn from_toml_file_over(path: &Path, preset: Option<Preset>, env: EnvName) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file: toml::Table =
            toml::from_str(&text).with_context(|| format!("config file {}", path.display()))?;
        let field = |key: &str| -> Result<Option<String>> {
            Ok(match file.get(key) {
                Some(value) => Some(
                    value
                        .as_str()
                        .with_context(|| {
                            format!("config file {}: `{key}` is not a string", path.display())
                        })?
                        .to_string(),
                ),
                None => None,
            })
        };
        let named = field("preset")?
            .map(|name| toml::Value::String(name).try_into::<Preset>())
            .transpose()
            .with_context(|| format!("config file {}: `preset`", path.display()))?;
        let preset = match (preset, named) {
            (Some(given), Some(named)) if given != named => bail!(
                "--preset {given} with a config file made from `{named}` ({}): drop one of them",
                path.display()
            ),
            (Some(given), _) => given,
            (None, Some(named)) => named,
            (None, None) => Preset::CpuTiny,
        };
        let env = env_named(&file, path)?.unwrap_or(env);
        let mut merged = toml::Value::try_from(Self::preset(preset, env)?)?;
        overlay(&mut merged, toml::Value::Table(file));
        let config: Self = merged
            .try_into()
            .with_context(|| format!("config file {}", path.display()))?;
        config.validate()?;
        Ok(config)
    }

    /// Reads a TOML file; unknown keys are errors that name the key.
    ///
    /// # Errors
    /// When the file cannot be read or parsed.
    pub fn from_toml_file(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut file: toml::Table =
            toml::from_str(&text).with_context(|| format!("config file {}", path.display()))?;
        env_named(&file, path)?;
        default_to_the_global_clip(&mut file);
        let config: Self = toml::Value::Table(file)
            .try_into()
            .with_context(|| format!("config file {}", path.display()))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks what the types do not: names inside fields, the trainer's values and the sizes'
    /// bounds.
    pub(crate) fn validate(&self) -> Result<()> {
        self.env.check(&self.facts())?;
        if self.lora.rank > 0 && !(self.lora.alpha.is_finite() && self.lora.alpha > 0.0) {
            bail!(
                "lora.alpha must be a positive number, got {}",
                self.lora.alpha
            );
        }
        self.trainer.validate()?;
        self.algorithm.validate()?;
        self.rollout.check()?;
        self.check_sampler_settings()?;
        let w = &self.warmup;
        if w.batch_size == 0 {
            bail!("warmup.batch_size must be at least 1, got 0");
        }
        if !(w.learning_rate.is_finite() && w.learning_rate > 0.0) {
            bail!(
                "warmup.learning_rate must be positive and finite, got {}",
                w.learning_rate
            );
        }
        if !(w.context_weight.is_finite() && w.context_weight >= 0.0) {
            bail!(
                "warmup.context_weight must be ≥ 0 and finite, got {}",
                w.context_weight
            );
        }
        for (field, value) in [
            ("tasks.train", self.tasks.train),
            ("tasks.eval", self.tasks.eval),
        ] {
            if value == 0 {
                bail!("{field} must be at least 1, got 0");
            }
            if value > MAX_TASKS {
                bail!(
                    "{field} = {value}: at most {MAX_TASKS} tasks a split (ALFWorld has 3,553 \
                     training games, WebShop 6,910 goals)"
                );
            }
        }
        Ok(())
    }

    /// Refuses sampler settings that cannot take effect: a rollout server for the tiny model
    /// (the engines cannot load its word tokenizer), `recompute_old_logprobs = false` with a
    /// server (a server's rollouts are always rescored with the learner's weights), and a
    /// `rollout_is_cap` where nothing is rescored (the learner sampled with its own weights).
    fn check_sampler_settings(&self) -> Result<()> {
        let t = &self.trainer;
        match &self.rollout.server {
            Some(server) => {
                if self.model == ModelSource::Tiny {
                    bail!(
                        "rollout.server = {:?} needs a pretrained model (`--model`): the engines \
                         cannot load the tiny model's word tokenizer",
                        envrl_algos::serve::redact_credentials(server)
                    );
                }
                if t.recompute_old_logprobs == Some(false) {
                    bail!(
                        "trainer.recompute_old_logprobs = false with rollout.server: a server's \
                         rollouts are always rescored with the learner's weights; remove the \
                         setting"
                    );
                }
            }
            None => {
                if t.rollout_is_cap.is_some() && !t.recomputes_old_logprobs() {
                    bail!(
                        "trainer.rollout_is_cap is set but nothing is rescored: the learner \
                         samples with its own f32 weights, so every weight would be 1; it \
                         applies with a rollout.server, rollout_weights = \"bf16\" or \"int8\", \
                         or max_staleness = 1"
                    );
                }
            }
        }
        Ok(())
    }

    /// The config as TOML.
    ///
    /// # Errors
    /// When a value cannot be represented (never for this struct).
    pub fn to_toml(&self) -> Result<String> {
        Ok(toml::to_string_pretty(self)?)
    }

    /// Applies `path.to.field=value` overrides (the value is read as TOML, or as a string if it
    /// is not valid TOML), re-validating the result.
    ///
    /// # Errors
    /// When an override is malformed or names an unknown field, or the result does not
    /// validate.
    pub fn with_overrides(self, overrides: &[String]) -> Result<Self> {
        let config = self.overridden(overrides)?;
        config.validate()?;
        Ok(config)
    }

    /// [`RunConfig::with_overrides`] without the validation, for a caller that changes more
    /// (command-line flags) and validates the whole.
    ///
    /// # Errors
    /// When an override is malformed or names an unknown field.
    pub(crate) fn overridden(self, overrides: &[String]) -> Result<Self> {
        if overrides.is_empty() {
            return Ok(self);
        }
        let mut tree = toml::Value::try_from(&self)?;
        for item in overrides {
            let (path, raw) = item
                .split_once('=')
                .with_context(|| format!("override `{item}` is not of the form key=value"))?;
            let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::String(raw.to_string()));
            let mut node = &mut tree;
            let keys: Vec<&str> = path.split('.').collect();
            for key in &keys[..keys.len() - 1] {
                node = node
                    .as_table_mut()
                    .and_then(|t| t.get_mut(*key))
                    .with_context(|| format!("override `{item}`: no section `{key}`"))?;
            }
            let table = node
                .as_table_mut()
                .with_context(|| format!("override `{item}`: `{path}` is not inside a section"))?;
            table.insert(keys[keys.len() - 1].to_string(), value);
        }
        tree.try_into().context("after applying the overrides")
    }

    /// Selects the estimator and objectives by name (`--algo`, `--aux`).
    ///
    /// # Errors
    /// When a name is unknown (the message lists the known ones).
    pub fn with_algorithm(mut self, algo: Option<&str>, aux: Option<&str>) -> Result<Self> {
        if let Some(algo) = algo {
            self.algorithm.advantage = AdvantageConfig::from_name(algo)
                .with_context(|| unknown("algorithm", algo, AdvantageConfig::NAMES))?;
        }
        if let Some(aux) = aux {
            let items: Vec<&str> = aux.split(',').map(str::trim).collect();
            if items.iter().any(|item| item.is_empty()) {
                bail!(
                    "--aux `{aux}`: an empty item (a stray comma?); give objectives separated by \
                     commas, or `none`"
                );
            }
            if items.len() > 1 && items.contains(&"none") {
                bail!(
                    "--aux `{aux}`: `none` means no objective and cannot be combined with others"
                );
            }
            self.algorithm.aux = items
                .into_iter()
                .filter(|item| *item != "none")
                .map(|item| self.aux_from_arg(item))
                .collect::<Result<_>>()?;
        }
        Ok(self)
    }
}

impl RunConfig {
    /// One `--aux` item: `NAME` or `NAME=λ0`, where `NAME` may end in `:shuffled` (the
    /// objective's shuffled-target control) or `:shuffled_any` (the earlier control, whose
    /// targets may equal the real ones).
    fn aux_from_arg(&self, item: &str) -> Result<AuxConfig> {
        let (name, lambda0) = match item.split_once('=') {
            Some((name, value)) => {
                let lambda0: f64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|l: &f64| l.is_finite() && *l >= 0.0)
                    .with_context(|| {
                        format!("--aux `{item}`: λ0 must be a number ≥ 0, got `{value}`")
                    })?;
                (name.trim(), Some(lambda0))
            }
            None => (item, None),
        };
        let (name, variant) = match name.split_once(':') {
            Some((name, variant)) => (name, Some(variant)),
            None => (name, None),
        };
        let config = AuxConfig::from_name(name).with_context(|| {
            let mut known = AuxConfig::NAMES.to_vec();
            known.push("none");
            unknown("auxiliary objective", name, &known)
        })?;
        let config = match variant {
            None => config,
            Some(variant @ ("shuffled" | "shuffled_any")) => {
                let targets = match variant {
                    "shuffled" => Targets::Shuffled,
                    _ => Targets::ShuffledAny,
                };
                config.with_targets(targets).with_context(|| {
                    format!("--aux `{item}`: {name} has no shuffled-target control")
                })?
            }
            Some(other) => bail!(
                "--aux `{item}`: unknown variant `{other}` of {name}; expected `{name}`, \
                 `{name}:shuffled` or `{name}:shuffled_any`"
            ),
        };
        Ok(match lambda0 {
            Some(lambda0) => config.with_lambda0(lambda0),
            None => config,
        })
    }
}

/// A recorded config that leaves `trainer.clip` out was written when the global clip was the
/// only one (runs record it since `{ aux_ratio = 1.0 }` became the default): it reads as
/// `global`, so such a run resumes, evaluates and compares as it ran.
fn default_to_the_global_clip(file: &mut toml::Table) {
    let trainer = file
        .entry("trainer")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let Some(trainer) = trainer.as_table_mut() {
        trainer
            .entry("clip")
            .or_insert_with(|| toml::Value::String("global".into()));
    }
}

/// The environment a config file names in its `[env]` table (`name = "…"`), if it names one.
///
/// # Errors
/// When the name is unknown, or the file uses the form before environments had settings
/// (`env = "alfworld"`).
fn env_named(file: &toml::Table, path: &Path) -> Result<Option<EnvName>> {
    let name = match file.get("env") {
        None => return Ok(None),
        Some(toml::Value::String(name)) => bail!(
            "config file {}: `env = \"{name}\"` is the old form; write `[env]` with \
             `name = \"{name}\"` and the environment's settings (prompt, types, eval_split move \
             there; scripts/migrate-run-configs.py rewrites a file)",
            path.display()
        ),
        Some(toml::Value::Table(table)) => match table.get("name") {
            None => return Ok(None),
            Some(name) => name.as_str().with_context(|| {
                format!("config file {}: `env.name` is not a string", path.display())
            })?,
        },
        Some(_) => bail!("config file {}: `env` is not a table", path.display()),
    };
    name.parse()
        .map(Some)
        .with_context(|| format!("config file {}", path.display()))
}

/// Replaces every value of `base` that `top` gives, table by table (lists are replaced whole).
///
/// A table tagged by `name` (an estimator, an objective) that `top` names differently is another
/// variant: it replaces `base`'s whole, so it gets its own defaults and none of the other
/// variant's fields.
pub(crate) fn overlay(base: &mut toml::Value, top: toml::Value) {
    match (base, top) {
        (toml::Value::Table(base_table), toml::Value::Table(top))
            if top
                .get("name")
                .is_some_and(|n| Some(n) != base_table.get("name")) =>
        {
            *base_table = top;
        }
        (toml::Value::Table(base), toml::Value::Table(top)) => {
            for (key, value) in top {
                match base.get_mut(&key) {
                    Some(existing) => overlay(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, top) => *base = top,
    }
}

fn unknown(kind: &str, name: &str, known: &[&str]) -> String {
    format!(
        "unknown {kind} `{name}`; expected one of: {}",
        known.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use EnvName::{Alfworld, Keydoor, Webshop};
    use envrl::Schedule;

    #[test]
    fn presets_round_trip_through_toml_and_overrides_apply() {
        let config = RunConfig::cpu_tiny(Alfworld).unwrap();
        let text = config.to_toml().unwrap();
        let back: RunConfig = toml::from_str(&text).unwrap();
        assert_eq!(back, config);
        let changed = config
            .with_overrides(&["trainer.learning_rate=0.5".into(), "tasks.train=7".into()])
            .unwrap();
        assert_eq!(changed.trainer.learning_rate, 0.5);
        assert_eq!(changed.tasks.train, 7);
    }

    #[test]
    fn sampler_settings_that_cannot_take_effect_are_refused() {
        let keydoor = || RunConfig::cpu_tiny(Keydoor).unwrap();
        let refused = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            keydoor().with_overrides(&sets).unwrap_err().to_string()
        };
        let err = refused(&["rollout.server=spawn:llama-cpp"]);
        assert!(err.contains("needs a pretrained model"), "{err}");
        let err = refused(&["trainer.rollout_is_cap=2"]);
        assert!(err.contains("nothing is rescored"), "{err}");
        let rescored = [
            "trainer.rollout_is_cap=2",
            "trainer.rollout_weights=\"bf16\"",
        ];
        let sets: Vec<String> = rescored.iter().map(|s| s.to_string()).collect();
        assert!(keydoor().with_overrides(&sets).is_ok());
        let mut served = keydoor();
        served.model = ModelSource::Gguf("model.gguf".into());
        served.rollout.server = Some("spawn:llama-cpp".into());
        assert!(served.validate().is_ok());
        served.trainer.recompute_old_logprobs = Some(false);
        let err = served.validate().unwrap_err().to_string();
        assert!(err.contains("always rescored"), "{err}");
    }

    #[test]
    fn every_preset_builds_for_every_environment_and_validates() {
        for preset in Preset::ALL {
            for &env in EnvName::ALL {
                let config = RunConfig::preset(preset, env).unwrap();
                assert_eq!((config.env.name(), config.preset), (env, Some(preset)));
                config.validate().unwrap();
            }
        }
    }

    /// ALFWorld's settings in a config.
    fn alfworld(config: &RunConfig) -> &crate::run::envs::alfworld::AlfworldSettings {
        match &config.env {
            EnvConfig::Alfworld(settings) => settings,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_the_from_scratch_presets_narrow_the_task_types_and_the_prompt() {
        use envrl_envs::PromptStyle;
        let tiny = RunConfig::cpu_tiny(Alfworld).unwrap();
        assert_eq!(alfworld(&tiny).types, ["pick"]);
        assert_eq!(alfworld(&tiny).prompt, PromptStyle::Compact);
        let EnvConfig::Webshop(shop) = RunConfig::cpu_tiny(Webshop).unwrap().env else {
            panic!()
        };
        assert_eq!(shop.prompt, PromptStyle::Compact);
        for preset in [Preset::Smollm2_135m, Preset::Paper1_5b] {
            let config = RunConfig::preset(preset, Alfworld).unwrap();
            assert!(alfworld(&config).types.is_empty(), "{preset}");
            assert_eq!(alfworld(&config).prompt, PromptStyle::VerlAgent, "{preset}");
        }
        // The corridor has no prompt setting: the field is unknown there.
        let err = RunConfig::cpu_tiny(Keydoor)
            .unwrap()
            .with_overrides(&["env.prompt=compact".into()])
            .unwrap_err();
        assert!(
            format!("{err:#}").contains("unknown field `prompt`"),
            "{err:#}"
        );
        let err = RunConfig::cpu_tiny(Alfworld)
            .unwrap()
            .with_overrides(&["env.prompt=short".into()])
            .unwrap_err();
        // The enum's variants, listed by serde.
        assert!(
            format!("{err:#}").contains("`verl-agent`, `verl-agent-2025-10`, `compact`"),
            "{err:#}"
        );
        let err = RunConfig::cpu_tiny(Alfworld)
            .unwrap()
            .with_overrides(&["env.types=[\"fly\"]".into()])
            .unwrap_err();
        assert!(
            format!("{err:#}").contains("unknown ALFWorld task type `fly`"),
            "{err:#}"
        );
    }

    #[test]
    fn a_file_names_its_environment_in_env_and_the_old_form_says_how_to_migrate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        // Another environment's table replaces the preset's whole: its own defaults.
        std::fs::write(&path, "[env]\nname = \"sokoban\"\nboxes = 2\n").unwrap();
        let config = RunConfig::from_toml_file_over(&path, None, Alfworld).unwrap();
        let EnvConfig::Sokoban(rooms) = &config.env else {
            panic!("{:?}", config.env)
        };
        assert_eq!((rooms.boxes, rooms.rows), (2, 6));
        // Settings without a name are the given environment's, over its preset.
        std::fs::write(&path, "[env]\neval_split = \"valid_seen\"\n").unwrap();
        let config = RunConfig::from_toml_file_over(&path, None, Alfworld).unwrap();
        assert_eq!(alfworld(&config).eval_split, "valid_seen");
        assert_eq!(alfworld(&config).types, ["pick"]);
        std::fs::write(&path, "[env]\nname = \"alfworld\"\nsplit = \"x\"\n").unwrap();
        let err = RunConfig::from_toml_file_over(&path, None, Alfworld).unwrap_err();
        assert!(
            format!("{err:#}").contains("unknown field `split`"),
            "{err:#}"
        );
        std::fs::write(&path, "env = \"alfworld\"\n").unwrap();
        for err in [
            RunConfig::from_toml_file_over(&path, None, Alfworld).unwrap_err(),
            RunConfig::from_toml_file(&path).unwrap_err(),
        ] {
            assert!(format!("{err:#}").contains("old form"), "{err:#}");
        }
    }

    #[test]
    fn a_recorded_config_without_a_clip_ran_the_global_clip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        // A fresh run records its clip: the default, the objectives capped at the policy's norm.
        let fresh = RunConfig::cpu_tiny(Alfworld).unwrap();
        assert_eq!(fresh.trainer.clip, envrl::GradClip::AuxRatio(1.0));
        let text = fresh.to_toml().unwrap();
        assert!(text.contains("[trainer.clip]\naux_ratio = 1.0"), "{text}");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(RunConfig::from_toml_file(&path).unwrap(), fresh);
        // One recorded before the default changed left the global clip out.
        let before = text.replace("[trainer.clip]\naux_ratio = 1.0\n", "");
        std::fs::write(&path, before).unwrap();
        let recorded = RunConfig::from_toml_file(&path).unwrap();
        assert_eq!(recorded.trainer.clip, envrl::GradClip::Global);
    }

    #[test]
    fn worlds_state_their_example_budgets_and_action_forms_and_configs_do_not() {
        let info = |env: EnvName| {
            let config = RunConfig::cpu_tiny(env).unwrap();
            config.env.setup(&config.facts()).unwrap().world.info
        };
        let webshop = info(Webshop);
        assert_eq!(
            webshop.example_budgets,
            envrl_envs::webshop::EXAMPLE_BUDGETS
        );
        assert_eq!(webshop.description, "WebShop online shopping");
        let alfworld = info(Alfworld);
        assert_eq!(alfworld.example_budgets, envrl::ExampleBudgets::default());
        assert_eq!(alfworld.noop_observations, ["Nothing happens."]);
        assert_eq!(alfworld.actions, envrl::ActionForm::Tagged);
        // The key-and-door world replies with bare actions; its inverse dynamics predicts them.
        assert_eq!(info(Keydoor).actions, envrl::ActionForm::Bare);
        // `--aux` selects the objectives with their defaults on every world: the world's facts
        // come with the data, not through the config.
        for env in [Webshop, Keydoor] {
            let config = RunConfig::preset(Preset::Paper1_5b, env)
                .unwrap()
                .with_algorithm(None, Some("state_prediction,inverse_dynamics"))
                .unwrap();
            let defaults: Vec<AuxConfig> = ["state_prediction", "inverse_dynamics"]
                .map(|n| AuxConfig::from_name(n).unwrap())
                .into();
            assert_eq!(config.algorithm.aux, defaults);
        }
    }

    #[test]
    fn a_file_naming_another_estimator_than_the_preset_gets_that_estimators_defaults() {
        for name in ["rloo", "gigpo", "ppo"] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("run.toml");
            std::fs::write(&path, format!("[algorithm.advantage]\nname = \"{name}\"\n")).unwrap();
            let config = RunConfig::from_toml_file_over(&path, None, Alfworld)
                .unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(config.algorithm.advantage.name(), name);
            assert_eq!(
                config.algorithm.advantage,
                envrl_algos::AdvantageConfig::from_name(name).unwrap()
            );
        }
        // The same name keeps merging field by field.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.toml");
        std::fs::write(
            &path,
            "[algorithm.advantage]\nname = \"grpo\"\nepsilon = 0.5\n",
        )
        .unwrap();
        let config = RunConfig::from_toml_file_over(&path, None, Alfworld).unwrap();
        let envrl_algos::AdvantageConfig::Grpo(g) = &config.algorithm.advantage else {
            panic!("{:?}", config.algorithm.advantage)
        };
        assert_eq!((g.epsilon, g.invalid_penalty), (0.5, 0.1));
    }

    #[test]
    fn aux_weights_and_placebos_from_the_command_line_and_from_toml() {
        let config = RunConfig::cpu_tiny(Alfworld)
            .unwrap()
            .with_algorithm(None, Some("state_prediction=0.05,inverse_dynamics=0"))
            .unwrap();
        let schedules: Vec<Schedule> = config.algorithm.aux.iter().map(|a| *a.schedule()).collect();
        assert_eq!(
            schedules,
            vec![Schedule::Cosine { start: 0.05 }, Schedule::None]
        );
        let err = RunConfig::cpu_tiny(Alfworld)
            .unwrap()
            .with_algorithm(None, Some("state_prediction=-1"))
            .unwrap_err();
        assert!(format!("{err:#}").contains("λ0"), "{err:#}");
        // The placebo as docs/training.md writes it in a config file.
        let text = "[[aux]]\nname = \"state_prediction\"\nschedule = { kind = \"none\" }\n";
        let parsed: AlgorithmConfig = toml::from_str(text).unwrap();
        assert_eq!(*parsed.aux[0].schedule(), Schedule::None);
    }

    #[test]
    fn an_unusable_rollout_server_is_refused_with_the_config() {
        for (server, says) in [
            ("spawn:sglang", "envrl starts"),
            ("https://a:8000", "plain HTTP only"),
            ("a:8000", "neither"),
            ("http://a:8000", "set rollout.policy_dir"),
        ] {
            let mut config = RunConfig::cpu_tiny(EnvName::Keydoor).unwrap();
            config.rollout.server = Some(server.into());
            let err = config.validate().unwrap_err();
            assert!(format!("{err:#}").contains(says), "{server}: {err:#}");
        }
    }

    #[test]
    fn empty_or_contradictory_aux_lists_are_refused() {
        let config = || RunConfig::cpu_tiny(EnvName::Keydoor).unwrap();
        for (aux, says) in [
            (",", "an empty item"),
            ("state_prediction,", "an empty item"),
            ("", "an empty item"),
            ("none,state_prediction", "cannot be combined"),
            ("state_prediction, none", "cannot be combined"),
        ] {
            let err = config().with_algorithm(None, Some(aux)).unwrap_err();
            assert!(format!("{err:#}").contains(says), "{aux}: {err:#}");
        }
        let none = config().with_algorithm(None, Some(" none ")).unwrap();
        assert!(none.algorithm.aux.is_empty());
    }

    #[test]
    fn the_shuffled_control_is_selected_from_the_command_line_and_measured_objectives_beside_it() {
        let config = RunConfig::cpu_tiny(Alfworld)
            .unwrap()
            .with_algorithm(
                None,
                Some("state_prediction:shuffled=0.2,state_prediction=0,inverse_dynamics:shuffled"),
            )
            .unwrap();
        assert_eq!(
            config.algorithm.label(),
            "grpo + state_prediction:shuffled(cosine 0.2) + state_prediction(placebo) + \
             inverse_dynamics:shuffled(cosine 0.2)"
        );
        // Recorded in the config and read back.
        let back: RunConfig = toml::from_str(&config.to_toml().unwrap()).unwrap();
        assert_eq!(back.algorithm, config.algorithm);
        assert!(config.to_toml().unwrap().contains("targets = \"shuffled\""));
        for (aux, expected) in [
            ("state_prediction:scrambled", "unknown variant `scrambled`"),
            (
                "state_prediction_in_sequence:shuffled",
                "has no shuffled-target control",
            ),
            (
                "state_prediction,state_prediction=0",
                "two objectives named `state_prediction`",
            ),
        ] {
            let err = RunConfig::cpu_tiny(Alfworld)
                .unwrap()
                .with_algorithm(None, Some(aux))
                .and_then(|c| c.with_overrides(&["trainer.seed=1".into()]))
                .unwrap_err();
            assert!(format!("{err:#}").contains(expected), "{aux}: {err:#}");
        }
    }

    #[test]
    fn impossible_numbers_are_refused_naming_the_field() {
        let config = RunConfig::cpu_tiny(Keydoor).unwrap();
        for (set, field) in [
            ("warmup.batch_size=0", "warmup.batch_size"),
            ("warmup.learning_rate=nan", "warmup.learning_rate"),
            ("warmup.learning_rate=-1", "warmup.learning_rate"),
            ("algorithm.loss.kl_coef=nan", "kl_coef"),
            ("algorithm.loss.clip_low=-1", "clip_low"),
            ("algorithm.loss.dual_clip=0", "dual_clip"),
            ("algorithm.advantage.invalid_penalty=nan", "invalid_penalty"),
            ("tasks.eval=0", "tasks.eval"),
        ] {
            let err = config.clone().with_overrides(&[set.into()]).unwrap_err();
            assert!(format!("{err:#}").contains(field), "{set}: {err:#}");
        }
    }

    #[test]
    fn the_paper_preset_trains_with_the_library_s_paper_settings() {
        let preset = RunConfig::preset(Preset::Paper1_5b, Alfworld).unwrap();
        // The preset adds micro-batching (memory) and checkpoints (a long run) to them.
        let expected = envrl::TrainerConfig {
            micro_batch_rows: 8,
            checkpoint_every: 10,
            ..envrl::TrainerConfig::paper_alfworld()
        };
        assert_eq!(preset.trainer, expected);
    }

    #[test]
    fn a_partial_config_file_overlays_its_preset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[env]\nname = \"alfworld\"\n[trainer]\niterations = 3\n",
        )
        .unwrap();
        let config = RunConfig::from_toml_file_over(&path, None, Keydoor).unwrap();
        let preset = RunConfig::preset(Preset::CpuTiny, Alfworld).unwrap();
        // The missing fields are the preset's, not the library defaults (150 iterations, …).
        assert_eq!(config.trainer.iterations, 3);
        assert_eq!(config.trainer.learning_rate, preset.trainer.learning_rate);
        assert_eq!(config.warmup, preset.warmup);
        // A preset named in the file is used; another one given with it is an error.
        std::fs::write(
            &path,
            "preset = \"smollm2-135m\"\n[env]\nname = \"alfworld\"\n",
        )
        .unwrap();
        let config = RunConfig::from_toml_file_over(&path, None, Alfworld).unwrap();
        assert_eq!(config.trainer.micro_batch_rows, 2);
        let err =
            RunConfig::from_toml_file_over(&path, Some(Preset::CpuTiny), Alfworld).unwrap_err();
        assert!(
            format!("{err:#}").contains("made from `smollm2-135m`"),
            "{err:#}"
        );
        std::fs::write(&path, "preset = \"bogus\"\n").unwrap();
        let err = RunConfig::from_toml_file_over(&path, None, Alfworld).unwrap_err();
        assert!(format!("{err:#}").contains("cpu-tiny"), "{err:#}");
        // A run's own config.toml reads back as itself.
        std::fs::write(&path, preset.to_toml().unwrap()).unwrap();
        assert_eq!(
            RunConfig::from_toml_file_over(&path, None, Alfworld).unwrap(),
            preset
        );
    }

    #[test]
    fn typos_and_unknown_names_are_named() {
        let config = RunConfig::cpu_tiny(Keydoor).unwrap();
        let err = config
            .clone()
            .with_overrides(&["trainer.learnig_rate=0.5".into()])
            .unwrap_err();
        assert!(format!("{err:#}").contains("learnig_rate"), "{err:#}");
        let err = config
            .clone()
            .with_algorithm(Some("ppo2"), None)
            .unwrap_err();
        assert!(err.to_string().contains("grpo, ppo, rloo, gigpo"), "{err}");
        let err = config
            .clone()
            .with_algorithm(None, Some("state-predict"))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("state_prediction, inverse_dynamics, state_prediction_in_sequence, none"),
            "{err}"
        );
        // Names inside a config file: the error lists what the enum has.
        for (set, expected) in [
            ("env.name=\"minecraft\"", "alfworld"),
            ("dtype=\"f8\"", "bf16"),
            ("preset=\"cpu-huge\"", "smollm2-135m"),
        ] {
            let err = config.clone().with_overrides(&[set.into()]).unwrap_err();
            assert!(format!("{err:#}").contains(expected), "{set}: {err:#}");
        }
    }
}
