//! `tessera run`: run a def on `.npy` tensors and numbers, compiled to
//! native code (through `runtime`) or, with `--interp`, on the reference
//! interpreter.

use std::collections::HashMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use interp::{Arg, Data, Tensor};
use ir::{DType, Def, Param, Value};
use runtime::BuildError;

use crate::compiled::Built;

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
    /// Write each output as DIR/NAME.npy instead of printing it.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run the reference interpreter instead of compiled code.
    #[arg(long, conflicts_with_all = ["emit", "profile"])]
    pub interp: bool,
    /// Write generated code: `--emit c DIR` writes DIR/DEF.c and the kernel
    /// IR it comes from, DIR/DEF.kernel.
    #[arg(long, num_args = 2, value_names = ["KIND", "DIR"])]
    pub emit: Option<Vec<String>>,
    /// Print, per step, its time, GFLOP/s, bytes moved and share.
    #[arg(long)]
    pub profile: bool,
    #[command(flatten)]
    pub compile: crate::compiled::CompileArgs,
}

pub fn run(a: &RunArgs) -> Result<String, String> {
    if a.file.extension().is_some_and(|e| e == "onnx") {
        return run_onnx(a);
    }
    let (name, text) = crate::load::read_source(&a.file)?;
    let checked = tc::check_source(&text).map_err(|d| tc::render_diagnostics(&d, &name, &text))?;
    let def = pick_def(&checked.program, a.def.as_deref(), &name)?;
    let source = Source {
        checked: &checked,
        name: &name,
        text: &text,
    };
    let outputs = execute(a, &source, def, &a.inputs, &a.sizes, HashMap::new())?;
    print_outputs(a, &outputs.0, &outputs.1)
}

/// Runs an ONNX model: imported into a TC program whose `model` def takes
/// the graph inputs and the weights; inputs are named as in the model, and
/// so are the outputs.
fn run_onnx(a: &RunArgs) -> Result<String, String> {
    let mut m = OnnxProgram::load(&a.file, a.def.as_deref(), &a.sizes, &a.inputs)?;
    // The weights move into the run: one copy of them, not two.
    let weights = std::mem::take(&mut m.weights);
    let def = pick_def(&m.checked.program, Some(onnx::MODEL_DEF), &m.name)?;
    let source = Source {
        checked: &m.checked,
        name: &m.name,
        text: &m.text,
    };
    // The sizes went into the import: the model def has no size symbols.
    let (outputs, profile) = execute(a, &source, def, &m.inputs, &[], weights)?;
    let renamed: Vec<(String, Tensor)> = outputs
        .into_iter()
        .map(|(tc, t)| {
            let onnx = m
                .model
                .outputs
                .iter()
                .find(|p| p.tc == tc)
                .map_or(tc, |p| p.onnx.clone());
            (onnx, t)
        })
        .collect();
    print_outputs(a, &renamed, &profile)
}

/// An ONNX model imported and checked, with its `--input` items renamed
/// to the model def's parameters and its weights as arguments.
pub struct OnnxProgram {
    pub model: onnx::Model,
    pub checked: tc::Checked,
    pub name: String,
    pub text: String,
    /// `--input` items with the model def's parameter names.
    pub inputs: Vec<String>,
    pub weights: HashMap<String, Arg>,
}

impl OnnxProgram {
    pub fn load(
        file: &Path,
        def: Option<&str>,
        sizes: &[String],
        items: &[String],
    ) -> Result<OnnxProgram, String> {
        if def.is_some() {
            return Err("error: `--def` does not apply to an ONNX model".to_string());
        }
        let given = crate::load::parse_sizes(sizes)?;
        // Symbolic input dimensions not given with `--size` are read off the
        // shapes of the input files.
        let mut shapes = HashMap::new();
        for it in items {
            if let Some((k, v)) = it.split_once('=') {
                if v.trim().ends_with(".npy") {
                    shapes.insert(k.trim().to_string(), npy::shape(Path::new(v.trim()))?);
                }
            }
        }
        let model = onnx::load(file)
            .and_then(|loaded| onnx::import_loaded(loaded, &given, &shapes))
            .map_err(|e| format!("error: {e}"))?;
        let mut inputs = Vec::new();
        for it in items {
            let (k, v) = it
                .split_once('=')
                .ok_or_else(|| format!("error: `--input {it}` is not of the form NAME=FILE.npy"))?;
            let port = model
                .inputs
                .iter()
                .find(|p| p.onnx == k.trim())
                .ok_or_else(|| {
                    let names: Vec<String> = model
                        .inputs
                        .iter()
                        .map(|p| format!("`{}`", p.onnx))
                        .collect();
                    format!(
                        "error: the model has no input `{}`\n  = help: its inputs are {}",
                        k.trim(),
                        names.join(", ")
                    )
                })?;
            inputs.push(format!("{}={v}", port.tc));
        }
        // The weights move into the arguments: one copy of them, not two.
        let mut model = model;
        let weights = std::mem::take(&mut model.weights)
            .into_iter()
            .map(|(n, t)| (n, Arg::Tensor(t)))
            .collect();
        let text = format!("{}\n{}", onnx::PRELUDE, model.source);
        let name = file.display().to_string();
        let checked =
            tc::check_source(&text).map_err(|d| tc::render_diagnostics(&d, &name, &text))?;
        Ok(OnnxProgram {
            model,
            checked,
            name,
            text,
            inputs,
            weights,
        })
    }
}

