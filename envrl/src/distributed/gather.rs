//! Every rank's value of a type, exchanged as MessagePack.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::distributed::Collective;
use crate::error::{Error, Result};

/// Every rank's `value`, in rank order, and the bytes this rank sent. MessagePack keeps every
/// float's bits (a NaN reward or an infinite loss arrives as it left, so every rank handles it
/// as one process would). `what` names the value in errors. One rank: its own value, nothing
/// sent.
///
/// # Errors
/// [`Error::Distributed`] when the exchange fails or a rank's value cannot be read, naming it.
pub fn gather<T: Serialize + DeserializeOwned>(
    sync: &dyn Collective,
    what: &str,
    value: &T,
) -> Result<(Vec<T>, usize)> {
    let rank = sync.rank();
    let mine = rmp_serde::to_vec(value)
        .map_err(|e| Error::distributed(rank, format!("encoding {what}: {e}")))?;
    let decode = |other: usize, bytes: &[u8]| {
        rmp_serde::from_slice(bytes).map_err(|e| {
            Error::distributed(rank, format!("rank {other} sent an unreadable {what}: {e}"))
        })
    };
    if sync.size() == 1 {
        return Ok((vec![decode(0, &mine)?], 0));
    }
    let values = sync
        .all_gather(&mine)?
        .iter()
        .enumerate()
        .map(|(other, bytes)| decode(other, bytes))
        .collect::<Result<Vec<T>>>()?;
    Ok((values, mine.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::SingleProcess;

    #[test]
    fn one_rank_gets_its_own_value_back_bit_for_bit() {
        let value = vec![f32::NAN, f32::NEG_INFINITY, 1.0 + f32::EPSILON];
        let (values, sent) = gather(&SingleProcess, "a test value", &value).unwrap();
        assert_eq!(sent, 0);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&values[0]), bits(&value));
    }
}
