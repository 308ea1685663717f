//! `tessera run`: run a def on `.npy` tensors and numbers, compiled to
//! native code (through `runtime`) or, with `--interp`, on the reference
//! interpreter; with `--optimize`, the optimizer's result for the bound
//! sizes instead of the def as written.

use std::fmt::Write;
use std::path::PathBuf;

use engine::{Error, Note, Source};
use interp::Tensor;
use ir::{DType, Value};

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The TC file, or an `.onnx` model (its inputs and outputs keep the
    /// model's names).
    pub file: PathBuf,
    /// The def to run (may be left out when the file has one def).
    #[arg(long)]
    pub def: Option<String>,
    /// `NAME=FILE.npy` for a tensor, `NAME=NUMBER` for a scalar (repeatable).
    #[arg(long = "input", value_name = "NAME=VALUE")]
    pub inputs: Vec<String>,
    /// Bind a size symbol: `--size N=128` (repeatable); for an ONNX model, a symbolic input dimension (else read off the input files)
    #[arg(long = "size", value_name = "SYM=N")]
    pub sizes: Vec<String>,
    /// Seed for the random values of inputs not given.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write each output as DIR/NAME.npy instead of printing it (a name
    /// that is not a plain file name is made one, and the line says so).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run the reference interpreter instead of compiled code.
    #[arg(long, conflicts_with_all = ["emit", "profile"])]
    pub interp: bool,
    /// Write generated code: `--emit c DIR` writes DIR/DEF.c (the program as
    /// one C file: each distinct step function once, and which step calls
    /// it with which buffers) and the kernel IR it comes from, DIR/DEF.kernel.
    #[arg(long, num_args = 2, value_names = ["KIND", "DIR"])]
    pub emit: Option<Vec<String>>,
    /// Print, per step, its time, GFLOP/s, bytes moved and share.
    #[arg(long)]
    pub profile: bool,
    /// First search for a faster equivalent of the def at the bound sizes
    /// (as `tessera optimize` does; the result of an identical earlier
    /// search is reused from the cache), and run that.
    #[arg(long)]
    pub optimize: bool,
    #[command(flatten)]
    pub search: crate::optimize::SearchArgs,
    #[command(flatten)]
    pub compile: crate::compiled::CompileArgs,
}

pub fn run(a: &RunArgs) -> Result<String, String> {
    let mut notes = Vec::new();
    let result = execute(a, &mut notes);
    for n in &notes {
        eprintln!("{n}");
    }
    result.map_err(|e| e.to_string())
}

/// Loads, binds and runs the def the arguments name, noting into `notes`;
/// returns what to print.
fn execute(a: &RunArgs, notes: &mut Vec<Note>) -> Result<String, Error> {
    let search = a.search.requested(a.optimize, &a.compile)?;
    let emit_c = match a.emit.as_deref() {
        None => None,
        Some([kind, dir]) if kind == "c" => Some(PathBuf::from(dir)),
        Some(other) => {
            return Err(Error::Usage(format!(
                "`--emit {}`: the only kind is `c` (`--emit c DIR`)",
                other.join(" ")
            )))
        }
    };
    let setup = engine::Setup {
        compiled: (!a.interp).then(|| a.compile.options()),
        pool: None,
    };
    let (mut source, mut bound, _) = load_and_bind(
        &a.file,
        a.def.as_deref(),
        &a.sizes,
        &a.inputs,
        a.seed,
        &setup,
    )?;
    // Random inputs are told before anything runs.
    notes.append(&mut bound.notes);
    let name = source.pick_def(a.def.as_deref())?.name.clone();
    if let Some(options) = &search {
        crate::optimize::apply(&mut source, a.def.as_deref(), &bound, options)?;
    }
    let def = engine::source::pick_def(source.program(), Some(&name), &source.name)?;
    let options = engine::RunOptions {
        compiled: (!a.interp).then(|| a.compile.options()),
        profile: a.profile,
        emit_c,
        progress: crate::progress::Bars::reporter(),
    };
    let outputs = engine::session::run(&source, def, &bound, &options, notes)?;
    let named: Vec<(String, Tensor)> = outputs
        .tensors
        .into_iter()
        .map(|(n, t)| (source.output_name(&n), t))
        .collect();
    let mut out = print_outputs(a, &named)?;
    if let Some(p) = &outputs.profile {
        out.push_str(&crate::compiled::profile_table(&p.steps));
        out.push_str(&memory_line(p));
    }
    Ok(out)
}