/// A checked program and the source it came from, for messages.
struct Source<'a> {
    checked: &'a tc::Checked,
    name: &'a str,
    text: &'a str,
}

/// Runs `def` compiled (or interpreted) on the `--input` items and the
/// `preset` arguments; returns the outputs and the profile table.
fn execute(
    a: &RunArgs,
    source: &Source,
    def: &Def,
    inputs: &[String],
    sizes: &[String],
    preset: HashMap<String, Arg>,
) -> Result<(Vec<(String, Tensor)>, String), String> {
    let program = &source.checked.program;
    let (checked, name, text) = (source.checked, source.name, source.text);
    let emit_dir = match a.emit.as_deref() {
        None => None,
        Some([kind, dir]) if kind == "c" => Some(PathBuf::from(dir)),
        Some(other) => {
            return Err(format!(
                "error: `--emit {}`: the only kind is `c` (`--emit c DIR`)",
                other.join(" ")
            ))
        }
    };
    let given = crate::load::parse_sizes(sizes)?;
    let (args, sizes) = prepare_args(def, inputs, &given, a.seed, preset)?;
    let mut profile_text = String::new();
    if !a.interp {
        match compiled(
            a,
            program,
            def,
            &sizes,
            &args,
            emit_dir.as_deref(),
            &mut profile_text,
        ) {
            Ok(outputs) => return Ok((outputs, profile_text)),
            Err(Fallback::NotCompiled(why)) => {
                eprintln!(
                    "note: `{}` is not compiled yet ({why}); running the interpreter",
                    def.name
                );
            }
            Err(Fallback::Failed(why)) => {
                // The interpreter locates the error in the source; if it
                // finds none, the compiled path is at fault.
                interpret(program, def, &args, &given, checked, name, text)?;
                return Err(format!(
                    "error: internal error: the compiled path failed where the interpreter succeeds: {why}\n  = help: this is a bug in tessera; `--interp` runs the interpreter"
                ));
            }
            Err(Fallback::Error(e)) => return Err(e),
        }
    }
    let outputs = interpret(program, def, &args, &given, checked, name, text)?;
    Ok((outputs, profile_text))
}

/// Every size symbol and integer scalar, bound.
pub type Sizes = HashMap<String, i64>;

/// The def's arguments: the `--input` items, and seeded random tensors for
/// the inputs not given (a note on standard error names each). Returns them
/// with every size and integer scalar bound.
pub fn prepare_args(
    def: &Def,
    inputs: &[String],
    given: &HashMap<String, i64>,
    seed: u64,
    preset: HashMap<String, Arg>,
) -> Result<(HashMap<String, Arg>, Sizes), String> {
    let mut args = read_inputs(def, inputs)?;
    args.extend(preset);
    let sizes =
        interp::bind_sizes(def, &args, given).map_err(|e| format!("error: {}", e.message))?;
    let mut notes = String::new();
    for (k, p) in def.params.iter().enumerate() {
        if args.contains_key(p.name()) {
            continue;
        }
        match p {
            Param::Scalar { name, dtype } => {
                return Err(format!("error: scalar `{name}` ({dtype}) has no value\n  = help: pass `--input {name}=NUMBER`"));
            }
            Param::Tensor(t) => {
                let shape = interp::param_shape(def, t, &sizes).map_err(|e| {
                    format!("error: cannot make a random value for input `{t}`: {}\n  = help: pass `--input {t}=FILE.npy` or bind the size with `--size`", e.message)
                })?;
                let dtype = def.tensor(t).map(|d| d.dtype).unwrap_or(DType::F32);
                let seed = seed.wrapping_add(k as u64);
                let _ = writeln!(
                    notes,
                    "note: input `{t}` is random {dtype}({}), seed {seed}",
                    join(&shape)
                );
                args.insert(t.clone(), Arg::Tensor(Tensor::random(dtype, &shape, seed)));
            }
        }
    }
    eprint!("{notes}");
    Ok((args, sizes))
}

