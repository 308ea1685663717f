//! `tessera lower`: lower a def, with its sizes bound, to kernel IR, run a
//! pass pipeline over it, and print it.

use std::fmt::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct LowerArgs {
    /// The TC file.
    pub file: PathBuf,
    /// The def to lower (may be left out when the file has one def).
    #[arg(long)]
    pub def: Option<String>,
    /// Bind a size symbol or integer scalar: `--size N=128` (repeatable).
    /// Kernels are lowered for concrete sizes, so every one must be bound.
    #[arg(long = "size", value_name = "SYM=N")]
    pub sizes: Vec<String>,
    /// A pass pipeline: a shipped one by name (`cpu`, or `cpu-serial`
    /// without partitioning) or a file of pass names, one per line.
    #[arg(long, value_name = "NAME|FILE", conflicts_with = "passes")]
    pub pipeline: Option<String>,
    /// Passes to run, in order, comma separated.
    #[arg(long, value_name = "a,b,c")]
    pub passes: Option<String>,
    /// Print the kernel after lowering and after every pass.
    #[arg(long)]
    pub print_after_all: bool,
    /// Run the kernel verifier after every pass (a broken kernel then names
    /// the pass that broke it); without it the kernel is verified after
    /// lowering and after the last pass.
    #[arg(long)]
    pub verify_passes: bool,
    /// A target file describing the machine to compile for (see `tessera
    /// target`); by default this machine, probed once and cached.
    #[arg(long, value_name = "FILE")]
    pub target: Option<PathBuf>,
    /// Kernel options to take instead of the passes' cost models (the
    /// text `--print-options` prints: `step NAME`, then `tile i=64 j=32`,
    /// `order j i k`, `vectorize on|off`, `width 8`, `jam i=8|h=2 w=7|none`,
    /// `parallel i|none`, `unroll on|off|4`, `fuse on|off`, `forward on|off`,
    /// `partitions 4`, one per line).
    #[arg(long, value_name = "FILE")]
    pub options: Option<PathBuf>,
    /// Print, after the kernel, the options the passes took: each step's
    /// tiles, loop order, vectorization and width, jam, parallel index,
    /// unrolling, fusion and forwarding (the cost models' choices where `--options`
    /// sets none).
    #[arg(long)]
    pub print_options: bool,
}

pub fn run(a: &LowerArgs) -> Result<String, String> {
    let message = |e: engine::Error| e.to_string();
    let passes =
        engine::lowering::passes(a.passes.as_deref(), a.pipeline.as_deref()).map_err(message)?;
    let source = engine::Source::read_tc(&a.file).map_err(message)?;
    let def = source.pick_def(a.def.as_deref()).map_err(message)?;
    let given = engine::bind::parse_sizes(&a.sizes).map_err(message)?;
    let options = match &a.options {
        Some(f) => engine::lowering::read_options(f).map_err(message)?,
        None => kernel::Options::default(),
    };
    let mut out = String::new();
    let (block, taken) = engine::lowering::lower(
        source.program(),
        def,
        &given,
        &passes,
        a.target.as_deref(),
        a.verify_passes,
        &options,
        &mut |pass, b| {
            if a.print_after_all {
                match pass {
                    None => {
                        let _ = writeln!(out, "// after lowering\n{}", kernel::print_block(b));
                    }
                    Some(p) => {
                        let _ = writeln!(out, "// after pass {p}\n{}", kernel::print_block(b));
                    }
                }
            }
        },
    )
    .map_err(|e| match e {
        // This command names the def it could not lower.
        engine::Error::NotLowered { reason, .. } => {
            format!("error: cannot lower `{}`: {reason}", def.name)
        }
        engine::Error::Build(runtime::BuildError::Lower(l)) => {
            format!("error: cannot lower `{}`: {l}", def.name)
        }
        e => e.to_string(),
    })?;
    if !a.print_after_all {
        out.push_str(&kernel::print_block(&block));
    }
    if a.print_options {
        let _ = writeln!(out, "// options taken\n{}", kernel::print_options(&taken));
    }
    Ok(out)
}
