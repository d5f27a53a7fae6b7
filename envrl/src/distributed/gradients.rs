//! Gradients summed over ranks: flattened in parameter order into one host buffer, summed by a
//! [`Collective`], and put back.

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{DType, Device, Tensor, TensorData};

use crate::distributed::Collective;
use crate::error::{Error, Result};

/// One float parameter as the flat buffer lays it out.
struct Slot {
    id: ParamId,
    shape: Vec<usize>,
    device: Device,
    dtype: DType,
}

/// First pass: each parameter's gradient on this rank, if it has one, and whether it has one.
struct Flatten<'a> {
    grads: &'a mut GradientsParams,
    slots: Vec<Slot>,
    present: Vec<f32>,
    values: Vec<Option<Vec<f32>>>,
    error: Option<String>,
}

impl ModuleVisitor for Flatten<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let (shape, device, dtype, values) = match self.grads.remove::<D>(param.id) {
            Some(grad) => {
                let (shape, device, dtype) = (grad.dims().to_vec(), grad.device(), grad.dtype());
                match grad.try_into_vec_as::<f32>() {
                    Ok(values) => (shape, device, dtype, Some(values)),
                    Err(e) => {
                        self.error
                            .get_or_insert(format!("reading a gradient: {e:?}"));
                        (shape, device, dtype, None)
                    }
                }
            }
            None => {
                let value = param.val();
                let shape = value.dims().to_vec();
                (shape, value.device().inner(), value.dtype(), None)
            }
        };
        self.present.push(if values.is_some() { 1.0 } else { 0.0 });
        self.values.push(values);
        self.slots.push(Slot {
            id: param.id,
            shape,
            device,
            dtype,
        });
    }
}

/// Second pass: the summed gradient of every parameter that had one on some rank.
struct Rebuild<'a> {
    slots: &'a [Slot],
    present: &'a [f32],
    values: &'a [f32],
    next: usize,
    offset: usize,
    out: GradientsParams,
}

impl ModuleVisitor for Rebuild<'_> {
    fn visit_float<const D: usize>(&mut self, _param: &Param<Tensor<D>>) {
        let slot = &self.slots[self.next];
        if self.present[self.next] > 0.0 {
            let numel = slot.shape.iter().product::<usize>();
            let values = &self.values[self.offset..self.offset + numel];
            let data = TensorData::new(values.to_vec(), slot.shape.clone());
            let grad = Tensor::<D>::from_data(data, (&slot.device, slot.dtype));
            self.out.register(slot.id, grad);
            self.offset += numel;
        }
        self.next += 1;
    }
}

/// The sum over ranks of every rank's `grads` of `module`'s parameters, the same on every rank,
/// and the bytes this rank contributed. The ranks first sum one flag per parameter (whether it
/// has a gradient), then the gradients of the parameters that have one on some rank (ranks
/// without contribute zeros), so the optimizer steps the same parameters as one process would
/// and frozen parameters (a LoRA run's base weights) cost nothing. One rank: `grads` as given,
/// nothing exchanged.
///
/// # Errors
/// [`Error::Distributed`] when the exchange fails or a gradient cannot be read.
pub fn sum_gradients<M: Module>(
    module: &M,
    mut grads: GradientsParams,
    sync: &dyn Collective,
) -> Result<(GradientsParams, usize)> {
    if sync.size() == 1 {
        return Ok((grads, 0));
    }
    let mut flat = Flatten {
        grads: &mut grads,
        slots: Vec::new(),
        present: Vec::new(),
        values: Vec::new(),
        error: None,
    };
    module.visit(&mut flat);
    let Flatten {
        slots,
        mut present,
        values: own,
        error,
        ..
    } = flat;
    if let Some(reason) = error {
        return Err(Error::distributed(sync.rank(), reason));
    }
    sync.sum(&mut present)?;
    let mut values = Vec::new();
    for ((slot, own), &anywhere) in slots.iter().zip(own).zip(&present) {
        if anywhere > 0.0 {
            match own {
                Some(own) => values.extend_from_slice(&own),
                None => values.extend(std::iter::repeat_n(0.0, slot.shape.iter().product())),
            }
        }
    }
    sync.sum(&mut values)?;
    let mut rebuild = Rebuild {
        slots: &slots,
        present: &present,
        values: &values,
        next: 0,
        offset: 0,
        out: GradientsParams::new(),
    };
    module.visit(&mut rebuild);
    let bytes = (present.len() + values.len()) * size_of::<f32>();
    Ok((rebuild.out, bytes))
}