/// Why the compiled path gave no outputs.
enum Fallback {
    /// Lowering does not handle the def yet: the interpreter runs it.
    NotCompiled(String),
    /// Lowering, compiling or a compiled step failed: the interpreter
    /// reports the program's error, if it has one.
    Failed(String),
    /// An error to report as is.
    Error(String),
}

fn compiled(
    a: &RunArgs,
    program: &ir::Program,
    def: &Def,
    sizes: &HashMap<String, i64>,
    args: &HashMap<String, Arg>,
    emit_dir: Option<&Path>,
    profile_text: &mut String,
) -> Result<Vec<(String, Tensor)>, Fallback> {
    let exe = crate::compiled::build(&a.compile, program, def, sizes).map_err(|e| match e {
        Built::Failed(BuildError::Lower(l)) if l.kind == kernel::LowerErrorKind::NotLoweredYet => {
            Fallback::NotCompiled(l.message)
        }
        // A program error the lowering finds (an `=` reading out of
        // bounds) or a bug: the interpreter tells which.
        Built::Failed(e @ (BuildError::Lower(_) | BuildError::Internal(_))) => {
            Fallback::Failed(e.to_string())
        }
        e => Fallback::Error(e.message()),
    })?;
    if let Some(dir) = emit_dir {
        std::fs::create_dir_all(dir).map_err(|e| {
            Fallback::Error(format!("error: cannot create `{}`: {e}", dir.display()))
        })?;
        for (ext, body) in [
            ("c", exe.c.source.clone()),
            ("kernel", kernel::print_block(&exe.block)),
        ] {
            let path = dir.join(format!("{}.{ext}", def.name));
            std::fs::write(&path, body).map_err(|e| {
                Fallback::Error(format!("error: cannot write `{}`: {e}", path.display()))
            })?;
            eprintln!("note: wrote {}", path.display());
        }
    }
    let mut state = exe.state();
    crate::compiled::set_args(&exe, &mut state, args).map_err(Fallback::Error)?;
    let mut steps = Vec::new();
    exe.run(&mut state, a.profile.then_some(&mut steps))
        .map_err(Fallback::Failed)?;
    if a.profile {
        profile_text.push_str(&crate::compiled::profile_table(&steps));
        profile_text.push_str(&memory_line(exe.plan.total_bytes()));
    }
    crate::compiled::outputs(&exe, &state, def, sizes).map_err(Fallback::Error)
}

/// The memory a run used: the buffers' slots (temporaries share slots when
/// their lifetimes do not overlap) and the process's peak resident size.
fn memory_line(slot_bytes: usize) -> String {
    let mib = |b: f64| b / (1024.0 * 1024.0);
    // Linux reports the peak resident set as `VmHWM: N kB`.
    let peak = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or_else(
            || "unknown".to_string(),
            |kb| format!("{:.1} MiB", mib(kb * 1024.0)),
        );
    format!(
        "memory: {:.1} MiB of buffers (inputs, weights, outputs, temporaries sharing slots by liveness); peak resident {peak}\n",
        mib(slot_bytes as f64)
    )
}

fn interpret(
    program: &ir::Program,
    def: &Def,
    args: &HashMap<String, Arg>,
    given: &HashMap<String, i64>,
    checked: &tc::Checked,
    name: &str,
    text: &str,
) -> Result<Vec<(String, Tensor)>, String> {
    interp::run(program, &def.name, args, given, interp::Mode::Real).map_err(|e| {
        let span = e
            .stmt
            .and_then(|s| checked.stmt_spans.get(&(e.def.clone(), s)).copied());
        match span {
            Some(span) => {
                let d = tc::Diagnostic::error(e.message.clone(), span)
                    .with_label(format!("in this statement of `{}`", e.def));
                tc::render_diagnostics(&[d], name, text)
            }
            None => format!("error: {} (in def `{}`)", e.message, e.def),
        }
    })
}

fn print_outputs(
    a: &RunArgs,
    outputs: &[(String, Tensor)],
    profile: &str,
) -> Result<String, String> {
    let mut out = String::new();
    match &a.out {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("error: cannot create `{}`: {e}", dir.display()))?;
            for (n, t) in outputs {
                let path = dir.join(format!("{n}.npy"));
                npy::write(&path, t)?;
                let _ = writeln!(
                    out,
                    "wrote {} {}({})",
                    path.display(),
                    t.dtype,
                    join(&t.shape)
                );
            }
        }
        None => {
            for (n, t) in outputs {
                let _ = writeln!(out, "{n}: {}({})", t.dtype, join(&t.shape));
                let _ = writeln!(out, "  {}", preview(t, 10));
            }
        }
    }
    out.push_str(profile);
    Ok(out)
}

