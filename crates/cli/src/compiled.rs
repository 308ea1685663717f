//! The native path shared by `run` and `bench`: the options that choose a
//! pipeline and a target, building a def into an [`runtime::Executable`],
//! and moving tensors in and out of it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use interp::{Arg, Tensor};
use ir::{Def, Program};

/// Options of every command that compiles.
#[derive(clap::Args, Debug, Clone)]
pub struct CompileArgs {
    /// The pass pipeline: a shipped one by name (`cpu`, `cpu-serial`) or a
    /// file of pass names.
    #[arg(long, value_name = "NAME|FILE", default_value = "cpu")]
    pub pipeline: String,
    /// A target file describing the machine (see `tessera target`); by
    /// default this machine, probed once and cached.
    #[arg(long, value_name = "FILE")]
    pub target: Option<PathBuf>,
    /// Run the kernel verifier after every pass, not only after the last.
    #[arg(long)]
    pub verify_passes: bool,
    /// Compile matmuls to generated code instead of calling the matmul
    /// library.
    #[arg(long)]
    pub no_library: bool,
}

/// The target the arguments name.
pub fn target(a: &CompileArgs) -> Result<kernel::Target, String> {
    match &a.target {
        Some(f) => {
            let text = std::fs::read_to_string(f)
                .map_err(|e| format!("error: cannot read `{}`: {e}", f.display()))?;
            kernel::Target::from_text(&text).map_err(|e| format!("error: `{}`: {e}", f.display()))
        }
        None => kernel::Target::cached().map_err(|e| format!("error: {e}")),
    }
}

/// Compiles `def` for `sizes`; the cache is tessera's per-user one.
pub fn build(
    a: &CompileArgs,
    program: &Program,
    def: &Def,
    sizes: &HashMap<String, i64>,
) -> Result<runtime::Executable, Built> {
    let passes = crate::lower::pipeline_passes(&a.pipeline).map_err(Built::Setup)?;
    let options = runtime::Options {
        passes,
        target: target(a).map_err(Built::Setup)?,
        verify: if a.verify_passes {
            kernel::Verify::EachPass
        } else {
            kernel::Verify::AtEnd
        },
        library: !a.no_library,
    };
    let cache = codegen::cache::KernelCache::open_default()
        .map_err(|e| Built::Setup(format!("error: {e}")))?;
    runtime::build(program, &def.name, sizes, &options, &cache).map_err(Built::Failed)
}

/// Why [`build`] gave no executable: the arguments or the environment
/// (a message to report as is), or the build itself.
#[derive(Debug)]
pub enum Built {
    Setup(String),
    Failed(runtime::BuildError),
}

impl Built {
    /// The message to report when nothing else can be done.
    pub fn message(self) -> String {
        match self {
            Built::Setup(m) => m,
            Built::Failed(e) => format!("error: {e}"),
        }
    }
}

/// Sets every argument in `state`.
pub fn set_args(
    exe: &runtime::Executable,
    state: &mut runtime::State,
    args: &HashMap<String, Arg>,
) -> Result<(), String> {
    for (name, a) in args {
        match a {
            Arg::Tensor(t) => exe.bind(state, name, t),
            Arg::Scalar(v) => exe.set_values(state, name, &[*v]),
        }
        .map_err(|e| format!("error: input `{name}`: {e}"))?;
    }
    Ok(())
}

/// The def's results from `state`, as tensors.
pub fn outputs(
    exe: &runtime::Executable,
    state: &runtime::State,
    def: &Def,
) -> Result<Vec<(String, Tensor)>, String> {
    def.outputs
        .iter()
        .map(|name| {
            let t = exe.output(state, name).map_err(|e| format!("error: {e}"))?;
            Ok((name.clone(), t))
        })
        .collect()
}

/// A per-step profile as a table: time, GFLOP/s, bytes moved and share.
pub fn profile_table(steps: &[runtime::StepProfile]) -> String {
    let total: f64 = steps.iter().map(|s| s.time.as_secs_f64()).sum();
    let mut out = String::from("profile:\n");
    let _ = writeln!(
        out,
        "  {:>4}  {:>10}  {:>8}  {:>10}  {:>6}  step",
        "#", "time (ms)", "GFLOP/s", "MB moved", "share"
    );
    for (k, s) in steps.iter().enumerate() {
        let secs = s.time.as_secs_f64();
        let gflops = if secs > 0.0 {
            s.flops as f64 / secs / 1e9
        } else {
            0.0
        };
        let share = if total > 0.0 {
            secs / total * 100.0
        } else {
            0.0
        };
        let comment: String = s.comment.chars().take(70).collect();
        let _ = writeln!(
            out,
            "  {k:>4}  {:>10.4}  {gflops:>8.2}  {:>10.3}  {share:>5.1}%  {} // {comment}",
            secs * 1e3,
            s.bytes as f64 / 1e6,
            s.block
        );
    }
    let _ = writeln!(out, "  total {:.4} ms", total * 1e3);
    out
}
