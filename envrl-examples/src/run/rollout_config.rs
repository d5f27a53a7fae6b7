//! `[rollout]`: where a run's rollouts are sampled — in this process, by an inference server
//! envrl starts (`spawn:llama-cpp`, `spawn:vllm`), or by the vLLM or SGLang servers the user
//! runs (their addresses) — read and checked with the rest of the config, before any model is
//! loaded or any file written.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};
use envrl_algos::serve::{DEFAULT_REQUEST_TIMEOUT, redact_credentials};
use serde::{Deserialize, Serialize};

/// Where the rollouts are sampled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RolloutConfig {
    /// `None`: in this process (the default); `spawn:llama-cpp`: a llama.cpp server envrl
    /// starts from the `xllamacpp` wheel and restarts with each published policy;
    /// `spawn:vllm`: a vLLM server envrl starts on the base model, loading each LoRA version
    /// as an adapter or reloading a full fine-tune's weights; `http://host:port[,http://…]`:
    /// vLLM or SGLang servers the user runs (each version is written under `policy_dir` and
    /// loaded by every server).
    pub server: Option<String>,
    /// The Python interpreter of a spawned server [default: `$ENVRL_LLAMA_PYTHON` or
    /// `$ENVRL_VLLM_PYTHON`, else `~/.cache/envrl-tools/{llama,vllm}-venv/bin/python`, where
    /// `scripts/serve-check.sh` installs them].
    pub python: Option<PathBuf>,
    /// Server threads [default: 1].
    pub threads: Option<usize>,
    /// Requests in flight per server [default: 4].
    pub parallel: Option<usize>,
    /// Where the policy versions (adapters or full weights) of servers given by address are
    /// written: a directory every server reads at the same path.
    pub policy_dir: Option<PathBuf>,
    /// Seconds a spawned server may take to answer `/health` after it is started [default:
    /// 300 for llama.cpp, 900 for vLLM]; past it the server is stopped and the error quotes
    /// the end of its log.
    pub start_timeout_s: Option<f64>,
    /// Seconds one sampling request may take [default: 120]. A failed request is tried on
    /// the next server up to 3 more times (after 0.5, 1 and 2 s), so a turn whose servers
    /// answer nothing fails within 4 × this plus 3.5 s.
    pub request_timeout_s: Option<f64>,
}

/// The longest wait a `[rollout]` timeout accepts: a day.
const MAX_TIMEOUT_S: f64 = 86_400.0;

impl RolloutConfig {
    /// Refuses a `rollout.server` that cannot be used (an unknown engine, an address that is not
    /// plain `http://`, an address given twice, addresses without `policy_dir`), with the rest
    /// of the config: before any model is loaded or any file written.
    ///
    /// # Errors
    /// As the setting's reading.
    pub(crate) fn check(&self) -> Result<()> {
        for (name, value) in [
            ("start_timeout_s", self.start_timeout_s),
            ("request_timeout_s", self.request_timeout_s),
        ] {
            if let Some(v) = value
                && !(v > 0.0 && v <= MAX_TIMEOUT_S)
            {
                bail!(
                    "rollout.{name} = {v}: a number of seconds above 0 and at most {MAX_TIMEOUT_S}"
                );
            }
            if value.is_some() && self.server.is_none() {
                bail!(
                    "rollout.{name} is set but rollout.server is not: rollouts are sampled in \
                     this process, which has no server to wait for"
                );
            }
        }
        match &self.server {
            Some(server) => ServerChoice::parse(server, self.policy_dir.as_deref()).map(|_| ()),
            None => Ok(()),
        }
    }

    /// The time limit of one sampling request.
    pub(crate) fn request_timeout(&self) -> Duration {
        self.request_timeout_s
            .map_or(DEFAULT_REQUEST_TIMEOUT, Duration::from_secs_f64)
    }

    /// The time a spawned server may take to start, `default_s` unless set.
    pub(crate) fn start_timeout(&self, default_s: f64) -> Duration {
        Duration::from_secs_f64(self.start_timeout_s.unwrap_or(default_s))
    }

    /// A one-line description of where the rollouts are sampled, for the run's log.
    pub(crate) fn describe(&self) -> Option<String> {
        Some(match self.server.as_deref()? {
            "spawn:llama-cpp" => "llama.cpp's server, restarted with each policy".into(),
            "spawn:vllm" => "vLLM, each policy version loaded while it runs".into(),
            urls => format!(
                "{}, each policy version loaded while they run",
                redact_credentials(urls)
            ),
        })
    }
}

