//! `envrl._envrl`: envrl's environments for Python (PyO3, abi3). The Python package `envrl`
//! re-exports these classes from `envrl.alfworld`, `envrl.webshop`, `envrl.keydoor` and
//! `envrl.sokoban`, and builds verl-agent's environment interface on them in `envrl.verl_agent`.
//!
//! Every entry point runs behind [`guard`]: errors become Python exceptions that name the file
//! and the problem, and a Rust panic becomes a `RuntimeError` instead of crossing into Python.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use pyo3::exceptions::{PyFileNotFoundError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

mod alfworld;
mod core;
mod keydoor;
mod sokoban;
mod webshop;

/// What a batched `step` returns: observations, rewards, `terminated`, `truncated`, infos.
pub(crate) type BatchStep<'py> = (
    Vec<String>,
    Vec<f64>,
    Vec<bool>,
    Vec<bool>,
    Vec<Bound<'py, pyo3::types::PyDict>>,
);

/// Runs `f`, turning a panic into a `RuntimeError`.
pub(crate) fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in envrl (please report it): {message}"
            )))
        }
    }
}

/// A data error of `envrl-envs` as the Python exception that fits it.
pub(crate) fn data_error(error: envrl_envs::Error) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// `path` if it exists, else `FileNotFoundError` naming it and what it should be.
pub(crate) fn existing(path: &Path, what: &str) -> PyResult<PathBuf> {
    if path.exists() {
        Ok(path.to_path_buf())
    } else {
        Err(PyFileNotFoundError::new_err(format!(
            "{what} {}: no such file or directory",
            path.display()
        )))
    }
}

/// The data directory: the argument, else the environment variable, else `None` (the
/// embedded default).
pub(crate) fn data_dir(arg: Option<PathBuf>, variable: &str) -> Option<PathBuf> {
    arg.or_else(|| std::env::var_os(variable).map(PathBuf::from))
        .filter(|p| !p.as_os_str().is_empty())
}

/// An action argument as a string, or `TypeError` naming the type given.
pub(crate) fn action_text(action: &Bound<'_, PyAny>) -> PyResult<String> {
    action.extract::<String>().map_err(|_| {
        let kind = action
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into());
        PyTypeError::new_err(format!("an action must be a str, got {kind}"))
    })
}

/// The entry `key` of `reset`'s `options`, refusing keys other than `known` by name.
pub(crate) fn option<'py>(
    options: Option<&Bound<'py, pyo3::types::PyDict>>,
    key: &str,
    known: &[&str],
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(options) = options else {
        return Ok(None);
    };
    for name in options.keys() {
        let name = name.str()?.to_string();
        if !known.contains(&name.as_str()) {
            return Err(PyValueError::new_err(format!(
                "unknown option `{name}`; expected one of: {}",
                known.join(", ")
            )));
        }
    }
    options.get_item(key)
}

/// An index argument (a game, a goal, a task): an int, and never a bool.
pub(crate) fn index_arg(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<usize>> {
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an int ≥ 0, got bool"
        )));
    }
    Ok(value.extract::<usize>().ok())
}

/// The actions of a batched step: one string per environment.
pub(crate) fn action_texts(actions: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<String>> {
    if actions.is_instance_of::<pyo3::types::PyString>() {
        return Err(PyTypeError::new_err(
            "actions must be a list of str, one per environment, not a single str",
        ));
    }
    let actions: Vec<Bound<'_, PyAny>> = actions
        .try_iter()
        .map_err(|_| PyTypeError::new_err("actions must be a list of str"))?
        .collect::<PyResult<_>>()?;
    if actions.len() != n {
        return Err(PyValueError::new_err(format!(
            "expected {n} actions (one per environment), got {}",
            actions.len()
        )));
    }
    actions.iter().map(action_text).collect()
}

/// verl-agent's action projection: the first `<action>…</action>` of the lower-cased response
/// (its last `fallback_chars` characters when the tags are missing); valid only with the tags,
/// `<think>…</think>` and no CJK characters. Returns `(action, valid)`. ALFWorld uses 30
/// fallback characters, WebShop 20.
#[pyfunction]
#[pyo3(signature = (response, fallback_chars=30))]
fn project_action(response: &str, fallback_chars: usize) -> (String, bool) {
    let parsed = envrl_envs::think_action_projection(response, fallback_chars);
    (parsed.action, parsed.valid)
}

#[pymodule]
fn _envrl(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(project_action, m)?)?;
    alfworld::register(m)?;
    webshop::register(m)?;
    keydoor::register(m)?;
    sokoban::register(m)?;
    Ok(())
}
