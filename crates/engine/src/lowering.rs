//! Lowering a def to kernel IR for concrete sizes and running pass
//! pipelines over it, for inspecting the kernels (`tessera lower`): the
//! kernel is verified after lowering and after the last pass (or after
//! every pass), and the caller sees it after each stage.
//!
//! Requires: every size symbol and integer scalar the def's shapes and
//! ranges use bound by the given sizes (else an [`Error::Usage`] naming
//! them). Guarantees: a kernel that does not verify is an
//! [`Error::Internal`], never returned.

use std::path::Path;

use ir::{Def, Program};
use kernel::Block;

use crate::bind::Sizes;
use crate::Error;

/// The passes a comma-separated list names (each must exist), or else the
/// passes of `pipeline`; none when neither is given.
pub fn passes(list: Option<&str>, pipeline: Option<&str>) -> Result<Vec<String>, Error> {
    if let Some(list) = list {
        let names: Vec<String> = list
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if let Some(bad) = names.iter().find(|n| kernel::pass_by_name(n).is_none()) {
            return Err(Error::Usage(format!(
                "unknown pass `{bad}`\n  = help: passes are {}",
                kernel::pass_names().join(", ")
            )));
        }
        return Ok(names);
    }
    match pipeline {
        Some(p) => crate::compile::pipeline_passes(p),
        None => Ok(Vec::new()),
    }
}

/// Lowers `def` of `program` for `given`, verifies it, and runs `passes`
/// for the target in the file `target` (this machine's when `None`; a
/// generic one when there are no passes, since lowering alone needs no
/// target), with the kernel options `options` (`kernel::options`).
/// `observe` sees the kernel after lowering (with no pass name) and after
/// each pass. Gives the kernel and the options the passes took.
#[allow(clippy::too_many_arguments)]
pub fn lower(
    program: &Program,
    def: &Def,
    given: &Sizes,
    passes: &[String],
    target: Option<&Path>,
    verify_passes: bool,
    options: &kernel::Options,
    observe: &mut dyn FnMut(Option<&str>, &Block),
) -> Result<(Block, kernel::Options), Error> {
    let sizes = interp::bind_sizes(def, &std::collections::HashMap::new(), given)
        .map_err(|e| Error::Sizes(e.message))?;
    let mut missing: Vec<String> = def
        .size_symbols()
        .into_iter()
        .filter(|s| !sizes.contains_key(s))
        .collect();
    for p in &def.params {
        if let ir::Param::Scalar { name, dtype } = p {
            if dtype.is_int() && !sizes.contains_key(name) && uses_in_sizes(def, name) {
                missing.push(name.clone());
            }
        }
    }
    if !missing.is_empty() {
        let list = missing
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Error::Usage(format!(
            "kernels are lowered for concrete sizes; bind {list} with `--size`"
        )));
    }
    let mut block = kernel::lower_def(program, &def.name, &sizes).map_err(|e| match e.kind {
        kernel::LowerErrorKind::NotLoweredYet => Error::NotLowered {
            def: def.name.clone(),
            reason: e.message,
        },
        kernel::LowerErrorKind::Invalid => Error::Build(runtime::BuildError::Lower(e)),
    })?;
    if let Err(problems) = kernel::verify_block(&block) {
        return Err(internal(
            "the lowered kernel does not verify",
            &problems.join("\n  "),
        ));
    }
    observe(None, &block);
    let target = match target {
        Some(f) => crate::target::load(Some(f))?,
        None if passes.is_empty() => kernel::Target::generic(),
        None => crate::target::load(None)?,
    };
    let verify = if verify_passes {
        kernel::Verify::EachPass
    } else {
        kernel::Verify::AtEnd
    };
    let cx = kernel::PassCx::new(&target, options);
    kernel::run_pipeline_with(&mut block, passes, &cx, verify, &mut |pass, b| {
        observe(Some(pass), b);
    })
    .map_err(|e| internal("a pass failed", &e))?;
    Ok((block, cx.taken()))
}

/// The kernel options in file `path` (`kernel::options`' text form).
pub fn read_options(path: &Path) -> Result<kernel::Options, Error> {
    let shown = path.display();
    let bytes = tensor::file::read_limited(path, tensor::file::TEXT_LIMIT)
        .map_err(|e| Error::Usage(format!("cannot read the options file `{shown}`: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::Usage(format!("the options file `{shown}` is not UTF-8 text")))?;
    kernel::parse_options(&text).map_err(|e| Error::Usage(format!("`{shown}`: {e}")))
}

fn internal(what: &str, detail: &str) -> Error {
    Error::Internal(format!(
        "internal error: {what}:\n  {detail}\n  = help: this is a bug in tessera; please report it with this file"
    ))
}

/// Whether integer scalar `s` appears in a shape or range of `def`.
fn uses_in_sizes(def: &Def, s: &str) -> bool {
    let in_shapes = def
        .tensors
        .iter()
        .any(|t| t.shape.iter().any(|d| d.symbols().contains(s)));
    let mut in_ranges = false;
    ir::walk_stmts(&def.stmts, &mut |st| {
        if let ir::Stmt::Comp(c) = st {
            in_ranges |= c
                .ranges
                .iter()
                .any(|r| r.lo.symbols().contains(s) || r.hi.symbols().contains(s));
        }
    });
    in_shapes || in_ranges
}