/// Which kind of server `rollout.server` names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ServerChoice {
    SpawnLlamaCpp,
    SpawnVllm,
    /// Servers the user runs, by address, and where their adapters are written.
    Urls {
        urls: Vec<String>,
        policy_dir: PathBuf,
    },
}

impl ServerChoice {
    /// Reads `rollout.server` (and `rollout.policy_dir`, which servers given by address need).
    ///
    /// # Errors
    /// An unknown `spawn:` engine, an item that is not an `http(s)://` address, or addresses
    /// without `policy_dir`.
    pub(crate) fn parse(server: &str, policy_dir: Option<&Path>) -> Result<Self> {
        Self::read(server, policy_dir)
            .map_err(|e| anyhow::anyhow!(redact_credentials(&format!("{e:#}"))))
    }

    /// [`ServerChoice::parse`] before its message's passwords are masked.
    fn read(server: &str, policy_dir: Option<&Path>) -> Result<Self> {
        match server {
            "spawn:llama-cpp" => return Ok(Self::SpawnLlamaCpp),
            "spawn:vllm" => return Ok(Self::SpawnVllm),
            s if s.starts_with("spawn:") => {
                bail!("rollout.server = {s:?}: envrl starts `spawn:llama-cpp` or `spawn:vllm`")
            }
            _ => {}
        }
        let written: Vec<&str> = server.split(',').map(str::trim).collect();
        if let Some(url) = written.iter().find(|u| literal_password(u)) {
            bail!(
                "rollout.server: {url:?} holds a password, which the run's config.toml would \
                 keep: name an environment variable in its place (the address's \
                 user:${{ENVRL_SERVER_PASSWORD}}@host part) and set the variable"
            );
        }
        let urls = written
            .iter()
            .map(|u| expand_variables(u))
            .collect::<Result<Vec<String>>>()?;
        if let Some(tls) = urls.iter().find(|u| u.starts_with("https://")) {
            bail!(
                "rollout.server: {tls:?}: this build speaks plain HTTP only (no TLS stack); reach \
                 the servers over http:// on a trusted network, or through a TLS-terminating \
                 tunnel on this machine"
            );
        }
        if let Some(bad) = urls.iter().find(|u| !u.starts_with("http://")) {
            bail!(
                "rollout.server: {bad:?} is neither spawn:llama-cpp, spawn:vllm nor an http:// \
                 address"
            );
        }
        if let Some((i, twice)) = urls
            .iter()
            .enumerate()
            .find(|(i, u)| urls[..*i].contains(u))
        {
            bail!(
                "rollout.server: {twice:?} is given twice (items {} and {}); each server once",
                urls[..i].iter().position(|u| u == twice).unwrap_or(0) + 1,
                i + 1
            );
        }
        let Some(policy_dir) = policy_dir else {
            bail!(
                "rollout.server = {server:?}: set rollout.policy_dir, a directory the servers \
                 read at the same path, for the policy versions' adapters"
            );
        };
        Ok(Self::Urls {
            urls,
            policy_dir: policy_dir.to_path_buf(),
        })
    }
}

/// Whether `url` writes a password out (`http://user:password@host`) rather than naming an
/// environment variable for it (`http://user:${NAME}@host`).
fn literal_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or("");
    let Some((userinfo, _)) = authority.rsplit_once('@') else {
        return false;
    };
    match userinfo.split_once(':') {
        Some((_, password)) => {
            !(password.starts_with("${") && password.ends_with('}') && password.len() > 3)
        }
        None => false,
    }
}

