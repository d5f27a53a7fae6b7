//! `envrl export`: a run directory's trained model (its latest good checkpoint, or a chosen
//! one) rebuilt as the run built it and handed to [`envrl_algos::export::Export`].

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use burn::tensor::Device;
use envrl::{latest_checkpoint, load_checkpoint_model};
use envrl_algos::export::{Export, ExportOptions, ExportReport, ExportTokenizer};
use envrl_algos::{CausalLm, LmConfig, Pretrained, WordTokenizer};

use super::config::{ModelSource, RunConfig};

/// The checkpoint to export: `dir/checkpoints/<name>`, or the latest good one.
///
/// # Errors
/// When the named checkpoint does not exist, or the run has none.
pub fn checkpoint_to_export(dir: &Path, name: Option<&str>) -> Result<PathBuf> {
    let checkpoints = dir.join("checkpoints");
    match name {
        Some(name) => {
            let path = checkpoints.join(name);
            if !path.is_dir() {
                bail!("{}: no such checkpoint", path.display());
            }
            Ok(path)
        }
        None => latest_checkpoint(&checkpoints).with_context(|| {
            format!(
                "{} holds no complete checkpoint (a run writes one every \
                 trainer.checkpoint_every iterations and at its end)",
                checkpoints.display()
            )
        }),
    }
}

/// `path` made absolute through its nearest existing ancestor (links resolved), for comparing
/// a path that does not exist yet with one that does.
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    let mut base = absolute.as_path();
    loop {
        if let Ok(real) = base.canonicalize() {
            return rest.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (base.parent(), base.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                base = parent;
            }
            _ => return absolute,
        }
    }
}

/// Refuses an export `output` inside the run directory `dir` (or the run directory itself): a
/// run directory holds what the run writes, and its checkpoints and lock are pruned and
/// checked by the run.
fn ensure_outside_run(dir: &Path, output: &Path) -> Result<()> {
    let (run, out) = (resolved(dir), resolved(output));
    if out.starts_with(&run) {
        bail!(
            "--output {}: inside the run directory {}; write the export beside it (e.g. {}-export)",
            output.display(),
            dir.display(),
            dir.display()
        );
    }
    Ok(())
}

/// Exports the model of the run in `dir` (`checkpoint`: a checkpoint's directory name, else the
/// latest good one) to `output`.
///
/// # Errors
/// When the run's config, tokenizer, model file or checkpoint cannot be read, or the export
/// fails (see [`Export::write`]).
pub fn export_run(
    dir: &Path,
    checkpoint: Option<&str>,
    options: &ExportOptions,
    output: &Path,
) -> Result<ExportReport> {
    ensure_outside_run(dir, output)?;
    let config = RunConfig::from_toml_file(&dir.join("config.toml"))?;
    let checkpoint = checkpoint_to_export(dir, checkpoint)?;
    let device = Device::flex();
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "envrl".into());
    // The run's model as it built it (LoRA adapters included), with the checkpoint's weights.
    let export = |model: CausalLm, lm: &LmConfig, tokenizer: ExportTokenizer<'_>| {
        let model = match config.lora.rank {
            0 => model,
            rank => model.with_lora(rank, config.lora.alpha, config.trainer.seed),
        };
        let model = load_checkpoint_model(&checkpoint, model)?;
        let export = Export {
            model: &model,
            config: lm,
            tokenizer,
            base_model: config.model.path(),
            name: &name,
        };
        anyhow::Ok(export.write(options, output)?)
    };
    match &config.model {
        ModelSource::Tiny => {
            let tokenizer = WordTokenizer::load(dir.join("tokenizer.json"))?;
            let lm = config
                .tiny
                .lm_config(envrl::Tokenizer::vocab_size(&tokenizer));
            let model = lm.init(&device, config.trainer.seed)?;
            export(model, &lm, ExportTokenizer::Word(&tokenizer))
        }
        ModelSource::Gguf(path) | ModelSource::HfDir(path) => {
            let pretrained = Pretrained::load(path, &device)?;
            export(
                pretrained.model,
                &pretrained.config,
                ExportTokenizer::Hf(&pretrained.tokenizer),
            )
        }
    }
}

/// Exports the pretrained model at `path` (a `.gguf` file or a Hugging Face directory) as envrl
/// loads it — a GGUF dequantised — to `output`: what a server must serve for a run that starts
/// from `path` and samples its rollouts there (`rollout.server`), so that server and learner
/// hold the same weights.
///
/// # Errors
/// When the model cannot be loaded, or the export fails (see [`Export::write`]).
pub fn export_pretrained(
    path: &Path,
    options: &ExportOptions,
    output: &Path,
) -> Result<ExportReport> {
    let pretrained = Pretrained::load(path, &Device::flex())?;
    let name = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "envrl".into());
    let export = Export {
        model: &pretrained.model,
        config: &pretrained.config,
        tokenizer: ExportTokenizer::Hf(&pretrained.tokenizer),
        base_model: Some(path),
        name: &name,
    };
    Ok(export.write(options, output)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_export_into_the_run_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("run");
        std::fs::create_dir_all(run.join("checkpoints")).unwrap();
        for inside in [
            run.clone(),
            run.join("hf"),
            run.join("checkpoints/new/deeper"),
            run.join("../run/x"),
        ] {
            let err = ensure_outside_run(&run, &inside).unwrap_err().to_string();
            assert!(err.contains("inside the run directory"), "{err}");
        }
        for outside in [tmp.path().join("run-export"), tmp.path().join("runs/hf")] {
            assert!(ensure_outside_run(&run, &outside).is_ok());
        }
        // A relative path and a link reach the same directory.
        #[cfg(unix)]
        {
            let link = tmp.path().join("link");
            std::os::unix::fs::symlink(&run, &link).unwrap();
            assert!(ensure_outside_run(&run, &link.join("hf")).is_err());
        }
    }
}
