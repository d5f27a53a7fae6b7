//! How much memory the machine can give: sizes that cannot fit are refused by name before
//! anything is allocated (an allocation that fails aborts the process).

/// Bytes the machine can give new allocations now: Linux's `MemAvailable`, capped by the
/// cgroup's limit when it sets one; `None` where neither can be read.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(|text| {
        text.lines()
            .find_map(|line| line.strip_prefix("MemAvailable:"))
            .and_then(|rest| rest.trim().strip_suffix("kB"))
            .and_then(|kb| kb.trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|path| {
        std::fs::read_to_string(path)
            .ok()?
            .trim()
            .parse::<u64>()
            .ok()
    });
    match (available, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

/// `bytes` in GiB, for messages.
fn gib(bytes: u128) -> f64 {
    bytes as f64 / f64::from(1u32 << 30)
}

/// Why `needed` bytes of `what` cannot be allocated, when the machine has fewer `available`
/// (`None` when they fit or the available memory is unknown).
pub fn shortfall(what: &str, needed: u128, available: Option<u64>) -> Option<String> {
    let available = available?;
    (needed > u128::from(available)).then(|| {
        format!(
            "{what} need at least {:.1} GiB, but this machine has {:.1} GiB available",
            gib(needed),
            gib(u128::from(available))
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_reports_some_memory_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(available_memory().is_some_and(|bytes| bytes > 1 << 20));
        }
    }

    #[test]
    fn a_shortfall_names_what_and_both_sizes() {
        let reason = shortfall("the games", 3 << 30, Some(1 << 30)).unwrap();
        assert_eq!(
            reason,
            "the games need at least 3.0 GiB, but this machine has 1.0 GiB available"
        );
        assert!(shortfall("the games", 1 << 30, Some(1 << 30)).is_none());
        assert!(shortfall("the games", u128::MAX, None).is_none());
    }
}
