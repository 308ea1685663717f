//! Inputs declared constant: compiling a def whose constant inputs (a TC
//! def's weights the caller names, a model's weights) are known when it is
//! built, so that what depends on them alone — the packing of weights into
//! a kernel's layout above all — runs once, at load, not on every run.
//!
//! The def is rewritten into blocked layouts (`opt::layout`, with
//! [`Options::layout`]), then split at its load-time statements
//! (`opt::hoist`); the load def runs once on the constants (compiled, or on
//! the interpreter when lowering does not handle it), timed, and its
//! results join the constants as the arguments every run binds.
//!
//! Requires sizes binding every size symbol of the def. Guarantees: the
//! compiled def's runs on the other arguments and [`Built::fixed`] compute
//! what the def computes on all of them.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use interp::Arg;
use ir::{Def, Program};

use crate::bind::Sizes;
use crate::compile::{self, Compiled, Options};
use crate::Error;

/// A def compiled with its constants bound.
#[derive(Debug)]
pub struct Built {
    pub compiled: Compiled,
    /// The arguments of every run besides the caller's: the constants and
    /// what the load step computed from them.
    pub fixed: HashMap<String, Arg>,
    /// What the load step packed, and how long it took.
    pub packing: onnx::Packing,
}

/// A def split at its load-time statements: the program holding both
/// defs, the def every run compiles and the one run once at load.
#[derive(Debug)]
pub(crate) struct Split {
    pub program: Program,
    pub run: Def,
    pub load: Def,
    /// The sizes of the run def: the def's, and those of what the load
    /// def packs.
    pub run_sizes: Sizes,
}

/// `def` of `program` (in the layouts it compiles in) split at the
/// statements that depend on the tensors `names` alone; `None` when none
/// does.
pub(crate) fn split(
    program: &Program,
    def: &Def,
    sizes: &Sizes,
    names: &HashSet<String>,
) -> Result<Option<Split>, Error> {
    let load_name = fresh_def_name(program, &format!("{}_load", def.name));
    let Some(hoisted) = (!names.is_empty())
        .then(|| opt::hoist::hoist_constants(def, names, &load_name))
        .flatten()
    else {
        return Ok(None);
    };
    let mut split = program.clone();
    if let Some(slot) = split.defs.iter_mut().find(|d| d.name == def.name) {
        *slot = hoisted.run.clone();
    }
    split.defs.push(hoisted.load.clone());
    let mut run_sizes = sizes.clone();
    for (sym, value) in &hoisted.sizes {
        let v = value
            .eval_map(sizes)
            .map_err(|e| Error::Internal(format!("internal error: a packed size: {e:?}")))?;
        run_sizes.insert(sym.clone(), v);
    }
    Ok(Some(Split {
        program: split,
        run: hoisted.run,
        load: hoisted.load,
        run_sizes,
    }))
}

/// The names of the tensors among `constants`.
pub(crate) fn tensor_names(constants: &HashMap<String, Arg>) -> HashSet<String> {
    constants
        .iter()
        .filter(|(_, a)| matches!(a, Arg::Tensor(_)))
        .map(|(n, _)| n.clone())
        .collect()
}

/// Compiles `def` of `program` for `sizes` with `constants` (arguments by
/// parameter name) known now.
pub fn compile_constants(
    program: &Program,
    def: &Def,
    sizes: &Sizes,
    options: &Options,
    constants: HashMap<String, Arg>,
) -> Result<Built, Error> {
    let mut resolved = options.resolve()?;
    let cache = codegen::cache::KernelCache::open_default().map_err(Error::cache)?;
    let names = tensor_names(&constants);
    // Options `tessera tune` found for this kernel (with these constants),
    // when none are given.
    let tuned = if options.tuned && resolved.kernel_options.steps.is_empty() {
        crate::tune::tuner::cached(program, def, sizes, &names, &resolved.target, &cache)
    } else {
        None
    };
    if let Some((o, _)) = &tuned {
        resolved.kernel_options = o.clone();
    }
    let tuned_ns = tuned.map(|(_, ns)| ns);
    let blocked = options
        .layout
        .then(|| compile::layout(program, def, sizes, &resolved.target))
        .flatten();
    let program = blocked.as_ref().unwrap_or(program);
    let def = program.def(&def.name).unwrap_or(def);
    let Some(split) = split(program, def, sizes, &names)? else {
        let mut compiled = compile::compile_with(
            program,
            def,
            sizes,
            &resolved,
            &cache,
            options.output_layouts,
        )?;
        compiled.tuned_ns = tuned_ns;
        return Ok(Built {
            compiled,
            fixed: constants,
            packing: onnx::Packing::default(),
        });
    };
    let load_args: HashMap<String, Arg> = split
        .load
        .params
        .iter()
        .filter_map(|p| {
            constants
                .get(p.name())
                .map(|a| (p.name().to_string(), a.clone()))
        })
        .collect();
    let mut started = Instant::now();
    let packed =
        match compile::compile_with(&split.program, &split.load, sizes, &resolved, &cache, false) {
            Ok(load) => {
                // The packing is the load def's run; compiling it is the build's.
                started = Instant::now();
                let mut state = load.prepare(&load_args)?;
                load.run_state(&mut state, None).map_err(Error::Compiled)?;
                load.outputs(&state)?
            }
            Err(Error::NotLowered { .. }) => interp::run(
                &split.program,
                &split.load.name,
                &load_args,
                sizes,
                interp::Mode::Real,
            )
            .map_err(|e| Error::Run {
                def: e.def,
                message: e.message,
                rendered: None,
            })?,
            Err(e) => return Err(e),
        };
    let mut packing = onnx::Packing::default();
    for (_, t) in &packed {
        packing.add(t, 0.0);
    }
    packing.seconds = started.elapsed().as_secs_f64();

    let mut compiled = compile::compile_with(
        &split.program,
        &split.run,
        &split.run_sizes,
        &resolved,
        &cache,
        options.output_layouts,
    )?;
    let mut fixed = constants;
    fixed.extend(packed.into_iter().map(|(n, t)| (n, Arg::Tensor(t))));
    compiled.tuned_ns = tuned_ns;
    Ok(Built {
        compiled,
        fixed,
        packing,
    })
}

/// `base`, or `base` with a number, whichever no def of `program` has.
fn fresh_def_name(program: &Program, base: &str) -> String {
    let mut name = base.to_string();
    let mut k = 1;
    while program.def(&name).is_some() {
        name = format!("{base}{k}");
        k += 1;
    }
    name
}
