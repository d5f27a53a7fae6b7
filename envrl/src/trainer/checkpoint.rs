use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::optim::ModuleOptimizer;
use burn::store::ModuleRecord;
use burn::tensor::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::crash_point::crash_point;
use crate::critic::Critic;
use crate::error::{Error, Result};
use crate::trainer::RunStreams;

/// The version of the checkpoint layout written by this crate.
///
/// 3: a `manifest.json` with the SHA-256 of every file, checked on load. 2 (the same files
/// without a manifest) is still read, unverified; 1 (one shared random stream) is not.
pub const CHECKPOINT_FORMAT: u32 = 3;

/// The oldest format this crate reads.
const OLDEST_FORMAT: u32 = 2;

const MODEL_FILE: &str = "model.bpk";
const REFERENCE_FILE: &str = "reference.bpk";
const OPTIMIZER_FILE: &str = "optimizer.bpk";
const STATE_FILE: &str = "state.json";
const MANIFEST_FILE: &str = "manifest.json";
/// The file of a checkpoint that holds the next iteration's rollout when it was played ahead
/// (`max_staleness` 1), in MessagePack.
pub const PENDING_ROLLOUT_FILE: &str = "pending_rollout.msgpack";
/// The file of a checkpoint that holds the trainable weights the run started from (for
/// `policy/weight_distance`), in MessagePack.
pub const START_WEIGHTS_FILE: &str = "start_weights.msgpack";
/// The trainer's own files of a checkpoint besides the state, read back when present.
const TRAINER_FILES: [&str; 2] = [PENDING_ROLLOUT_FILE, START_WEIGHTS_FILE];

/// The bytes of the trainer's checkpoint file `file` holding `value` (MessagePack: every float
/// bit for bit, NaN included).
pub(crate) fn encode_trainer_file<T: Serialize>(value: &T, file: &str) -> Result<Vec<u8>> {
    rmp_serde::to_vec(value).map_err(|e| Error::Checkpoint {
        path: file.into(),
        reason: format!("encoding: {e}"),
    })
}

/// Reads what [`encode_trainer_file`] wrote to `file` of the checkpoint `dir`, given its
/// loaded [`CheckpointState::files`]; `None` when the checkpoint has no such file.
pub(crate) fn decode_trainer_file<T: serde::de::DeserializeOwned>(
    files: &BTreeMap<String, Vec<u8>>,
    dir: &Path,
    file: &str,
) -> Result<Option<T>> {
    let Some(bytes) = files.get(file) else {
        return Ok(None);
    };
    rmp_serde::from_slice(bytes)
        .map(Some)
        .map_err(|e| Error::Checkpoint {
            path: dir.join(file),
            reason: format!("does not read: {e}"),
        })
}

/// The SHA-256 of every file of a checkpoint directory, by file name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    files: BTreeMap<String, String>,
}

/// Everything but the tensors: where the run stood when the checkpoint was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointState {
    /// [`CHECKPOINT_FORMAT`] at the time of writing.
    pub format: u32,
    /// Iterations completed.
    pub iteration: usize,
    /// Environment steps taken.
    pub env_steps: usize,
    /// Optimizer steps taken (the gradient diagnostics' schedule counts them).
    pub optimizer_steps: usize,
    /// The run's random streams, so that a resumed run continues each where it stopped.
    pub streams: RunStreams,
    /// The trainer config of the run.
    pub config: serde_json::Value,
    /// The name of the world the run trained in (absent in checkpoints written before it was
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world: Option<String>,
    /// Files the trainer keeps beside the state, by name, encoded: the next iteration's
    /// rollout when it was played ahead ([`PENDING_ROLLOUT_FILE`]) and the trainable weights the
    /// run started from ([`START_WEIGHTS_FILE`]). Not part of `state.json`.
    #[serde(skip)]
    pub files: BTreeMap<String, Vec<u8>>,
}

