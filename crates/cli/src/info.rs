//! `tessera info`: what an ONNX model holds: inputs, outputs, an operator
//! histogram, and the operators tessera cannot import yet.

use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// The `.onnx` model.
    pub model: PathBuf,
}

pub fn run(a: &InfoArgs) -> Result<String, String> {
    let info = onnx::info(&a.model).map_err(|e| format!("error: {e}"))?;
    Ok(onnx::print_info(&info))
}