/// `url` with each `${NAME}` replaced by the environment variable `NAME` (credentials stay
/// out of the config; messages mask them).
///
/// # Errors
/// An unset variable or an unclosed `${`, naming it.
fn expand_variables(url: &str) -> Result<String> {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start + 2..].find('}') else {
            bail!("rollout.server: {url:?} has a `${{` without its `}}`");
        };
        let name = &rest[start + 2..start + 2 + len];
        let value = std::env::var(name).map_err(|_| {
            anyhow::anyhow!(
                "rollout.server names the environment variable {name}, which is not set"
            )
        })?;
        out.push_str(&value);
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_bounded_and_need_a_server() {
        let spawned = |start, request| RolloutConfig {
            server: Some("spawn:llama-cpp".into()),
            start_timeout_s: start,
            request_timeout_s: request,
            ..Default::default()
        };
        assert!(spawned(Some(30.0), Some(5.0)).check().is_ok());
        assert_eq!(
            spawned(None, None).request_timeout(),
            Duration::from_secs(120)
        );
        assert_eq!(
            spawned(None, Some(5.0)).request_timeout(),
            Duration::from_secs(5)
        );
        assert_eq!(
            spawned(None, None).start_timeout(300.0),
            Duration::from_secs(300)
        );
        for (start, request, says) in [
            (Some(0.0), None, "rollout.start_timeout_s = 0"),
            (None, Some(f64::NAN), "rollout.request_timeout_s = NaN"),
            (None, Some(1e9), "at most 86400"),
        ] {
            let err = spawned(start, request).check().unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        let in_process = RolloutConfig {
            request_timeout_s: Some(10.0),
            ..Default::default()
        };
        let err = in_process.check().unwrap_err().to_string();
        assert!(err.contains("rollout.server is not"), "{err}");
    }

    #[test]
    fn the_server_setting_is_read_before_any_model_is_loaded() {
        let dir = Path::new("/shared/adapters");
        assert_eq!(
            ServerChoice::parse("spawn:vllm", None).unwrap(),
            ServerChoice::SpawnVllm
        );
        assert_eq!(
            ServerChoice::parse("http://a:8000, http://b:8000", Some(dir)).unwrap(),
            ServerChoice::Urls {
                urls: vec!["http://a:8000".into(), "http://b:8000".into()],
                policy_dir: dir.to_path_buf(),
            }
        );
        let err = ServerChoice::parse("http://a:8000, https://b:8000", Some(dir))
            .unwrap_err()
            .to_string();
        assert!(err.contains("plain HTTP only"), "{err}");
        let err = ServerChoice::parse("http://a:8000,http://b:1,http://a:8000", Some(dir))
            .unwrap_err()
            .to_string();
        assert!(err.contains("given twice (items 1 and 3)"), "{err}");
        let err = ServerChoice::parse("spawn:sglang", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("envrl starts"), "{err}");
        let err = ServerChoice::parse("http://a:8000,b:8000", Some(dir))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"b:8000\" is neither"), "{err}");
        let err = ServerChoice::parse("http://a:8000", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("set rollout.policy_dir"), "{err}");
        // A password written into the address is refused, without repeating it.
        let err = ServerChoice::parse("http://me:s3cret@a:8000", Some(dir))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("http://me:***@a:8000")
                && err.contains("ENVRL_SERVER_PASSWORD")
                && !err.contains("s3cret"),
            "{err}"
        );
        let config = RolloutConfig {
            server: Some("http://me:s3cret@a:8000".into()),
            ..RolloutConfig::default()
        };
        assert!(!config.describe().unwrap().contains("s3cret"));
    }

    #[test]
    fn credentials_come_from_environment_variables() {
        assert!(literal_password("http://me:pw@a:8000/v1"));
        assert!(!literal_password("http://me:${PW}@a:8000"));
        assert!(!literal_password("http://me@a:8000") && !literal_password("http://a:8000"));
        assert!(literal_password("http://me:${}@a:8000"));
        // SAFETY of the test: the variable is this test's own.
        unsafe { std::env::set_var("ENVRL_TEST_ROLLOUT_PW", "s3cret") };
        let dir = Path::new("/shared/adapters");
        let choice = ServerChoice::parse("http://me:${ENVRL_TEST_ROLLOUT_PW}@a:8000", Some(dir));
        match choice.unwrap() {
            ServerChoice::Urls { urls, .. } => assert_eq!(urls, ["http://me:s3cret@a:8000"]),
            other => panic!("{other:?}"),
        }
        let err = ServerChoice::parse("http://me:${ENVRL_TEST_UNSET_PW}@a:8000", Some(dir))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ENVRL_TEST_UNSET_PW") && err.contains("not set"),
            "{err}"
        );
        let err = expand_variables("http://me:${OPEN@a")
            .unwrap_err()
            .to_string();
        assert!(err.contains("without its"), "{err}");
    }
}