pub fn pick_def<'p>(p: &'p ir::Program, want: Option<&str>, file: &str) -> Result<&'p Def, String> {
    let names = || {
        p.defs
            .iter()
            .map(|d| format!("`{}`", d.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match want {
        Some(n) => p.def(n).ok_or_else(|| {
            format!(
                "error: `{file}` has no def `{n}`\n  = help: its defs are {}",
                names()
            )
        }),
        None if p.defs.len() == 1 => Ok(&p.defs[0]),
        None => Err(format!(
            "error: `{file}` has several defs; choose one with `--def`\n  = help: its defs are {}",
            names()
        )),
    }
}

fn read_inputs(def: &Def, items: &[String]) -> Result<HashMap<String, Arg>, String> {
    let mut args = HashMap::new();
    for it in items {
        let Some((k, v)) = it.split_once('=') else {
            return Err(format!(
                "error: `--input {it}` is not of the form NAME=FILE.npy or NAME=NUMBER"
            ));
        };
        let (k, v) = (k.trim(), v.trim());
        let Some(param) = def.params.iter().find(|p| p.name() == k) else {
            let names = def
                .params
                .iter()
                .map(|p| format!("`{}`", p.name()))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(format!(
                "error: def `{}` has no parameter `{k}`\n  = help: its parameters are {names}",
                def.name
            ));
        };
        let arg =
            match param {
                Param::Scalar { dtype, .. } => Arg::Scalar(parse_scalar(k, v, *dtype)?),
                Param::Tensor(t) => {
                    let tensor = npy::read(Path::new(v))?;
                    let decl = def
                        .tensor(t)
                        .ok_or_else(|| format!("error: no declaration for `{t}`"))?;
                    if tensor.dtype != decl.dtype {
                        return Err(format!(
                            "error: input `{t}`: `{v}` holds {} but `{t}` is {}",
                            tensor.dtype, decl.dtype
                        ));
                    }
                    if tensor.shape.len() != decl.shape.len() {
                        return Err(format!(
                        "error: input `{t}`: `{v}` has {} dimensions ({}), but `{t}` has {} ({})",
                        tensor.shape.len(),
                        join(&tensor.shape),
                        decl.shape.len(),
                        decl.shape.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
                    ));
                    }
                    Arg::Tensor(tensor)
                }
            };
        if args.insert(k.to_string(), arg).is_some() {
            return Err(format!("error: input `{k}` is given twice"));
        }
    }
    Ok(args)
}

fn parse_scalar(name: &str, v: &str, dtype: DType) -> Result<Value, String> {
    let bad = || format!("error: input `{name}`: `{v}` is not a valid {dtype}");
    if dtype == DType::Bool {
        return match v {
            "true" | "1" => Ok(Value::Bool(true)),
            "false" | "0" => Ok(Value::Bool(false)),
            _ => Err(bad()),
        };
    }
    if dtype.is_float() {
        let x: f64 = v.parse().map_err(|_| bad())?;
        return Ok(Value::Float(if dtype == DType::F32 {
            f64::from(x as f32)
        } else {
            x
        }));
    }
    let x: i64 = v.parse().map_err(|_| bad())?;
    let fits = match dtype {
        DType::I8 => i8::try_from(x).is_ok(),
        DType::I16 => i16::try_from(x).is_ok(),
        DType::I32 => i32::try_from(x).is_ok(),
        DType::U8 => u8::try_from(x).is_ok(),
        DType::U16 => u16::try_from(x).is_ok(),
        DType::U32 => u32::try_from(x).is_ok(),
        DType::U64 => x >= 0,
        _ => true,
    };
    if !fits {
        return Err(format!(
            "error: input `{name}`: {x} does not fit in {dtype}"
        ));
    }
    Ok(Value::Int(x))
}

fn join(s: &[usize]) -> String {
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first `n` values, in the shortest form that reads back exactly.
pub fn preview(t: &Tensor, n: usize) -> String {
    let total = t.len();
    let mut vals: Vec<String> = (0..total.min(n))
        .map(|i| match (&t.data, t.dtype) {
            (Data::F(v), DType::F32) => format!("{:?}", v[i] as f32),
            (Data::F(v), _) => format!("{:?}", v[i]),
            (Data::I(v), DType::Bool) => (v[i] != 0).to_string(),
            (Data::I(v), DType::U64) => (v[i] as u64).to_string(),
            (Data::I(v), _) => v[i].to_string(),
        })
        .collect();
    if total > n {
        vals.push(format!("... ({total} values)"));
    }
    format!("[{}]", vals.join(", "))
}
