//! Passes and pipelines.
//!
//! A pass rewrites a kernel in place and must preserve its results (the VM
//! run before and after agree with the interpreter); every pass leaves a
//! kernel that passes [`crate::verify_block`]. A pipeline is data: a named
//! list of pass names, read from `pipelines/NAME.txt` (one pass per line,
//! `#` comments) or given on the command line.

use std::sync::{Mutex, PoisonError};

use rayon::prelude::*;

use crate::options::{Options, StepOptions};
use crate::{Block, ChildVerifier, Statement, StmtKind, Target};

/// A kernel transformation.
pub trait Pass {
    /// The name pipelines use.
    fn name(&self) -> &'static str;
    /// Rewrites `root` for `target`, every choice by the pass's cost model.
    fn run(&self, root: &mut Block, target: &Target) -> Result<(), String>;
    /// Rewrites `root`, taking the choices `cx` gives and recording in it
    /// the choices taken (`crate::options`); a pass without options runs
    /// as [`Pass::run`].
    fn run_with(&self, root: &mut Block, cx: &PassCx) -> Result<(), String> {
        self.run(root, cx.target)
    }
}

/// What a pass runs with: the target, the options given, and the record
/// of the options taken, which passes fill as they choose (steps are
/// rewritten in parallel, hence the lock).
#[derive(Debug)]
pub struct PassCx<'a> {
    pub target: &'a Target,
    pub given: &'a Options,
    taken: Mutex<Options>,
    indices: Mutex<StepIndices>,
}

/// For each step autotile saw, the free indices and ranges of every block
/// of its nest, the step's own first (the space a search draws tiles from),
/// then its children's, depth first (the loops an `order` permutes).
pub type StepIndices = std::collections::BTreeMap<String, Vec<Vec<(String, u64)>>>;

impl<'a> PassCx<'a> {
    pub fn new(target: &'a Target, given: &'a Options) -> PassCx<'a> {
        PassCx {
            target,
            given,
            taken: Mutex::new(Options::default()),
            indices: Mutex::new(StepIndices::new()),
        }
    }

    /// No options given: every choice is the cost models'.
    pub fn defaults(target: &'a Target) -> PassCx<'a> {
        static NONE: Options = Options {
            steps: std::collections::BTreeMap::new(),
        };
        PassCx::new(target, &NONE)
    }

    /// Records the choices `f` sets for step `name`.
    pub fn record(&self, name: &str, f: impl FnOnce(&mut StepOptions)) {
        self.taken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(name, f);
    }

    /// Records the free indices and ranges of step `name`'s nest.
    pub fn record_indices(&self, name: &str, indices: Vec<Vec<(String, u64)>>) {
        self.indices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_string(), indices);
    }

    /// The options taken so far.
    pub fn taken(self) -> Options {
        self.into_parts().0
    }

    /// The options taken and the steps' indices.
    pub fn into_parts(self) -> (Options, StepIndices) {
        (
            self.taken
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
            self.indices
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }
}

/// Rewrites the root's steps, each on its own and in parallel on the rayon
/// pool: `f` takes a step and gives the statements that replace it (the
/// step itself to keep it), checking its rewrites against the root with a
/// [`ChildVerifier`]. The steps are taken out of the root while `f` runs,
/// so a step's check never sees another step: rewriting them one after the
/// other would give the same kernel, in the same order.
pub(crate) fn rewrite_each_step(
    root: &mut Block,
    f: impl Fn(Statement, &ChildVerifier) -> Vec<Statement> + Sync,
) {
    let steps = std::mem::take(&mut root.stmts);
    let check = ChildVerifier::new(root);
    let out: Vec<Vec<Statement>> = steps.into_par_iter().map(|s| f(s, &check)).collect();
    root.stmts = out.into_iter().flatten().collect();
}

/// [`rewrite_each_step`] for passes that rewrite a step block in place:
/// `f` sees every step that is a block the runtime does not hand to the
/// matmul library.
pub(crate) fn rewrite_each_block(root: &mut Block, f: impl Fn(&mut Block, &ChildVerifier) + Sync) {
    rewrite_each_step(root, |mut step, check| {
        if let StmtKind::Block(b) = &mut step.kind {
            if !b.is_library() {
                f(b, check);
            }
        }
        vec![step]
    });
}

