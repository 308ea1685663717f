//! The `tessera` command-line tool.
//!
//! Exit status: 0 on success, 1 for an error in the program or the data
//! (the message starts with `error:`), 2 for a usage error (from clap), 3
//! when `tessera verify` finds the two defs not equivalent.

mod bench;
mod cache;
mod check;
mod compiled;
mod derive;
mod equiv;
mod functionalize;
mod info;
mod load;
mod lower;
mod optimize;
mod out_files;
mod progress;
mod run;
mod split;
mod target;
mod tune;
mod tune_worker;
mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

// Compiling a large model makes and drops millions of small values (affine
// forms, names, kernel IR nodes) on both cores; with mimalloc instead of
// the system allocator, compiling a 3000-node ONNX chain took 3.2 s
// instead of 4.2 s.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "tessera",
    version,
    about = "A tensor-program optimizer and compiler for the CPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse, check and infer ranges; print every def's tensors and ranges.
    Check(check::CheckArgs),
    /// Run a def, compiled to native code (or with `--interp`, the
    /// reference interpreter), on .npy inputs and numbers.
    Run(run::RunArgs),
    /// Measure a compiled def: median and minimum time, GFLOP/s, fraction
    /// of peak.
    Bench(bench::BenchArgs),
    /// Inspect or clear the compiled-kernel cache.
    Cache(cache::CacheArgs),
    /// Lower a def, for concrete sizes, to kernel IR and print it.
    Lower(lower::LowerArgs),
    /// Print the target machine description (probed once, then cached).
    Target(target::TargetArgs),
    /// Summarize an ONNX model: inputs, outputs, an operator histogram and
    /// the operators tessera cannot import yet.
    Info(info::InfoArgs),
    /// Cut a def at its non-linear statements into maximal multi-linear
    /// subprograms and print them.
    Split(split::SplitArgs),
    /// Search for a faster equivalent of a def (proved rewrite rules in an
    /// e-graph, candidates measured), prove it equal, and print it as TC.
    Optimize(optimize::OptimizeArgs),
    /// Decide whether two defs compute the same outputs (exactly, over
    /// Z_p, for multi-linear programs; else in floating point), and list
    /// the output regions where they differ.
    Verify(verify::VerifyArgs),
    /// Derive a def's expressions (OLLIE): rewrite its comprehensions by
    /// derivation rules, match parts to predefined operators, generate
    /// the rest; print the fastest program found, proved equal.
    Derive(derive::DeriveArgs),
    /// Convert a def of an imperative Python file (PyTorch style, with
    /// views, in-place updates, loops and branches) into a functional TC
    /// program (TensorSSA), print it and the mutations it removed.
    Functionalize(functionalize::FunctionalizeArgs),
    /// Tune the kernel options of a TC def or an ONNX model: a genetic
    /// search (TC §6), every candidate checked and timed in a worker
    /// process of its own; the winner is kept in the tuning cache
    /// (`--show` lists it).
    Tune(tune::TuneArgs),
    /// Measure one autotuning job read as JSON from standard input (the
    /// autotuner's worker process; not for direct use).
    #[command(hide = true)]
    TuneWorker(tune_worker::TuneWorkerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(a) => check::run(&a),
        Command::Run(a) => run::run(&a),
        Command::Bench(a) => bench::run(&a),
        Command::Cache(a) => cache::run(&a),
        Command::Lower(a) => lower::run(&a),
        Command::Target(a) => target::run(&a),
        Command::Split(a) => split::run(&a),
        Command::Info(a) => info::run(&a),
        Command::Optimize(a) => optimize::run(&a),
        Command::Derive(a) => derive::run(&a),
        Command::Functionalize(a) => functionalize::run(&a),
        Command::Tune(a) => tune::run(&a),
        Command::TuneWorker(a) => tune_worker::run(&a),
        Command::Verify(a) => match verify::run(&a) {
            Ok((out, true)) => Ok(out),
            Ok((out, false)) => {
                print!("{out}");
                return ExitCode::from(3);
            }
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(msg) => {
            eprint!("{msg}");
            if !msg.ends_with('\n') {
                eprintln!();
            }
            ExitCode::from(1)
        }
    }
}
