//! `tessera functionalize`: a def of a Python file, traced at its inputs'
//! shapes and converted by TensorSSA's algorithm, printed as TC with loop
//! and branch regions, with the mutations the conversion removed.

use std::fmt::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct FunctionalizeArgs {
    /// The Python file.
    pub file: PathBuf,
    /// The def to convert (may be left out when the file has one def).
    #[arg(long)]
    pub def: Option<String>,
    /// `NAME=FILE.npy` for a tensor (its shape and type are what the def
    /// is traced at), `NAME=NUMBER` for a number (repeatable).
    #[arg(long = "input", value_name = "NAME=VALUE")]
    pub inputs: Vec<String>,
    /// Bind a size symbol of the annotations: `--size N=128` (repeatable);
    /// tensors not given as inputs take their annotated shapes.
    #[arg(long = "size", value_name = "SYM=N")]
    pub sizes: Vec<String>,
    /// Print the program after horizontal parallelization and vertical
    /// fusion (what `run` compiles): loops whose iterations update
    /// disjoint slices become comprehensions over the loop index, and
    /// views and single-use elementwise results are substituted into the
    /// statements that read them.
    #[arg(long)]
    pub fuse: bool,
    /// Also print on standard error how long the conversion took, from
    /// reading the file to the printed program (process start-up and the
    /// output's writing excluded): `conversion: 4.21 ms`.
    #[arg(long)]
    pub time: bool,
}

pub fn run(a: &FunctionalizeArgs) -> Result<String, String> {
    let sizes = engine::bind::parse_sizes(&a.sizes).map_err(|e| e.to_string())?;
    let start = std::time::Instant::now();
    let loaded = engine::python::load_python(&a.file, a.def.as_deref(), &sizes, &a.inputs, a.fuse)
        .map_err(|e| e.to_string())?;
    if a.time {
        eprintln!("conversion: {:.2} ms", start.elapsed().as_secs_f64() * 1e3);
    }
    let mut out = loaded.source.text.clone();
    let n = loaded.removed.len();
    let _ = writeln!(
        out,
        "\n# {n} mutation{} removed{}",
        if n == 1 { "" } else { "s" },
        if n == 0 { "" } else { ":" }
    );
    for r in &loaded.removed {
        let _ = writeln!(out, "#   {r}");
    }
    Ok(out)
}