/// The program in `file` (TC, or an `.onnx` model imported with `sizes`
/// and the shapes of its input files) and its def `def`, bound: the
/// `--input` items, the model's weights, seeded random values for the
/// tensors not given (`seed`); and the weights' parameter names. A model
/// whose shapes depend on values it computes runs the part that computes
/// them first, with `setup` ([`engine::stages`]).
pub fn load_and_bind(
    file: &std::path::Path,
    def: Option<&str>,
    sizes: &[String],
    inputs: &[String],
    seed: u64,
    setup: &engine::Setup,
) -> Result<(Source, engine::bind::Bound, Vec<String>), Error> {
    let mut staged = Vec::new();
    let onnx = file.extension().is_some_and(|e| e == "onnx");
    let python = file.extension().is_some_and(|e| e == "py");
    let (mut source, items) = if python {
        let given = engine::bind::parse_sizes(sizes)?;
        let loaded = engine::python::load_python(file, def, &given, inputs, true)?;
        (loaded.source, loaded.items)
    } else if onnx {
        let given = engine::bind::parse_sizes(sizes)?;
        let shapes = engine::bind::item_shapes(inputs)?;
        let declared: std::collections::HashMap<String, DType> =
            onnx::signature(&onnx::load(file)?)
                .inputs
                .into_iter()
                .filter_map(|i| Some((i.name, i.dtype?)))
                .collect();
        let values = engine::bind::item_values(inputs, &declared, engine::bind::SHAPE_LIKE_MOST)?;
        let source = engine::stages::load_onnx(
            file,
            def,
            &given,
            &shapes,
            &values,
            engine::stages::Run {
                feed: &mut || {
                    let all = engine::bind::item_values(inputs, &declared, usize::MAX)?;
                    Ok(all.into_iter().collect())
                },
                setup,
            },
            &mut staged,
        )?;
        let items = engine::bind::model_items(&source, inputs)?;
        (source, items)
    } else {
        (Source::read_tc(file)?, inputs.to_vec())
    };
    // The weights move into the run: one copy of them, not two.
    let weights = source.take_weights();
    let mut names: Vec<String> = weights.keys().cloned().collect();
    names.sort();
    // A Python def is converted for the one def it names, at the sizes
    // its inputs have: the program has that def, with no size symbols.
    let d = source.pick_def(if python { None } else { def })?;
    // An ONNX model's sizes went into its import: its def has no size
    // symbols.
    let given = engine::bind::parse_sizes(if onnx || python { &[] } else { sizes })?;
    let mut args = engine::bind::read_items(d, &items)?;
    args.extend(weights);
    let mut bound = engine::bind::bind(d, args, given, seed)?;
    bound.notes.append(&mut staged);
    Ok((source, bound, names))
}

/// The memory a run used: the buffers' slots (temporaries share slots when
/// their lifetimes do not overlap) and the process's peak resident size.
fn memory_line(p: &engine::Profile) -> String {
    let mib = |b: f64| b / (1024.0 * 1024.0);
    let peak = p.peak_resident_bytes.map_or_else(
        || "unknown".to_string(),
        |b| format!("{:.1} MiB", mib(b as f64)),
    );
    format!(
        "memory: {:.1} MiB of buffers (inputs, weights, outputs, temporaries sharing slots by liveness); peak resident {peak}\n",
        mib(p.slot_bytes as f64)
    )
}

fn print_outputs(a: &RunArgs, outputs: &[(String, Tensor)]) -> Result<String, Error> {
    let mut out = String::new();
    match &a.out {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| {
                Error::Environment(format!("cannot create `{}`: {e}", dir.display()))
            })?;
            let stems = crate::out_files::stems(outputs.iter().map(|(n, _)| n.as_str()));
            for ((n, t), stem) in outputs.iter().zip(stems) {
                let path = dir.join(format!("{stem}.npy"));
                npy::write(&path, t).map_err(|message| Error::Npy {
                    path: path.display().to_string(),
                    message,
                })?;
                // Where the file is not named exactly after the output, the
                // line says which output it holds.
                let renamed = if stem == *n {
                    String::new()
                } else {
                    format!(" (output `{n}`)")
                };
                let _ = writeln!(
                    out,
                    "wrote {} {}({}){renamed}",
                    path.display(),
                    t.dtype(),
                    engine::note::join(t.shape())
                );
            }
        }
        None => {
            for (n, t) in outputs {
                let _ = writeln!(out, "{n}: {}({})", t.dtype(), engine::note::join(t.shape()));
                let _ = writeln!(out, "  {}", preview(t, 10));
            }
        }
    }
    Ok(out)
}

/// The first `n` values, in the shortest form that reads back exactly.
pub fn preview(t: &Tensor, n: usize) -> String {
    let total = t.len();
    let mut vals: Vec<String> = (0..total.min(n))
        .map(|i| match (t.get(i), t.dtype()) {
            (Value::Float(x), DType::F32) => format!("{:?}", x as f32),
            (Value::Float(x), _) => format!("{x:?}"),
            (Value::Bool(b), _) => b.to_string(),
            (Value::Int(v), DType::U64) => (v as u64).to_string(),
            (Value::Int(v), _) => v.to_string(),
        })
        .collect();
    if total > n {
        vals.push(format!("... ({total} values)"));
    }
    format!("[{}]", vals.join(", "))
}
