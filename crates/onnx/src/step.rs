//! Runtime steps: what an operator whose output shape depends on its
//! input's values (`NonZero`, `Compress`, `Unique`) computes, when that
//! input is a tensor the model computes.
//!
//! The import reads that tensor's value, which a caller found by running
//! the part of the model that computes it, and makes the operator's
//! outputs weights of the model def. The program depends on their shapes
//! only; a caller that runs the model again on other inputs computes the
//! tensor anew (the same part runs), recomputes the outputs with
//! [`Step::compute`], and reuses the program if their shapes are the same,
//! passing the new outputs in place of the weights.

use std::sync::Arc;

use tensor::Tensor;

/// What a step computes from its input's value: its outputs, or an error
/// that names the node (an output that would be empty).
pub type Compute = Arc<dyn Fn(&Tensor) -> Result<Vec<Tensor>, String> + Send + Sync>;

/// One runtime step of an imported model.
#[derive(Clone)]
pub struct Step {
    /// The tensor it computes from, by ONNX name.
    pub input: String,
    /// The weights (by TC name) that hold its outputs, in order.
    pub weights: Vec<String>,
    pub compute: Compute,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step")
            .field("input", &self.input)
            .field("weights", &self.weights)
            .finish_non_exhaustive()
    }
}
