//! The options of every command that compiles, and the per-step profile
//! table `run --profile` and `bench --profile` print.

use std::fmt::Write as _;
use std::path::PathBuf;

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
    /// Keep convolutions in the layouts the program writes instead of
    /// rewriting them (and the chains reading them) into channel-blocked
    /// ones.
    #[arg(long)]
    pub no_layout: bool,
    /// Compile with the cost models' choices even when the tuning cache
    /// holds options `tessera tune` found for a kernel.
    #[arg(long)]
    pub untuned: bool,
}

impl CompileArgs {
    /// The engine's compile options these arguments give.
    pub fn options(&self) -> engine::Options {
        engine::Options {
            pipeline: self.pipeline.clone(),
            target: self.target.clone(),
            verify_passes: self.verify_passes,
            library: !self.no_library,
            layout: !self.no_layout,
            output_layouts: true,
            tuned: !self.untuned,
            kernel_options: kernel::Options::default(),
        }
    }
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