impl CheckpointState {
    /// Why this checkpoint cannot continue a run of `seed` in `world`: it was written by a run
    /// of another seed (its random streams would be another run's) or in another world.
    pub fn foreign_to(&self, seed: u64, world: &str) -> Option<String> {
        let written = self.config.get("seed").and_then(serde_json::Value::as_u64);
        if let Some(written) = written.filter(|&w| w != seed) {
            return Some(format!(
                "written by a run with seed {written}, not this run's seed {seed}: a checkpoint \
                 continues only the run that wrote it"
            ));
        }
        match &self.world {
            Some(written) if written != world => Some(format!(
                "written by a run in the {written} world, not in {world}: a checkpoint \
                 continues only the run that wrote it"
            )),
            _ => None,
        }
    }
}

/// The directory name of the checkpoint after `iteration` iterations.
pub fn checkpoint_name(iteration: usize) -> String {
    format!("ckpt-{iteration:06}")
}

/// Writes a checkpoint directory so that no crash can leave the run without a complete
/// checkpoint of the iteration: everything goes to `<name>.tmp`, is fsynced and listed with its
/// SHA-256 in `manifest.json`; then an existing `<name>` is moved aside to `<name>.old`, the new
/// one renamed in, and the old one deleted. A critic, if given, saves its own files into the same
/// directory.
///
/// # Errors
/// [`Error::Io`] or [`Error::Checkpoint`] when a file cannot be written.
pub fn save_checkpoint<M: Module>(
    dir: &Path,
    state: &CheckpointState,
    model: &M,
    reference: Option<&M>,
    optimizer: &ModuleOptimizer,
    critic: Option<&dyn Critic>,
) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let name = checkpoint_name(state.iteration);
    let tmp = dir.join(format!("{name}.tmp"));
    let old = dir.join(format!("{name}.old"));
    let target = dir.join(&name);
    for stale in [&tmp, &old] {
        if stale.exists() {
            std::fs::remove_dir_all(stale).map_err(|e| Error::io(stale, e))?;
        }
    }
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    crash_point("checkpoint-tmp-created");

    // A write that fails (a full disk) leaves no partial copy taking up space.
    if let Err(e) = write_files(&tmp, state, model, reference, optimizer, critic) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    crash_point("checkpoint-manifest-written");

    if target.exists() {
        std::fs::rename(&target, &old).map_err(|e| Error::io(&old, e))?;
        crash_point("checkpoint-old-moved-aside");
    }
    std::fs::rename(&tmp, &target).map_err(|e| Error::io(&target, e))?;
    sync_dir(dir)?;
    crash_point("checkpoint-renamed-in");
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(|e| Error::io(&old, e))?;
    }
    crash_point("checkpoint-old-deleted");
    Ok(target)
}

/// Writes every file of a checkpoint into `tmp`, fsynced and listed in its manifest.
fn write_files<M: Module>(
    tmp: &Path,
    state: &CheckpointState,
    model: &M,
    reference: Option<&M>,
    optimizer: &ModuleOptimizer,
    critic: Option<&dyn Critic>,
) -> Result<()> {
    let record_err = |path: PathBuf, e: burn::store::RecordError| Error::Checkpoint {
        path,
        reason: e.to_string(),
    };
    let model_path = tmp.join(MODEL_FILE);
    model
        .clone()
        .save_file(&model_path)
        .map_err(|e| record_err(model_path, e))?;
    if let Some(reference) = reference {
        let path = tmp.join(REFERENCE_FILE);
        reference
            .clone()
            .save_file(&path)
            .map_err(|e| record_err(path, e))?;
    }
    crash_point("checkpoint-model-written");
    let optim_path = tmp.join(OPTIMIZER_FILE);
    optimizer
        .save(&optim_path)
        .map_err(|e| record_err(optim_path, e))?;
    if let Some(critic) = critic {
        critic.save(tmp)?;
    }
    crash_point("checkpoint-optimizer-written");
    let state_path = tmp.join(STATE_FILE);
    let json = serde_json::to_vec_pretty(state).map_err(|e| Error::Checkpoint {
        path: state_path.clone(),
        reason: e.to_string(),
    })?;
    std::fs::write(&state_path, json).map_err(|e| Error::io(&state_path, e))?;
    for (name, bytes) in &state.files {
        let path = tmp.join(name);
        std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))?;
    }
    crash_point("checkpoint-state-written");
    write_manifest(tmp)?;
    sync_dir(tmp)?;
    Ok(())
}

