//! Range checks of configured numbers, shared by the estimators, the actor loss and the
//! registry that composes them: each names its field and rule in the error.

/// `Ok` when `value` is finite and `ok(value)` holds, else an [`envrl::Error::InvalidConfig`]
/// naming `field` and `rule`.
pub(crate) fn check(
    field: &'static str,
    value: f64,
    ok: impl Fn(f64) -> bool,
    rule: &str,
) -> envrl::Result<()> {
    if value.is_finite() && ok(value) {
        Ok(())
    } else {
        Err(envrl::Error::config(
            field,
            format!("must be {rule}, got {value}"),
        ))
    }
}

/// `algorithm.advantage.invalid_penalty` must be ≥ 0 (GRPO, RLOO, GiGPO).
pub(crate) fn check_penalty(penalty: f32) -> envrl::Result<()> {
    check(
        "algorithm.advantage.invalid_penalty",
        penalty as f64,
        |v| v >= 0.0,
        "≥ 0",
    )
}
