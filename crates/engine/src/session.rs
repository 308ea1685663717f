//! Running a def on bound arguments: compiled (the default) or on the
//! reference interpreter, with the interpreter fallback.
//!
//! A def lowering does not handle yet runs on the interpreter, with a
//! [`Note::NotCompiled`]. When compiling or a compiled step fails otherwise
//! (a program error lowering finds, or a bug), the interpreter runs the def
//! so that a program error is reported at its statement; if the interpreter
//! succeeds, the compiled path is at fault and the error is
//! [`Error::Internal`]. Notes go to the caller's list as they happen, so a
//! caller that prints them on failure too tells the whole story.

use std::path::PathBuf;

use interp::Tensor;
use ir::Def;
use runtime::StepProfile;

use crate::bind::Bound;
use crate::{compile, Error, Note, Source};

/// Where and how to run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// `None` for the interpreter, else compiled with these options.
    pub compiled: Option<compile::Options>,
    /// Profile the compiled steps.
    pub profile: bool,
    /// Write the generated C and the kernel it comes from to this
    /// directory, as `DEF.c` and `DEF.kernel`.
    pub emit_c: Option<PathBuf>,
    /// Where the interpreter reports the progress of long statements.
    pub progress: interp::Reporter,
}

/// What a run gave.
#[derive(Debug)]
pub struct Outputs {
    /// The def's outputs, in its order.
    pub tensors: Vec<(String, Tensor)>,
    /// With [`RunOptions::profile`], on a compiled run.
    pub profile: Option<Profile>,
}

/// A compiled run's profile.
#[derive(Clone, Debug)]
pub struct Profile {
    /// Each step's time, flops and bytes.
    pub steps: Vec<StepProfile>,
    /// The bytes of the memory plan's slots.
    pub slot_bytes: usize,
    /// The process's peak resident size, when the system reports it.
    pub peak_resident_bytes: Option<u64>,
}

/// Runs `def` of `source` on `bound`, noting into `notes`.
pub fn run(
    source: &Source,
    def: &Def,
    bound: &Bound,
    options: &RunOptions,
    notes: &mut Vec<Note>,
) -> Result<Outputs, Error> {
    if let Some(compile_options) = &options.compiled {
        match run_compiled(source, def, bound, compile_options, options, notes) {
            Ok(outputs) => return Ok(outputs),
            Err(Error::NotLowered { def, reason }) => {
                notes.push(Note::NotCompiled { def, reason });
            }
            // A program error the lowering finds (an `=` reading out of
            // bounds) or a bug: the interpreter tells which.
            Err(Error::Build(
                b @ (runtime::BuildError::Lower(_) | runtime::BuildError::Internal(_)),
            )) => return Err(rerun(source, def, bound, &options.progress, &b.to_string())),
            Err(Error::Compiled(message)) => {
                return Err(rerun(source, def, bound, &options.progress, &message))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Outputs {
        tensors: interpret(source, def, bound, &options.progress)?,
        profile: None,
    })
}

/// The error to report when the compiled path failed with `why`: the
/// program's, located by the interpreter, or else an internal error.
pub(crate) fn rerun(
    source: &Source,
    def: &Def,
    bound: &Bound,
    progress: &interp::Reporter,
    why: &str,
) -> Error {
    match interpret(source, def, bound, progress) {
        Err(e) => e,
        Ok(_) => Error::Internal(format!(
            "internal error: the compiled path failed where the interpreter succeeds: {why}\n  = help: this is a bug in tessera; `--interp` runs the interpreter"
        )),
    }
}

/// The compiled path: compile, write the generated code if asked, run once
/// (profiled if asked).
fn run_compiled(
    source: &Source,
    def: &Def,
    bound: &Bound,
    compile_options: &compile::Options,
    options: &RunOptions,
    notes: &mut Vec<Note>,
) -> Result<Outputs, Error> {
    if def.has_regions() {
        // Regions run around their compiled straight-line stages; code
        // and per-step profiles are the stages' own, not one program's.
        if options.emit_c.is_some() || options.profile {
            return Err(Error::Usage(format!(
                "`{}` has loop or branch regions: `--emit` and `--profile` take defs without them",
                def.name
            )));
        }
        let staged = crate::regions::compile(source.program(), def, &bound.sizes, compile_options)?;
        return Ok(Outputs {
            tensors: staged.run(&bound.args)?,
            profile: None,
        });
    }
    let compiled = compile::compile(source.program(), def, &bound.sizes, compile_options)?;
    if let Some(dir) = &options.emit_c {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Environment(format!("cannot create `{}`: {e}", dir.display())))?;
        for (ext, body) in [
            ("c", compiled.c_source().to_string()),
            ("kernel", compiled.kernel_text()),
        ] {
            let path = dir.join(format!("{}.{ext}", def.name));
            std::fs::write(&path, body).map_err(|e| {
                Error::Environment(format!("cannot write `{}`: {e}", path.display()))
            })?;
            notes.push(Note::Wrote(path));
        }
    }
    let mut state = compiled.prepare(&bound.args)?;
    let mut steps = Vec::new();
    compiled
        .run_state(&mut state, options.profile.then_some(&mut steps))
        .map_err(Error::Compiled)?;
    let profile = options.profile.then(|| Profile {
        steps,
        slot_bytes: compiled.slot_bytes(),
        peak_resident_bytes: peak_resident_bytes(),
    });
    Ok(Outputs {
        tensors: compiled.outputs(&state)?,
        profile,
    })
}

/// The process's peak resident size: Linux reports it as `VmHWM: N kB` in
/// `/proc/self/status`.
fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    kb.trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()
        .map(|k| k * 1024)
}

/// Runs `def` on the interpreter, reporting long statements to
/// `progress`; an error is located at its statement in the source when it
/// has one.
pub fn interpret(
    source: &Source,
    def: &Def,
    bound: &Bound,
    progress: &interp::Reporter,
) -> Result<Vec<(String, Tensor)>, Error> {
    interp::run_reporting(
        source.program(),
        &def.name,
        &bound.args,
        &bound.given,
        interp::Mode::Real,
        progress,
    )
    .map_err(|e| {
        // In a model, an error is the node's: the statement of the model
        // def that failed or that called the prelude def that did.
        if let Some(ports) = &source.model {
            let at = e
                .calls
                .first()
                .cloned()
                .or_else(|| e.stmt.map(|s| (e.def.clone(), s)));
            if let Some((_, s)) = at.filter(|(d, _)| d == onnx::MODEL_DEF) {
                if let Some(Some(node)) = ports.nodes.get(s) {
                    let inside = if e.def == onnx::MODEL_DEF {
                        String::new()
                    } else {
                        // A def not in the prelude is one the import generated.
                        let home = if onnx::PRELUDE.contains(&format!("def {}(", e.def)) {
                            "of the operator prelude"
                        } else {
                            "generated for the model"
                        };
                        format!(
                            "\n  = note: in `{}` {home}, which the node is imported as",
                            e.def
                        )
                    };
                    return Error::Run {
                        rendered: Some(format!("error: {node}: {}{inside}", e.message)),
                        def: e.def,
                        message: e.message,
                    };
                }
            }
        }
        let rendered = e
            .stmt
            .and_then(|s| source.checked.stmt_spans.get(&(e.def.clone(), s)).copied())
            .map(|span| {
                let d = tc::Diagnostic::error(e.message.clone(), span)
                    .with_label(format!("in this statement of `{}`", e.def));
                tc::render_diagnostics(&[d], &source.name, &source.text)
            });
        Error::Run {
            def: e.def,
            message: e.message,
            rendered,
        }
    })
}