fn sha256_file(path: &Path) -> Result<String> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// The regular files of a checkpoint directory besides its manifest, by name.
fn checkpoint_files(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_file() && name != MANIFEST_FILE {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Fsyncs every file of `dir`, then writes and fsyncs the manifest of their hashes.
fn write_manifest(dir: &Path) -> Result<()> {
    let mut files = BTreeMap::new();
    for name in checkpoint_files(dir)? {
        let path = dir.join(&name);
        File::open(&path)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(&path, e))?;
        files.insert(name, sha256_file(&path)?);
    }
    let path = dir.join(MANIFEST_FILE);
    let json = serde_json::to_vec_pretty(&Manifest { files }).map_err(|e| Error::Checkpoint {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    std::fs::write(&path, json).map_err(|e| Error::io(&path, e))?;
    File::open(&path)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(&path, e))
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

/// Checks a checkpoint directory against its manifest: every listed file present with its
/// SHA-256, no file unlisted. A format-2 checkpoint (before manifests) needs only its files.
///
/// # Errors
/// [`Error::Checkpoint`] naming the first missing, extra or corrupt file.
pub fn verify_checkpoint(dir: &Path) -> Result<()> {
    let fail = |file: &str, reason: String| Error::Checkpoint {
        path: dir.join(file),
        reason,
    };
    let manifest_path = dir.join(MANIFEST_FILE);
    let Ok(text) = std::fs::read_to_string(&manifest_path) else {
        let format = std::fs::read_to_string(dir.join(STATE_FILE))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("format").and_then(serde_json::Value::as_u64));
        if format == Some(OLDEST_FORMAT as u64) {
            for file in [MODEL_FILE, OPTIMIZER_FILE] {
                if !dir.join(file).is_file() {
                    return Err(fail(file, "missing".into()));
                }
            }
            return Ok(());
        }
        return Err(fail(
            MANIFEST_FILE,
            "missing: the checkpoint was not completely written".into(),
        ));
    };
    let manifest: Manifest =
        serde_json::from_str(&text).map_err(|e| fail(MANIFEST_FILE, e.to_string()))?;
    for (name, hash) in &manifest.files {
        let path = dir.join(name);
        if !path.is_file() {
            return Err(fail(name, "missing".into()));
        }
        if &sha256_file(&path)? != hash {
            return Err(fail(
                name,
                "corrupt: its SHA-256 differs from manifest.json".into(),
            ));
        }
    }
    if let Some(extra) = checkpoint_files(dir)?
        .into_iter()
        .find(|n| !manifest.files.contains_key(n))
    {
        return Err(fail(&extra, "not listed in manifest.json".into()));
    }
    Ok(())
}

/// A loaded checkpoint.
pub struct LoadedCheckpoint<M> {
    /// Where the run stood.
    pub state: CheckpointState,
    /// The trained model.
    pub model: M,
    /// The frozen reference model, if the checkpoint has one.
    pub reference: Option<M>,
    /// The optimizer with its moments.
    pub optimizer: ModuleOptimizer,
}

impl<M: std::fmt::Debug> std::fmt::Debug for LoadedCheckpoint<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedCheckpoint")
            .field("state", &self.state)
            .field("model", &self.model)
            .field("reference", &self.reference)
            .finish_non_exhaustive()
    }
}

