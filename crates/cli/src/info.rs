//! `tessera info`: what an ONNX model holds: inputs, outputs, an operator
//! histogram, the operators tessera has no importer for, and every node
//! the import refuses (the import runs, as `run`'s does).

use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    /// The `.onnx` model.
    pub model: PathBuf,
    /// Bind a symbolic input dimension for the import: `--size batch=1` (repeatable)
    #[arg(long = "size", value_name = "SYM=N")]
    pub sizes: Vec<String>,
}

pub fn run(a: &InfoArgs) -> Result<String, String> {
    let sizes = crate::load::parse_sizes(&a.sizes)?;
    let info = onnx::info(&a.model, &sizes).map_err(|e| format!("error: {e}"))?;
    Ok(onnx::print_info(&info))
}
