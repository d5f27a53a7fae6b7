//! An `ALFWORLD_DATA` directory in the official layout:
//! `json_2.1.1/<split>/<task folder>/<trial folder>/game.tw-pddl`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::alfworld::{Game, TaskType};
use crate::error::{Error, Result};

/// The four splits of the release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Split {
    /// `train` (3553 games).
    Train,
    /// `valid_seen` (140), ALFWorld's `eval_in_distribution`.
    ValidSeen,
    /// `valid_unseen` (134), ALFWorld's `eval_out_of_distribution`.
    ValidUnseen,
    /// `valid_train` (200), unused by the stock configs.
    ValidTrain,
}

impl Split {
    /// The folder name.
    pub fn folder(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::ValidSeen => "valid_seen",
            Split::ValidUnseen => "valid_unseen",
            Split::ValidTrain => "valid_train",
        }
    }

    /// Parses a folder name.
    pub fn from_folder(name: &str) -> Option<Self> {
        [
            Split::Train,
            Split::ValidSeen,
            Split::ValidUnseen,
            Split::ValidTrain,
        ]
        .into_iter()
        .find(|s| s.folder() == name)
    }
}

/// The games of an `ALFWORLD_DATA` directory.
#[derive(Debug, Clone)]
pub struct AlfworldData {
    root: PathBuf,
}

impl AlfworldData {
    /// Opens `dir`, which must hold `json_2.1.1/`.
    ///
    /// # Errors
    /// [`Error::GameFile`] naming the directory when `json_2.1.1/` is missing.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let root = dir.as_ref().join("json_2.1.1");
        if !root.is_dir() {
            return Err(Error::GameFile {
                path: root,
                reason: "no such directory: not an ALFWORLD_DATA directory".into(),
            });
        }
        Ok(Self { root })
    }

    /// The `json_2.1.1` folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The game files of `split` whose task type is in `types` (all types when empty), as paths
    /// relative to `json_2.1.1/`, sorted.
    ///
    /// # Errors
    /// [`Error::GameFile`] when the split folder cannot be read or holds no game.
    pub fn games(&self, split: Split, types: &[TaskType]) -> Result<Vec<PathBuf>> {
        let dir = self.root.join(split.folder());
        let read = |d: &Path| {
            std::fs::read_dir(d).map_err(|e| Error::GameFile {
                path: d.to_path_buf(),
                reason: e.to_string(),
            })
        };
        let mut out = Vec::new();
        for task in read(&dir)? {
            let task = task
                .map_err(|e| Error::GameFile {
                    path: dir.clone(),
                    reason: e.to_string(),
                })?
                .path();
            if !task.is_dir() {
                continue;
            }
            let keep =
                TaskType::from_path(&task).is_some_and(|t| types.is_empty() || types.contains(&t));
            if !keep {
                continue;
            }
            for trial in read(&task)? {
                let trial = trial
                    .map_err(|e| Error::GameFile {
                        path: task.clone(),
                        reason: e.to_string(),
                    })?
                    .path();
                let file = trial.join("game.tw-pddl");
                if file.is_file() {
                    let relative = file.strip_prefix(&self.root).unwrap_or(&file).to_path_buf();
                    out.push(relative);
                }
            }
        }
        if out.is_empty() {
            return Err(Error::GameFile {
                path: dir,
                reason: "no game.tw-pddl files".into(),
            });
        }
        out.sort();
        Ok(out)
    }

    /// Loads games given as paths relative to `json_2.1.1/`.
    ///
    /// # Errors
    /// The first game that fails to load.
    pub fn load(&self, relative: &[PathBuf]) -> Result<Vec<Arc<Game>>> {
        relative
            .iter()
            .map(|p| Game::load(self.root.join(p)).map(Arc::new))
            .collect()
    }
}