/// Loads a checkpoint directory into `model` (and a copy of it for the reference) and
/// `optimizer`, which must have the run's architecture and optimizer type.
///
/// # Errors
/// [`Error::Checkpoint`] when the directory, a file or a tensor is missing, corrupt, of another
/// format version, or does not fit the model.
pub fn load_checkpoint<M: Module>(
    path: &Path,
    model: M,
    optimizer: ModuleOptimizer,
) -> Result<LoadedCheckpoint<M>> {
    let fail = |file: &str, reason: String| Error::Checkpoint {
        path: path.join(file),
        reason,
    };
    if !path.is_dir() {
        return Err(Error::Checkpoint {
            path: path.to_path_buf(),
            reason: "no such checkpoint directory".into(),
        });
    }
    let state_text = std::fs::read_to_string(path.join(STATE_FILE))
        .map_err(|e| fail(STATE_FILE, e.to_string()))?;
    let value: serde_json::Value =
        serde_json::from_str(&state_text).map_err(|e| fail(STATE_FILE, e.to_string()))?;
    let format = value.get("format").and_then(serde_json::Value::as_u64);
    if !format.is_some_and(|f| (OLDEST_FORMAT as u64..=CHECKPOINT_FORMAT as u64).contains(&f)) {
        let found = format.map_or("no format".to_string(), |f| format!("format {f}"));
        return Err(fail(
            STATE_FILE,
            format!(
                "{found}, but this build reads formats {OLDEST_FORMAT} to {CHECKPOINT_FORMAT} \
                 (checkpoints of format 1 share one random stream and cannot continue a run \
                 exactly)"
            ),
        ));
    }
    verify_checkpoint(path)?;
    let mut state: CheckpointState =
        serde_json::from_value(value).map_err(|e| fail(STATE_FILE, e.to_string()))?;
    let read = |file: &str| read_whole(&path.join(file)).map_err(|e| fail(file, e.to_string()));
    for name in TRAINER_FILES {
        if path.join(name).exists() {
            state.files.insert(name.into(), read(name)?.to_vec());
        }
    }
    let reference = if path.join(REFERENCE_FILE).exists() {
        Some(load_module(path, REFERENCE_FILE, model.clone())?)
    } else {
        None
    };
    let model = load_module(path, MODEL_FILE, model)?;
    let optimizer = optimizer
        .from_bytes(read(OPTIMIZER_FILE)?)
        .map_err(|e| fail(OPTIMIZER_FILE, e.to_string()))?;
    Ok(LoadedCheckpoint {
        state,
        model,
        reference,
        optimizer,
    })
}

/// Loads only the trained model of a checkpoint directory into `model` (of the run's
/// architecture), after verifying the directory: what an export or an evaluation needs, without
/// the optimizer's or the reference's state.
///
/// # Errors
/// [`Error::Checkpoint`] when the directory is missing, does not verify, or its model does not
/// fit `model`.
pub fn load_checkpoint_model<M: Module>(path: &Path, model: M) -> Result<M> {
    if !path.is_dir() {
        return Err(Error::Checkpoint {
            path: path.to_path_buf(),
            reason: "no such checkpoint directory".into(),
        });
    }
    verify_checkpoint(path)?;
    load_module(path, MODEL_FILE, model)
}

/// `module` with the record of the checkpoint file `dir/file`, read whole into memory.
fn load_module<M: Module>(dir: &Path, file: &str, module: M) -> Result<M> {
    let fail = |reason: String| Error::Checkpoint {
        path: dir.join(file),
        reason,
    };
    let bytes = read_whole(&dir.join(file)).map_err(|e| fail(e.to_string()))?;
    let record = ModuleRecord::from_bytes(bytes).map_err(|e| fail(e.to_string()))?;
    let module = module
        .try_load_record(record)
        .map_err(|e| fail(e.to_string()))?;
    match super::first_non_finite(&module) {
        Some(which) => Err(fail(format!(
            "{which}: the checkpoint's weights are corrupt"
        ))),
        None => Ok(module),
    }
}

/// The most recent complete checkpoint in `dir`: for each iteration from the newest, `ckpt-N`
/// if it verifies, else a complete `ckpt-N.tmp` or `ckpt-N.old` left by a save that was
/// interrupted between its renames. Incomplete or corrupt ones are skipped with a warning.
pub fn latest_checkpoint(dir: &Path) -> Option<PathBuf> {
    for iteration in checkpoint_iterations(dir).into_iter().rev() {
        let name = checkpoint_name(iteration);
        for candidate in [name.clone(), format!("{name}.tmp"), format!("{name}.old")] {
            let path = dir.join(candidate);
            if !path.is_dir() {
                continue;
            }
            match verify_checkpoint(&path) {
                Ok(()) => return Some(path),
                Err(e) => log::warn!("skipping checkpoint {}: {e}", path.display()),
            }
        }
    }
    None
}

/// A file read whole into memory, for `ModuleRecord::from_bytes` or `ModuleOptimizer::from_bytes`:
/// what is built from it never depends on the file again, whereas `ModuleRecord::load` reads the
/// tensors lazily from a file that a later save, pruning or `--force` may remove.
///
/// # Errors
/// When the file cannot be read.
pub fn read_whole(path: &Path) -> std::io::Result<Bytes> {
    std::fs::read(path).map(Bytes::from_bytes_vec)
}

