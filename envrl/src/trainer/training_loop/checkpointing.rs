//! Saving and restoring a [`Trainer`]'s whole state.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Trainer, adamw};
use crate::error::{Error, Result};
use crate::policy::Policy;
use crate::trainer::crash_point::crash_point;
use crate::trainer::{
    CHECKPOINT_FORMAT, CheckpointState, PENDING_ROLLOUT_FILE, START_WEIGHTS_FILE, checkpoint_name,
    decode_trainer_file, encode_trainer_file, load_checkpoint, prune_checkpoints, save_checkpoint,
    settle_checkpoint,
};

impl<P: Policy> Trainer<P> {
    /// Writes a checkpoint of the current state into the checkpoint directory and prunes old
    /// ones. Does nothing without a checkpoint directory or on a rank other than 0 of a
    /// data-parallel run (one writer), and returns the existing checkpoint
    /// when this iteration was already saved (or resumed from): a checkpoint is never rewritten.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Checkpoint`] when it cannot be written.
    pub fn save_checkpoint(&mut self) -> Result<Option<PathBuf>> {
        self.check_not_stopped()?;
        let Some(dir) = &self.checkpoint_dir else {
            return Ok(None);
        };
        if self.sync.rank() != 0 {
            return Ok(None);
        }
        if self.saved_at == Some(self.iteration) {
            let path = dir.join(checkpoint_name(self.iteration));
            if path.is_dir() {
                return Ok(Some(path));
            }
        }
        let state = CheckpointState {
            format: CHECKPOINT_FORMAT,
            iteration: self.iteration,
            env_steps: self.env_steps,
            optimizer_steps: self.learner.optimizer_steps,
            streams: self.streams.clone(),
            config: serde_json::to_value(&self.config).unwrap_or_default(),
            world: Some(self.learner.world.name.clone()),
            files: self.trainer_files()?,
        };
        let path = save_checkpoint(
            dir,
            &state,
            &self.learner.policy,
            self.learner.reference.as_ref(),
            &self.learner.optimizer,
            self.learner.critic.as_deref(),
        )?;
        prune_checkpoints(dir, self.config.keep_checkpoints)?;
        crash_point("checkpoint-pruned");
        self.saved_at = Some(self.iteration);
        Ok(Some(path))
    }

    /// Restores model, reference, optimizer, random streams and counters from a checkpoint
    /// directory. In a data-parallel run every rank loads rank 0's checkpoint, after rank 0
    /// has settled it.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] when it is missing, corrupt or does not fit the model;
    /// [`Error::Distributed`] when the ranks cannot agree on it.
    pub fn resume(&mut self, path: &Path) -> Result<()> {
        // A checkpoint left as `.tmp`/`.old` by an interrupted save goes back in place first,
        // by the one writer; the others wait for it and load the checkpoint it names.
        let settled = match self.sync.rank() {
            0 => settle_checkpoint(path)?,
            _ => path.to_path_buf(),
        };
        let named = self.sync.all_gather(settled.to_string_lossy().as_bytes())?;
        let path = &PathBuf::from(String::from_utf8_lossy(&named[0]).into_owned());
        let loaded = load_checkpoint(path, self.learner.policy.clone(), adamw(&self.config))?;
        let world = &self.learner.world.name;
        if let Some(reason) = loaded.state.foreign_to(self.config.seed, world) {
            return Err(Error::Checkpoint {
                path: path.to_path_buf(),
                reason,
            });
        }
        loaded
            .state
            .streams
            .check_objectives(self.learner.aux.iter().map(|a| a.name()))
            .map_err(|e| Error::Checkpoint {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
        let learner = &mut self.learner;
        learner.policy = loaded.model;
        if learner.reference.is_some() {
            learner.reference = Some(match loaded.reference {
                Some(reference) => reference.valid(),
                None => {
                    return Err(Error::Checkpoint {
                        path: path.to_path_buf(),
                        reason: "the run needs a reference model but the checkpoint has none"
                            .into(),
                    });
                }
            });
        }
        if let Some(critic) = learner.critic.as_mut() {
            critic.load(path)?;
        }
        learner.optimizer = loaded.optimizer;
        learner.optimizer_steps = loaded.state.optimizer_steps;
        learner.start_weights = decode_trainer_file(&loaded.state.files, path, START_WEIGHTS_FILE)?;
        let no_start_weights = learner.start_weights.is_none();
        self.streams = loaded.state.streams;
        self.saved_at = Some(loaded.state.iteration);
        self.iteration = loaded.state.iteration;
        self.env_steps = loaded.state.env_steps;
        self.stopped = None;
        let files = &loaded.state.files;
        self.pending = decode_trainer_file(files, path, PENDING_ROLLOUT_FILE)?;
        if no_start_weights {
            log::warn!(
                "{} has no {START_WEIGHTS_FILE} (written by an older envrl): \
                 policy/weight_distance is not logged for this run",
                path.display()
            );
        }
        Ok(())
    }

    /// The trainer's own files of a checkpoint: the rollout played ahead and the starting
    /// weights, encoded.
    fn trainer_files(&self) -> Result<BTreeMap<String, Vec<u8>>> {
        let mut files = BTreeMap::new();
        if let Some(pending) = &self.pending {
            let bytes = encode_trainer_file(pending, PENDING_ROLLOUT_FILE)?;
            files.insert(PENDING_ROLLOUT_FILE.to_string(), bytes);
        }
        if let Some(start) = &self.learner.start_weights {
            let bytes = encode_trainer_file(start, START_WEIGHTS_FILE)?;
            files.insert(START_WEIGHTS_FILE.to_string(), bytes);
        }
        Ok(files)
    }
}