/// Replaces the block at `path` below `step` (statement numbers, the empty
/// path being the step) by what `new` makes of it, if anything, and keeps
/// the replacement only if the step still verifies against the root
/// (`check`). Gives whether it was kept.
pub(crate) fn replace_verified(
    step: &mut Block,
    path: &[usize],
    check: &ChildVerifier,
    new: impl FnOnce(&Block) -> Option<Block>,
) -> bool {
    let Some(new) = step.at(path).and_then(new) else {
        return false;
    };
    let Some(slot) = step.at_mut(path) else {
        return false;
    };
    let old = std::mem::replace(slot, new);
    if check.verify(step).is_err() {
        if let Some(slot) = step.at_mut(path) {
            *slot = old;
        }
        return false;
    }
    true
}

/// The pass called `name`.
pub fn pass_by_name(name: &str) -> Option<Box<dyn Pass>> {
    crate::passes::all().into_iter().find(|p| p.name() == name)
}

/// The names of every pass, for messages.
pub fn pass_names() -> Vec<&'static str> {
    crate::passes::all().iter().map(|p| p.name()).collect()
}

/// The names of the shipped pipelines.
pub const BUILTIN_PIPELINES: &[&str] = &["cpu", "cpu-serial"];

/// The pipelines shipped with tessera, by name.
pub fn builtin_pipeline(name: &str) -> Option<&'static str> {
    match name {
        "cpu" => Some(include_str!("../pipelines/cpu.txt")),
        "cpu-serial" => Some(include_str!("../pipelines/cpu-serial.txt")),
        _ => None,
    }
}

/// Parses a pipeline file: pass names, one per line, `#` comments.
pub fn parse_pipeline(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if pass_by_name(line).is_none() {
            return Err(format!(
                "line {}: unknown pass `{line}` (passes: {})",
                k + 1,
                pass_names().join(", ")
            ));
        }
        out.push(line.to_string());
    }
    Ok(out)
}

/// When a pipeline runs the verifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// After every pass, so a broken kernel names the pass that broke it.
    EachPass,
    /// Once, after the last pass.
    AtEnd,
    /// Not at all: the caller verifies the result itself (`runtime::build`
    /// verifies once, after the library marking between its two runs of
    /// the pipeline).
    ByCaller,
}

/// Runs passes in order, verifying after each; `after` sees the kernel
/// after every pass (for `--print-after-all`).
pub fn run_pipeline(
    root: &mut Block,
    passes: &[String],
    target: &Target,
    after: &mut dyn FnMut(&str, &Block),
) -> Result<(), String> {
    run_pipeline_verifying(root, passes, target, Verify::EachPass, after)
}

/// [`run_pipeline`], verifying as `verify` says.
pub fn run_pipeline_verifying(
    root: &mut Block,
    passes: &[String],
    target: &Target,
    verify: Verify,
    after: &mut dyn FnMut(&str, &Block),
) -> Result<(), String> {
    let cx = PassCx::defaults(target);
    run_pipeline_with(root, passes, &cx, verify, after)
}

/// [`run_pipeline_verifying`] with the options in `cx`, which records the
/// options the passes took.
pub fn run_pipeline_with(
    root: &mut Block,
    passes: &[String],
    cx: &PassCx,
    verify: Verify,
    after: &mut dyn FnMut(&str, &Block),
) -> Result<(), String> {
    let check = |root: &Block, what: String| {
        crate::verify_block(root).map_err(|errs| {
            format!(
                "{what} a kernel that does not verify:\n  {}",
                errs.join("\n  ")
            )
        })
    };
    for name in passes {
        let pass = pass_by_name(name).ok_or_else(|| {
            format!(
                "unknown pass `{name}` (passes: {})",
                pass_names().join(", ")
            )
        })?;
        pass.run_with(root, cx)
            .map_err(|e| format!("pass `{name}`: {e}"))?;
        if verify == Verify::EachPass {
            check(root, format!("pass `{name}` produced"))?;
        }
        after(name, root);
    }
    if verify == Verify::AtEnd && !passes.is_empty() {
        check(
            root,
            format!("the pipeline `{}` produced", passes.join(",")),
        )?;
    }
    Ok(())
}