/// Puts a complete checkpoint left as `ckpt-N.tmp` or `ckpt-N.old` by an interrupted save back
/// in place as `ckpt-N` (replacing an incomplete `ckpt-N`) and returns where it now is; any other
/// path is returned as it is. A run continues from the result, so that its next save cannot
/// remove the checkpoint it continued from.
///
/// # Errors
/// [`Error::Checkpoint`] when `path` does not verify; [`Error::Io`] when a rename fails.
pub fn settle_checkpoint(path: &Path) -> Result<PathBuf> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let Some(target_name) = name
        .strip_suffix(".tmp")
        .or_else(|| name.strip_suffix(".old"))
        .filter(|n| n.starts_with("ckpt-"))
    else {
        return Ok(path.to_path_buf());
    };
    let target = path.with_file_name(target_name);
    if verify_checkpoint(&target).is_ok() {
        return Ok(target);
    }
    verify_checkpoint(path)?;
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(|e| Error::io(&target, e))?;
    }
    std::fs::rename(path, &target).map_err(|e| Error::io(&target, e))?;
    if let Some(parent) = target.parent() {
        sync_dir(parent)?;
    }
    Ok(target)
}

/// The iterations of the checkpoint directories in `dir` (complete or not), in order.
fn checkpoint_iterations(dir: &Path) -> Vec<usize> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut iterations: Vec<usize> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let number = name.strip_prefix("ckpt-")?;
            let number = number
                .strip_suffix(".tmp")
                .or_else(|| number.strip_suffix(".old"))
                .unwrap_or(number);
            number.parse().ok()
        })
        .collect();
    iterations.sort_unstable();
    iterations.dedup();
    iterations
}

/// Which checkpoints to delete so that the `keep` most recent remain (a pure decision).
pub fn checkpoints_to_delete(iterations: &[usize], keep: usize) -> Vec<usize> {
    let mut sorted = iterations.to_vec();
    sorted.sort_unstable();
    let excess = sorted.len().saturating_sub(keep.max(1));
    sorted[..excess].to_vec()
}

