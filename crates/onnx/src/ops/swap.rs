//! Transposes of the last two axes, deferred to their readers: a matrix
//! product reads the untransposed tensor with its operand transposed (the
//! prelude's `_tb` products), so the transpose is never copied; any other
//! reader gets it computed (`transpose_rK_...`, once, at the first such
//! reader: [`Importer::unswap`]).
//!
//! Requires: the source is a tensor of the model def of rank 2 to 5.
//! Guarantees: every reader sees the transposed values; a `MatMul` whose
//! second operand is such a transpose computes the same sums in the same
//! order as on the copied transpose.

use ir::DType;

use crate::build::{Node, Value, Var};
use crate::import::Importer;

impl Importer<'_> {
    /// Makes every deferred transpose among `n`'s inputs computed.
    pub(crate) fn unswap_inputs(&mut self, n: &Node) {
        for name in n.proto.input.iter() {
            self.unswap(name);
        }
    }

    /// Makes value `name` computed if it is a deferred transpose.
    pub(crate) fn unswap(&mut self, name: &str) {
        if self.values.contains_key(name) {
            return;
        }
        let Some(v) = self.swapped.get(name).cloned() else {
            return;
        };
        let r = v.shape.len();
        let mut perm: Vec<usize> = (0..r).collect();
        perm.swap(r - 2, r - 1);
        let def = self.b.forms.transpose(v.dtype, &perm);
        let y = self
            .b
            .call(&def, &[&v], &[], v.dtype, swapped_shape(&v.shape));
        self.values.insert(name.to_string(), Value::Var(y));
    }

    /// Input `k` of `n` as the tensor it transposes (last two axes), if it
    /// is a deferred transpose not yet computed.
    pub(crate) fn swapped_input(&self, n: &Node, k: usize) -> Option<Var> {
        let name = n.input(k)?;
        if self.values.contains_key(name) {
            return None;
        }
        self.swapped.get(name).cloned()
    }
}

/// Defers output 0 of `n`, `v` with its last two axes swapped; false when
/// `perm` is not such a swap of a float32 tensor of rank 2 to 5.
pub(crate) fn defer(im: &mut Importer, n: &Node, v: &Var, perm: &[usize]) -> bool {
    let r = perm.len();
    let swaps_last = (2..=5).contains(&r)
        && perm[..r - 2].iter().enumerate().all(|(k, &p)| k == p)
        && perm[r - 2..] == [r - 1, r - 2];
    if !swaps_last || v.dtype != DType::F32 {
        return false;
    }
    if let Some(name) = n.proto.output.first().filter(|s| !s.is_empty()) {
        im.swapped.insert(name.clone(), v.clone());
    }
    true
}

/// `shape` with its last two dimensions swapped.
pub(crate) fn swapped_shape(shape: &[usize]) -> Vec<usize> {
    let mut s = shape.to_vec();
    let r = s.len();
    s.swap(r - 2, r - 1);
    s
}