/// Deletes all but the `keep` most recent checkpoints in `dir`.
///
/// # Errors
/// [`Error::Io`] when a directory cannot be removed.
pub fn prune_checkpoints(dir: &Path, keep: usize) -> Result<()> {
    for iteration in checkpoints_to_delete(&checkpoint_iterations(dir), keep) {
        let name = checkpoint_name(iteration);
        for path in
            [name.clone(), format!("{name}.tmp"), format!("{name}.old")].map(|n| dir.join(n))
        {
            if path.exists() {
                std::fs::remove_dir_all(&path).map_err(|e| Error::io(&path, e))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recent_checkpoints() {
        assert_eq!(checkpoints_to_delete(&[5, 1, 3], 2), vec![1]);
        assert_eq!(checkpoints_to_delete(&[1], 2), Vec::<usize>::new());
    }

    #[test]
    fn missing_checkpoint_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("ckpt-000003");
        let model = burn::nn::LinearConfig::new(2, 2).init(&burn::tensor::Device::flex());
        let optimizer = burn::optim::AdamWConfig::new().init();
        let err = load_checkpoint(&missing, model, optimizer).unwrap_err();
        assert!(err.to_string().contains("ckpt-000003"), "{err}");
    }

    #[test]
    fn corrupt_state_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let ckpt = dir.path().join("ckpt-000001");
        std::fs::create_dir_all(&ckpt).unwrap();
        std::fs::write(ckpt.join(STATE_FILE), b"{not json").unwrap();
        let model = burn::nn::LinearConfig::new(2, 2).init(&burn::tensor::Device::flex());
        let optimizer = burn::optim::AdamWConfig::new().init();
        let err = load_checkpoint(&ckpt, model, optimizer).unwrap_err();
        assert!(err.to_string().contains("state.json"), "{err}");
    }

    #[test]
    fn an_old_format_is_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let ckpt = dir.path().join("ckpt-000001");
        std::fs::create_dir_all(&ckpt).unwrap();
        std::fs::write(ckpt.join(STATE_FILE), br#"{"format": 1, "rng": {}}"#).unwrap();
        let model = burn::nn::LinearConfig::new(2, 2).init(&burn::tensor::Device::flex());
        let optimizer = burn::optim::AdamWConfig::new().init();
        let err = load_checkpoint(&ckpt, model, optimizer)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("format 1") && err.contains("state.json"),
            "{err}"
        );
    }

    fn saved(dir: &Path, iteration: usize) -> PathBuf {
        let model = burn::nn::LinearConfig::new(2, 2).init(&burn::tensor::Device::flex());
        let optimizer = burn::optim::AdamWConfig::new().init();
        let state = CheckpointState {
            format: CHECKPOINT_FORMAT,
            iteration,
            env_steps: 0,
            optimizer_steps: 0,
            streams: RunStreams::new(0, []),
            config: serde_json::Value::Null,
            world: None,
            files: BTreeMap::new(),
        };
        save_checkpoint(dir, &state, &model, None, &optimizer, None).unwrap()
    }

    fn load(path: &Path) -> Result<LoadedCheckpoint<burn::nn::Linear>> {
        let model = burn::nn::LinearConfig::new(2, 2).init(&burn::tensor::Device::flex());
        load_checkpoint(path, model, burn::optim::AdamWConfig::new().init())
    }

    #[test]
    fn a_checkpoint_lists_every_file_with_its_hash_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = saved(dir.path(), 3);
        let manifest: Manifest =
            serde_json::from_str(&std::fs::read_to_string(path.join(MANIFEST_FILE)).unwrap())
                .unwrap();
        let names: Vec<&String> = manifest.files.keys().collect();
        assert_eq!(names, [MODEL_FILE, OPTIMIZER_FILE, STATE_FILE]);
        assert!(manifest.files.values().all(|h| h.len() == 64));
        assert_eq!(load(&path).unwrap().state.iteration, 3);
        // Saving the same iteration again swaps the new one in and leaves nothing behind.
        saved(dir.path(), 3);
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["ckpt-000003"]);
    }

    #[test]
    fn a_flipped_byte_is_found_and_the_previous_checkpoint_used() {
        let dir = tempfile::tempdir().unwrap();
        saved(dir.path(), 1);
        let newest = saved(dir.path(), 2);
        let model = newest.join(MODEL_FILE);
        let mut bytes = std::fs::read(&model).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&model, bytes).unwrap();
        let err = load(&newest).unwrap_err().to_string();
        assert!(
            err.contains("model.bpk") && err.contains("corrupt"),
            "{err}"
        );
        assert_eq!(
            latest_checkpoint(dir.path()),
            Some(dir.path().join("ckpt-000001"))
        );
        // A half-written one (no manifest yet) is skipped the same way.
        std::fs::remove_file(newest.join(MANIFEST_FILE)).unwrap();
        let err = load(&newest).unwrap_err().to_string();
        assert!(err.contains("manifest.json"), "{err}");
    }

    #[test]
    fn a_save_killed_between_its_renames_leaves_a_complete_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        saved(dir.path(), 1);
        let target = saved(dir.path(), 4);
        // Killed after `ckpt-4` was moved aside and before the new one was renamed in.
        let old = dir.path().join("ckpt-000004.old");
        let tmp = dir.path().join("ckpt-000004.tmp");
        std::fs::rename(&target, &old).unwrap();
        std::fs::create_dir(&tmp).unwrap();
        for entry in std::fs::read_dir(&old).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), tmp.join(entry.file_name())).unwrap();
        }
        assert_eq!(latest_checkpoint(dir.path()), Some(tmp.clone()));
        assert_eq!(load(&tmp).unwrap().state.iteration, 4);
        // Only the old one survived: it is used.
        std::fs::remove_dir_all(&tmp).unwrap();
        assert_eq!(latest_checkpoint(dir.path()), Some(old.clone()));
        // Settling puts it back in place (a complete `ckpt-4` is never replaced).
        let settled = settle_checkpoint(&old).unwrap();
        assert_eq!(settled, target);
        assert!(!old.exists() && verify_checkpoint(&target).is_ok());
        assert_eq!(settle_checkpoint(&target).unwrap(), target);
        std::fs::rename(&target, &old).unwrap();
        // The next save of that iteration cleans both up.
        saved(dir.path(), 4);
        assert!(!old.exists() && !tmp.exists());
        assert_eq!(latest_checkpoint(dir.path()), Some(target));
    }
}
